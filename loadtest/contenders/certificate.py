"""A certificate for 127.0.0.1, made for one run: the brokers serve TLS with it, the load client trusts it.

Rules:

- The ``openssl`` command makes it (no Python package needed): self-signed P-256 for the
  address ``127.0.0.1`` (its subjectAltName), valid for a day, its key unencrypted beside it,
  in a temporary directory for as long as the ``with`` block of :func:`temporary` lasts.
- No ``openssl``, or one that fails, raises :class:`CertificateError` saying so.
"""

import contextlib
import dataclasses
import shutil
import subprocess
import tempfile

from loadtest.errors import LoadTestError

HOST = "127.0.0.1"
OPENSSL_TIMEOUT_S = 60.0


class CertificateError(LoadTestError):
    """No certificate could be made; the message says why and what to install."""


@dataclasses.dataclass(frozen=True)
class Certificate:
    """A certificate (``certfile``, PEM) and its key (``keyfile``, PEM) for ``HOST``."""

    certfile: str
    keyfile: str

    def broker_flags(self):
        """The broker's flags serving https and wss with it."""
        return ["--certfile", self.certfile, "--keyfile", self.keyfile]


def openssl_argv(openssl, certfile, keyfile, host=HOST):
    """The ``openssl req`` command that writes a self-signed certificate for the IP address ``host``."""
    return [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-days", "1", "-subj", "/CN=%s" % host, "-addext", "subjectAltName=IP:%s" % host,
            "-keyout", keyfile, "-out", certfile]


@contextlib.contextmanager
def temporary(host=HOST):
    """A new :class:`Certificate` for ``host``, removed when the block ends."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise CertificateError("the openssl command is needed to make a certificate for %s "
                               "(apt-get install openssl)" % host)
    with tempfile.TemporaryDirectory(prefix="loadtest-tls-") as directory:
        made = Certificate("%s/cert.pem" % directory, "%s/key.pem" % directory)
        try:
            done = subprocess.run(openssl_argv(openssl, made.certfile, made.keyfile, host), capture_output=True,
                                  text=True, timeout=OPENSSL_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise CertificateError("%s could not make a certificate: %s" % (openssl, error)) from None
        if done.returncode != 0:
            raise CertificateError("%s could not make a certificate (exit code %d): %s" % (
                openssl, done.returncode, done.stderr.strip()))
        yield made
