"""The deployment page's commands for three brokers behind haproxy with Redis, run as written.

Every line of the block named ``three-brokers`` in ``docs/deployment.rst`` is run with bash
from this checkout, with only what must differ on a test machine changed, by text
substitution: ``/etc/`` is a temporary directory, Redis, haproxy's public side and its side for
backends are on ephemeral loopback ports. What a test cannot do as root is done as systemd and
haproxy's package would do it:

* ``apt-get install`` must name what the block needs; ``cd`` must go where the unit runs the
  broker; the install line must be the quick start's (:mod:`test_readme_commands` runs
  nothing of it either: tox has installed this checkout);
* ``systemctl enable --now sockjs-broker@PORT ...`` starts one broker per instance as the
  shipped unit does, its ``Environment=`` and then its ``EnvironmentFile=`` files (those the
  block wrote), on an ephemeral port;
* ``systemctl restart haproxy`` runs haproxy by the config the block wrote, its ports and
  broker addresses rewritten (:func:`loadtest.contenders.haproxy.haproxy_config`), every broker UP.

Then the block's own ``curl`` lines must answer: a broker's health through haproxy, and a
publish through haproxy's side for backends that reaches clients on every broker.

The page's lines for nginx in place of haproxy (the block named ``nginx-in-front``) run the
same way: ``nginx -t && systemctl restart nginx`` runs nginx by the config they wrote
(:class:`deployment.Nginx`), which must name the three brokers in each upstream.
"""

import json
import os
import re
import shlex
import sys
import urllib.parse
import urllib.request

import pytest

import deployment
from loadtest.contenders import haproxy
import doc_blocks
from sockjs_clients import WebSocketClient

BLOCK = "three-brokers"
UNIT_DIRECTORY = "/opt/sockjs-broker"
NEEDED_PACKAGES = {"python3-venv", "haproxy", "redis-server", "openssl", "curl"}
# Where Debian's packages put what the block writes into.
ETC = ("default", "systemd/system", "haproxy")
# haproxy is in /usr/sbin, on root's PATH.
SBIN = {"PATH": os.environ.get("PATH", "") + ":/usr/sbin:/sbin"}


def commands():
    return doc_blocks.command_lines(doc_blocks.named_block(doc_blocks.page("deployment"), BLOCK))


def unit_setting(key):
    (value,) = [line.split("=", 1)[1] for line in deployment.unit_lines() if line.split("=", 1)[0] == key]
    return value


def environment_files(root, instance):
    """The variables the unit's ``EnvironmentFile=`` lines set for ``instance``, from the files under ``root``."""
    variables = {}
    for line in deployment.unit_lines():
        key, _, path = line.partition("=")
        if key != "EnvironmentFile":
            continue
        path = root + path.lstrip("-").replace("%i", instance)
        if not os.path.exists(path):
            assert line.split("=", 1)[1].startswith("-"), "%s is missing" % path
            continue
        with open(path) as f:
            for assignment in f.read().splitlines():
                if assignment.strip() and not assignment.lstrip().startswith("#"):
                    name, _, value = assignment.partition("=")
                    variables[name.strip()] = value.strip()
    return variables


def server_ports(config_path):
    """``{backend: [port, ...]}`` of the ``server`` lines of an haproxy config."""
    ports, backend = {}, None
    with open(config_path) as f:
        for line in f:
            words = line.split()
            if line[:1].strip() and words:
                backend = words[1] if words[0] == "backend" else None
            elif backend and words[:1] == ["server"]:
                ports.setdefault(backend, []).append(int(words[2].rsplit(":", 1)[1]))
    return ports


def quick_start_install():
    """The README's quick start, up to running the broker."""
    line = doc_blocks.block_holding(doc_blocks.README, "pip install -q -e .")
    return line.rsplit(" && ", 1)[0]


@pytest.fixture
def haproxy_installed():
    deployment.require_haproxy()


def port_of(url):
    return urllib.parse.urlsplit(url).port


def connections(broker):
    with urllib.request.urlopen(broker.url.rsplit("/", 1)[0] + "/stats", timeout=5) as response:
        return json.load(response)["connections_total"]


