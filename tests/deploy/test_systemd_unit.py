"""deploy/sockjs-broker@.service: every setting from the environment, nothing on the command line
to override the files, and a unit systemd itself accepts."""

import os
import shutil
import subprocess
import sys

import pytest

from broker import config
from broker.core.limits import default_max_connections
from checkout import ROOT
from deployment import DEPLOY, broker_command, unit_lines

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
# Linux's default fs.nr_open: the most open files the kernel lets a process have.
NR_OPEN = 1048576


def test_the_command_line_sets_nothing_the_files_could_not():
    argv, _ = broker_command(sys.executable, 8081)
    assert argv == [sys.executable, "-m", "broker"]


def test_the_units_defaults_are_broker_settings_and_the_files_come_after_them():
    _, environment = broker_command(sys.executable, 8081)
    variables = {flag.variable("BROKER_") for flag in config.FLAGS}
    assert set(environment) <= variables, set(environment) - variables
    settings = config.parse_args([], environ=environment)
    assert (settings.host, settings.port) == ("127.0.0.1", 8081)
    assert settings.client_address_header == "X-Forwarded-For"
    assert settings.max_connections_per_ip > 0, "the forwarded address would count for nothing"
    keys = [line.split("=", 1)[0] for line in unit_lines()]
    last_default = max(i for i, key in enumerate(keys) if key == "Environment")
    files = [line.split("=", 1)[1] for line in unit_lines() if line.startswith("EnvironmentFile=")]
    assert files == ["-/etc/default/sockjs-broker", "-/etc/default/sockjs-broker-%i"]
    assert keys.index("EnvironmentFile") > last_default, "a default would override the files"


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
def test_systemd_accepts_the_unit(tmp_path):
    """The unit as installed, with its paths pointing at this checkout and interpreter."""
    with open(os.path.join(DEPLOY, "sockjs-broker@.service")) as f:
        unit = f.read()
    unit = unit.replace("/opt/sockjs-broker/.venv/bin/python", sys.executable).replace("/opt/sockjs-broker", ROOT)
    (tmp_path / "sockjs-broker@.service").write_text(unit)
    done = subprocess.run([SYSTEMD_ANALYZE, "verify", str(tmp_path / "sockjs-broker@8081.service")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sockjs-broker@" not in done.stderr, done.stderr


def test_a_broker_drained_over_http_is_brought_back_and_a_configuration_error_is_not():
    """A drain by POST /admin/drain ends in exit 0, which no systemctl stop asked for: the unit
    restarts it (Restart=always; systemd never restarts what systemctl stopped). A bad setting
    exits 2 (argparse's error), and would fail the same way each time: not retried."""
    settings = dict(line.split("=", 1) for line in unit_lines() if line.split("=", 1)[0].startswith("Restart"))
    assert settings["Restart"] == "always"
    assert settings["RestartPreventExitStatus"].split() == ["2"]
    assert float(settings["RestartSec"]) >= 1


def test_a_bad_setting_in_the_units_files_exits_with_the_status_the_unit_does_not_retry():
    argv, environment = broker_command(sys.executable, 8081)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env=dict(os.environ, **environment, BROKER_LOG_LEVEL="verbose"))
    assert done.returncode == 2, done.stderr
    assert "argument --log-level" in done.stderr and "Traceback" not in done.stderr


def test_connections_are_bounded_by_the_cpu_and_the_file_limit_is_only_a_ceiling():
    """The unit bounds each broker's connections by what its CPU serves (the sizing guide's
    19,000), and its LimitNOFILE is a production ceiling, not a test machine's 20,000, above that
    bound: no client is refused for want of descriptors first. The unit's comment and the
    deployment page give both, and what the broker would allow from the file limit alone."""
    settings = dict(line.split("=", 1) for line in unit_lines())
    limit = int(settings["LimitNOFILE"])
    environment = dict(pair.split("=", 1) for line in unit_lines() if line.startswith("Environment=")
                       for pair in line.split("=", 1)[1].split())
    bound = int(environment["BROKER_MAX_CONNECTIONS"])
    assert 100000 <= limit <= NR_OPEN, limit
    assert bound <= default_max_connections(limit), (bound, limit)
    allowed = default_max_connections(limit)
    with open(os.path.join(DEPLOY, "sockjs-broker@.service")) as f:
        assert str(allowed) in f.read()
    with open(os.path.join(ROOT, "docs", "deployment.rst")) as f:
        page = f.read()
    assert "``BROKER_MAX_CONNECTIONS=%d``" % bound in page and "``LimitNOFILE=%d``" % limit in page
    assert "{:,}".format(allowed) in page
    with open(os.path.join(ROOT, "docs", "sizing.rst")) as f:
        assert "{:,}".format(bound) in f.read()
