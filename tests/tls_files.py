"""A certificate authority and a certificate it signed for the broker, as files, for TLS tests."""

import base64
import hashlib
import ssl

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization


class TLSFiles:
    """A certificate authority, and a certificate for 127.0.0.1 and localhost it signed, as files."""

    def __init__(self, directory):
        self.authority = trustme.CA()
        issued = self.authority.issue_cert("127.0.0.1", "localhost")
        self.certfile = str(directory / "broker.crt")
        self.keyfile = str(directory / "broker.key")
        self.combined = str(directory / "broker.pem")
        with open(self.certfile, "wb") as f:
            for blob in issued.cert_chain_pems:
                f.write(blob.bytes())
        issued.private_key_pem.write_to_path(self.keyfile)
        issued.private_key_and_cert_chain_pem.write_to_path(self.combined)
        self.issued = issued

    def client_context(self):
        context = ssl.create_default_context()
        self.authority.configure_trust(context)
        return context

    def spki_sha256(self):
        """The base64 SHA-256 of the certificate's public key: what Chromium's
        ``--ignore-certificate-errors-spki-list`` trusts, and nothing else."""
        certificate = x509.load_pem_x509_certificate(self.issued.cert_chain_pems[0].bytes())
        key = certificate.public_key().public_bytes(serialization.Encoding.DER,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo)
        return base64.b64encode(hashlib.sha256(key).digest()).decode()