def test_three_brokers_behind_haproxy_with_redis_as_the_page_says(haproxy_installed, start_redis, start_server,
                                                                   tmp_path):
    root = str(tmp_path / "root")
    for directory in ETC:
        os.makedirs(os.path.join(root, "etc", directory))
    redis = start_redis()
    places = {"/etc/": root + "/etc/", "127.0.0.1:6379": "127.0.0.1:%d" % redis.port}
    brokers, instances, outputs, clients = [], [], [], []
    proxy = None

    def run(command):
        outputs.append(doc_blocks.run_shell(doc_blocks.substituted(command, places), env=SBIN))

    try:
        for line in commands():
            if line.startswith(". "):  # a file sourced for what follows in the same shell
                run(line)
                continue
            for command in line.split(" && "):
                words = shlex.split(command)
                if words[:2] == ["apt-get", "install"]:
                    missing = NEEDED_PACKAGES - set(words)
                    assert not missing, "%s does not install %s" % (command, missing)
                elif words[0] == "cd":
                    assert words[1:] == [UNIT_DIRECTORY] == [unit_setting("WorkingDirectory")], command
                elif words[:3] == ["python3", "-m", "venv"]:
                    assert line == quick_start_install(), "the install line differs from the quick start's"
                    break
                elif words[:2] == ["systemctl", "daemon-reload"]:
                    installed = os.path.join(root, "etc", "systemd", "system", "sockjs-broker@.service")
                    with open(installed) as f, open(os.path.join(deployment.DEPLOY, "sockjs-broker@.service")) as g:
                        assert f.read() == g.read(), "the unit was not installed as shipped"
                elif words[:3] == ["systemctl", "enable", "--now"]:
                    for unit in words[3:]:
                        instance = re.fullmatch(r"sockjs-broker@(\d+)", unit).group(1)
                        argv, environment = deployment.broker_command(sys.executable, 0)
                        environment.update(environment_files(root, instance))
                        brokers.append(start_server(*argv, env=environment))
                        instances.append(int(instance))
                elif words[:3] == ["systemctl", "restart", "haproxy"]:
                    config = os.path.join(root, "etc", "haproxy", "haproxy.cfg")
                    assert server_ports(config) == {"brokers": instances, "sessions": instances}, \
                        "haproxy's backends do not name the brokers started: %s" % server_ports(config)
                    (tmp_path / "haproxy").mkdir()
                    proxy = haproxy.HAProxy([port_of(b.url) for b in brokers], str(tmp_path / "haproxy"),
                                               source=config)
                    proxy.wait_ready()
                    places["http://127.0.0.1/"] = proxy.origin + "/"
                    places["http://127.0.0.1:8000/"] = proxy.publish_origin + "/"
                    clients = [WebSocketClient(proxy.origin + "/broadcast").open() for _ in instances]
                else:
                    run(command)
        assert proxy is not None and len(brokers) == 3, "the block starts three brokers behind haproxy"
        assert len([b for b in brokers if connections(b)]) >= 2, "the clients all went to one broker"
        health, published = outputs[-2:]
        assert json.loads(health) == {"status": "ok"}, health
        assert "recipients" in json.loads(published), published
        curl = shlex.split(commands()[-1].split(" && ", 1)[1])
        message = curl[curl.index("-d") + 1]
        for client in clients:
            try:
                received = client.receive()
            except Exception as error:  # a timeout: the brokers do not share the room
                raise AssertionError("a client did not receive %r: %r" % (message, error)) from None
            assert received == [message]
    finally:
        for client in clients:
            client.close()
        if proxy is not None:
            proxy.stop()


def upstream_ports(config_path):
    """``{upstream: [port, ...]}`` of the ``server`` lines of an nginx config."""
    ports, upstream = {}, None
    with open(config_path) as f:
        for line in f:
            words = line.split()
            if words[:1] == ["upstream"]:
                upstream = words[1]
            elif upstream and words[:1] == ["server"]:
                ports.setdefault(upstream, []).append(int(words[1].rsplit(":", 1)[1]))
            elif words == ["}"]:
                upstream = None
    return ports


def test_nginx_in_front_as_the_page_says(start_server, tmp_path):
    deployment.require_nginx()
    root = str(tmp_path / "root")
    os.makedirs(os.path.join(root, "etc", "nginx"))
    instances = [8081, 8082, 8083]
    argv, environment = deployment.broker_command(sys.executable, 0)
    brokers = [start_server(*argv, env=environment) for _ in instances]
    proxy = None
    try:
        for line in doc_blocks.command_lines(doc_blocks.named_block(doc_blocks.page("deployment"), "nginx-in-front")):
            words = shlex.split(line)
            if words[:2] == ["apt-get", "install"]:
                assert "nginx" in words, line
            elif words[:2] == ["nginx", "-t"]:
                assert line == "nginx -t && systemctl restart nginx", line
                config = os.path.join(root, "etc", "nginx", "nginx.conf")
                assert upstream_ports(config) == {"brokers": instances, "sessions": instances}, \
                    "nginx's upstreams do not name the brokers started: %s" % upstream_ports(config)
                (tmp_path / "nginx").mkdir()
                proxy = deployment.Nginx([port_of(b.url) for b in brokers], str(tmp_path / "nginx"), source=config)
                proxy.wait_ready()
            else:
                doc_blocks.run_shell(doc_blocks.substituted(line, {"/etc/": root + "/etc/"}))
        assert proxy is not None, "the block starts no nginx"
        with urllib.request.urlopen(proxy.origin + "/healthz", timeout=10) as response:
            assert json.load(response) == {"status": "ok"}
    finally:
        if proxy is not None:
            proxy.stop()
