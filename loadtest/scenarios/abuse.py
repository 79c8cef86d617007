"""``python -m loadtest abuse``: three attacks on the broker, run with its production defaults,
measured from outside (BENCHMARKS.rst, "Hostile clients"; docs/load-testing.rst, "Hostile clients").

Rules:

- ``flood``: canaries time round trips in three equal steps: quiet, under one flooder, under
  one that reconnects each time the broker cuts it.
- ``stalled``: websockets that never read; a backend publishes until the broker cut them all.
  Cost: peak RSS less RSS before, against ``stalled x --max-buffer + BOUND_SLACK_MB``.
- ``burst``: the broker runs with ``--max-accept-rate``; canaries time round trips quiet, then
  during ``--burst`` attempts, judged by :func:`loadtest.method.admission.verdict`.
- An attacker is its own process on the client CPU at the lowest priority: it stands for
  another machine. Each broker is a fresh process; every loop ends by a deadline."""

import asyncio
import dataclasses
import json
import multiprocessing
import os
import secrets
import socket
import time
from typing import Tuple

from loadtest import affinity, arguments, procstat
from loadtest.client import connection_burst, server_probe, sweep
from loadtest.client.publisher import Publisher, read_head
from loadtest.client.server_probe import ServerProbe
from loadtest.contenders import placement, registry
from loadtest.framing import endpoints, websocket_frames
from loadtest.method import admission
from loadtest.results import console

ATTACKS = ("flood", "stalled", "burst")
BROKERS = ("broker-cpython", "broker-pypy")
SAMPLE_S = 0.25
PUBLISHERS = 16
STALLED_RCVBUF = 4096
BOUND_SLACK_MB = 50
FLOOD_FRAMES_PER_WRITE = 100
FLOOD_STEPS = 3
ATTACKER_GRACE_S = 30
STEP_PAUSE_S = 1.0
# A broker under a burst answers for seconds after the last attempt; the step must cover it.
BURST_TAIL_S = 5.0
# The kernel's counters a burst reads over its attack (machine-wide: anyone's connections count).
KERNEL_COUNTERS = {"listen_overflows": "ListenOverflows", "syn_retransmits": "TCPSynRetrans"}


SUMMARY = "three attacks on the broker, and what they cost the other clients"
DESCRIPTION = ("Attack each broker (production defaults plus a publish token) and measure what the "
        "attack costs the others: a flooding chat client against canaries' round trips, clients "
        "that never read against the broker's memory and its write timeout, and a burst of new "
        "connections against its --max-accept-rate and the canaries' round trips.")


def add_arguments(parser):
    arguments.option(parser, "--servers", type=arguments.names_from("server", BROKERS), default=list(BROKERS),
                     help="comma-separated, from %s (default: both)" % ",".join(BROKERS))
    arguments.option(parser, "--attacks", type=arguments.names_from("attack", ATTACKS), default=list(ATTACKS),
                     help="comma-separated, from %s (default: all)" % ",".join(ATTACKS))
    arguments.option(parser, "--canaries", type=arguments.positive_int, default=50,
                     help="flood, burst: well-behaved clients timing round trips")
    arguments.option(parser, "--canary-rate", type=arguments.positive_float, default=100.0,
                     help="flood, burst: total msgs/s the canaries send")
    arguments.option(parser, "--seconds", type=arguments.positive_float, default=10.0,
                     help="flood: seconds of each step, quiet and flooded")
    arguments.option(parser, "--stalled", type=arguments.positive_int, default=1000,
                     help="stalled: clients that never read")
    arguments.option(parser, "--message-bytes", type=arguments.positive_int, default=20,
                     help="stalled: size of each published message")
    arguments.option(parser, "--publish-rate", type=arguments.positive_float, default=2000.0,
                     help="stalled: messages published per second")
    arguments.option(parser, "--burst", type=arguments.positive_int, default=5000,
                     help="burst: connection attempts, each a new connection opening a session")
    arguments.option(parser, "--burst-seconds", type=arguments.positive_float, default=1.0,
                     help="burst: seconds the attempts are spread over")
    arguments.option(parser, "--accept-rate", type=arguments.positive_float, default=500.0,
                     help="burst: the broker's --max-accept-rate for this attack (new sessions a second)")
    arguments.option(parser, "--source-addresses", type=arguments.parse_source_addresses, default=(),
                     help="burst: local addresses to spread the attempts over, e.g. 127.0.0.2-127.0.0.9 (one "
                     "address has about 28,000 ports)")
    arguments.option(parser, "--broker-flags", type=arguments.broker_flags, default="",
                     help="more broker flags for every attack, one string (e.g. \"--max-buffer 256KiB "
                     "--write-timeout 10\")")
    server_cpu, client_cpu = affinity.default_cpus()
    arguments.option(parser, "--server-cpu", type=int, default=server_cpu,
                     help="CPU each broker runs on (default %d, the first this process may use)" % server_cpu)
    arguments.option(parser, "--client-cpu", type=int, default=client_cpu,
                     help="CPU the attack runs on (default %d, the second this process may use)" % client_cpu)


@dataclasses.dataclass(frozen=True)
class AbuseSettings:
    """The ``attacks`` on each of ``servers`` (each broker with ``broker_flags`` more), where (the
    :class:`Placement`: one CPU for the broker, one for the attack and the canaries), and each attack's own:
    ``canaries`` sending ``canary_rate`` messages a second; the flood's steps of ``seconds``; ``stalled`` clients
    sent ``message_bytes`` messages at ``publish_rate``; a ``burst`` of attempts over ``burst_seconds`` from
    ``source_addresses`` against ``accept_rate``."""

    servers: Tuple[str, ...]
    attacks: Tuple[str, ...]
    broker_flags: Tuple[str, ...]
    placement: placement.Placement
    canaries: int
    canary_rate: float
    seconds: float
    stalled: int
    message_bytes: int
    publish_rate: float
    burst: int
    burst_seconds: float
    accept_rate: float
    source_addresses: Tuple[str, ...]

    @classmethod
    def of(cls, args):
        """The settings of the command's parsed arguments."""
        return cls(tuple(args.servers), tuple(args.attacks), tuple(args.broker_flags.split()),
                   arguments.one_cpu_each(args), args.canaries, args.canary_rate, args.seconds, args.stalled,
                   args.message_bytes, args.publish_rate, args.burst, args.burst_seconds, args.accept_rate,
                   tuple(args.source_addresses))


class Broker:
    """A launched broker: its server process, publish token and settings from ``/stats``."""

    def __init__(self, server, token):
        self.server = server
        self.token = token
        self.target = endpoints.target(server.url)
        self.probe = ServerProbe([server.pid])

    def stats(self):
        stats = server_probe.stats_now(self.server.url)
        if stats is None:
            raise RuntimeError("the broker at %s answered no /stats" % self.server.url)
        return stats

    def rss_mb(self):
        return self.probe.rss_kb() / 1024


# -- flood -------------------------------------------------------------------------------------------

def flood(url, seconds, cpu, reconnect, results):
    """The attacker (its own process): chat frames as fast as the socket takes them, reconnecting if told to."""
    affinity.pin(0, cpu)
    os.nice(19)  # it stands for another machine: the canaries, on its CPU, come first
    service = endpoints.target(url)
    burst = websocket_frames.client_frame(b'["flood"]') * FLOOD_FRAMES_PER_WRITE
    deadline = time.monotonic() + seconds
    connections = cut = written = 0
    while time.monotonic() < deadline and (reconnect or not connections):
        try:
            sock = open_websocket(service.host, service.port, endpoints.endpoint_path(url, endpoints.WEBSOCKET))
        except OSError:
            time.sleep(0.01)
            continue
        connections += 1
        try:
            while time.monotonic() < deadline:
                sock.sendall(burst)
                written += len(burst)
        except OSError:
            cut += 1
        finally:
            sock.close()
    results.put({"connections": connections, "cut": cut, "written_mb": round(written / 1e6, 1)})


def open_websocket(host, port, path, rcvbuf=None):
    """A blocking socket with a SockJS websocket session open on it (its ``o`` frame read)."""
    sock = socket.socket()
    sock.settimeout(10)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    try:
        sock.connect((host, port))
        key = websocket_frames.new_key()
        sock.sendall(websocket_frames.handshake_request("%s:%d" % (host, port), path, key))
        head, data = read_head(sock)
        websocket_frames.check_handshake_response(head, key)
        while not data[2:3] == b"o":
            chunk = sock.recv(4096)
            if not chunk:
                raise ConnectionError("closed before the open frame")
            data += chunk
    except BaseException:
        sock.close()
        raise
    return sock


def run_flood(broker, label, settings):
    """Canary round trips in three equal steps: quiet, under one flooder, under one that reconnects."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    attackers = []
    steps = []

    def on_step(step):
        steps.append(step)
        if len(attackers) < FLOOD_STEPS - 1:
            if attackers:
                attackers[-1].join(ATTACKER_GRACE_S)
            reconnect = len(attackers) == 1
            process = context.Process(target=flood, args=(broker.server.url, settings.seconds + 1,
                                                          settings.placement.client_cpus[0], reconnect, results))
            process.start()
            attackers.append(process)

    before = broker.stats()
    _canaries(broker, label, settings, FLOOD_STEPS, settings.seconds, on_step)
    outcomes = []
    for process in attackers:
        process.join(ATTACKER_GRACE_S)
        outcomes.append(results.get(timeout=5) if process.exitcode == 0 else {"failed": process.exitcode})
    after = broker.stats()
    steps += [None] * (FLOOD_STEPS - len(steps))
    outcomes += [None] * (FLOOD_STEPS - 1 - len(outcomes))
    return {"quiet": _rtt(steps[0]), "one_flooder": dict(_rtt(steps[1]) or {}, attacker=outcomes[0]),
            "reconnecting_flooder": dict(_rtt(steps[2]) or {}, attacker=outcomes[1]),
            "rate_limited_disconnects": after["rate_limited_disconnects"] - before["rate_limited_disconnects"]}


def _canaries(broker, label, settings, steps, seconds, on_step):
    """The canaries' sweep of ``steps`` steps of ``seconds`` each, every one to ``on_step``."""
    sweep.run_sweep(sweep.Options([broker.server.url], levels=(settings.canaries,),
                                  rates=(settings.canary_rate,) * steps, duration=seconds, pause=STEP_PAUSE_S,
                                  server=label, server_pids=[broker.server.pid],
                                  client_cpus=settings.placement.client_cpus, stop_at_overload=False), on_step=on_step)


def _rtt(step):
    if step is None:
        return None
    return {"p50_ms": step.rtt_ms.get("p50"), "p99_ms": step.rtt_ms.get("p99"), "max_ms": step.rtt_ms.get("max"),
            "lost": step.lost, "dropped": step.dropped, "sent": step.sent,
            "server_cpu": None if step.server_cpu is None else round(step.server_cpu, 2),
            "client_bound": step.client_bound}


# -- stalled -----------------------------------------------------------------------------------------

def run_stalled(broker, settings):
    """Memory and cut times of ``settings.stalled`` clients that never read."""
    stats = broker.stats()
    max_buffer, write_timeout = stats["slow_consumers"]["max_buffer"], stats["slow_consumers"]["write_timeout_s"]
    cut_before = stats["slow_consumer_disconnects"]
    base_mb = broker.rss_mb()
    path = endpoints.endpoint_path(broker.server.url, endpoints.WEBSOCKET)
    stalled = [open_websocket(broker.target.host, broker.target.port, path, rcvbuf=STALLED_RCVBUF)
               for _ in range(settings.stalled)]
    connected_mb = broker.rss_mb()
    message = b"x" * settings.message_bytes
    publisher = Publisher(broker.target.host, broker.target.port, broker.token, PUBLISHERS)
    started = time.monotonic()
    deadline = started + write_timeout + 30
    published = 0
    next_sample = started
    peak_mb = connected_mb
    samples = []  # (seconds since publishing began, clients behind or cut so far, clients cut so far)
    try:
        while time.monotonic() < deadline:
            now = time.monotonic()
            due = int((now - started) * settings.publish_rate) + 1
            if published < due:
                published += publisher.publish([message] * min(PUBLISHERS, due - published))
            if now >= next_sample:
                next_sample = now + SAMPLE_S
                peak_mb = max(peak_mb, broker.rss_mb())
                stats = broker.stats()
                cut = stats["slow_consumer_disconnects"] - cut_before
                samples.append((now - started, stats["slow_consumers"]["behind"] + cut, cut))
                if cut >= settings.stalled:
                    break
            time.sleep(0.001)
    finally:
        publisher.close()
        for sock in stalled:
            sock.close()
    elapsed = time.monotonic() - started
    delays = cut_delays(samples)
    return {"clients": settings.stalled, "message_bytes": settings.message_bytes, "published": published,
            "publish_rate": round(published / elapsed, 1), "max_buffer": max_buffer, "write_timeout_s": write_timeout,
            "rss_before_mb": round(base_mb, 1), "rss_connected_mb": round(connected_mb, 1),
            "rss_peak_mb": round(peak_mb, 1), "cost_mb": round(peak_mb - base_mb, 1),
            "bound_mb": round(settings.stalled * max_buffer / 2 ** 20 + BOUND_SLACK_MB, 1),
            "all_behind_s": next((round(t, 2) for t, fell, _ in samples if fell >= settings.stalled), None),
            "cut": samples[-1][2] if samples else 0,
            "cut_after_behind_s": {"median": _median(delays), "max": max(delays) if delays else None}}


def cut_delays(samples):
    """Seconds from the k-th client falling behind to the k-th cut (``samples``: (time, fallen behind so
    far, cut so far)): a client that never reads never catches up, so the k-th behind is the k-th cut."""
    delays = []
    for k in range(1, (samples[-1][2] if samples else 0) + 1):
        fell = next(t for t, fallen, _ in samples if fallen >= k)
        cut = next(t for t, _, cuts in samples if cuts >= k)
        delays.append(round(cut - fell, 2))
    return delays


def _median(values):
    return sorted(values)[len(values) // 2] if values else None


# -- burst -------------------------------------------------------------------------------------------

def burst_attacker(plan, cpu, orders, wait_s, results):
    """The attacker (its own process): the burst ``plan`` at the ``time.monotonic()`` on ``orders`` (None: never)."""
    affinity.pin(0, cpu)
    os.nice(19)  # as the flooder: the canaries come first
    start_at = orders.get(timeout=wait_s)
    if start_at is not None:
        results.put(asyncio.run(connection_burst.burst(plan, start_at)))


def run_burst(broker, label, settings):
    """Canary round trips quiet, then during a burst of ``settings.burst`` connection attempts, counted."""
    context = multiprocessing.get_context("spawn")
    orders, results = context.Queue(), context.Queue()
    step_s = settings.burst_seconds + BURST_TAIL_S
    plan = connection_burst.Burst(broker.server.url, settings.burst, settings.burst_seconds, settings.source_addresses)
    attacker = context.Process(target=burst_attacker, args=(
        plan, settings.placement.client_cpus[0], orders, ATTACKER_GRACE_S + 2 * (step_s + STEP_PAUSE_S), results))
    attacker.start()
    steps = []

    def on_step(step):
        steps.append(step)
        if len(steps) == 1:
            orders.put(time.monotonic() + STEP_PAUSE_S)  # the burst begins with the next step

    before, tcp_before = broker.stats(), procstat.tcp_counters()
    try:
        _canaries(broker, label, settings, 2, step_s, on_step)
    finally:
        if not steps:
            orders.put(None)
        attacker.join(settings.burst_seconds + connection_burst.ANSWER_TIMEOUT_S + ATTACKER_GRACE_S)
        if attacker.is_alive():
            attacker.terminate()
            attacker.join()
    after, tcp_after = broker.stats(), procstat.tcp_counters()
    burst = results.get(timeout=5) if attacker.exitcode == 0 and steps else None
    quiet, during = (_rtt(step) for step in steps + [None] * (2 - len(steps)))
    figures = {"accept_rate": settings.accept_rate, "attempts": settings.burst,
               "burst_seconds": settings.burst_seconds, "step_s": step_s}
    if burst is None:
        figures["attacker"] = {"failed": attacker.exitcode}
    else:
        figures.update(burst, admitted_bound=admission.admitted_bound(settings.accept_rate, burst["window_s"]))
    figures.update(broker_refused=after["refused"]["accept_rate"] - before["refused"]["accept_rate"],
                   kernel={name: tcp_after[counter] - tcp_before[counter] for name, counter in KERNEL_COUNTERS.items()
                           if counter in tcp_before and counter in tcp_after},
                   quiet=quiet, during_burst=during, loop_sample_ms=round(1000 / settings.canary_rate, 3),
                   p99_bound_ms=admission.p99_bound_ms(quiet["p99_ms"]) if quiet and quiet["p99_ms"] else None,
                   verdict={"passed": False})
    if burst is not None:
        figures["verdict"] = admission.verdict(burst, settings.accept_rate, quiet, during, step_s)
    return figures

# -- the command -------------------------------------------------------------------------------------

def check_arguments(parser, args):
    """Refuse (exit 2) more burst canaries than open at once under ``--accept-rate``, and CPUs not there."""
    if "burst" in args.attacks and args.canaries > max(1.0, args.accept_rate):
        parser.error("--canaries %d: the burst's canaries open their sessions under --accept-rate %g, so at "
                     "most that many" % (args.canaries, args.accept_rate))
    refused = arguments.one_cpu_each(args).refusal(affinity.allowed_cpus())
    if refused is not None:
        parser.error(refused)


def run(parser, args):
    check_arguments(parser, args)
    settings = AbuseSettings.of(args)
    status = console.StatusLine()
    placement.prepare_client(settings.placement.client_cpus[0])
    results = []
    for name in settings.servers:
        token = secrets.token_hex(16)
        flags = ["--publish-token", token] + list(settings.broker_flags)
        try:
            contender = registry.resolve(name, broker_flags=flags)
        except registry.Unavailable as reason:
            status.message("skipped %s" % reason)
            continue
        for attack in settings.attacks:
            extra = ["--max-accept-rate", "%g" % settings.accept_rate] if attack == "burst" else []
            with placement.launched(contender, settings.placement.server_cpus, status, flags=extra) as running:
                if running is None:
                    continue
                server, = running.servers
                broker = Broker(server, token)
                status.message("%s (%s): %s" % (name, contender.runtime, attack))
                if attack == "stalled":
                    figures = run_stalled(broker, settings)
                else:
                    figures = (run_flood if attack == "flood" else run_burst)(broker, name, settings)
            if "Traceback" in server.output:
                figures["traceback"] = server.output[server.output.index("Traceback"):][:2000]
            result = {"server": name, "runtime": contender.runtime, "attack": attack, **figures}
            results.append(result)
            print(json.dumps(result), flush=True)
            if attack == "burst":
                status.message(console.burst_line(result))
    return 0 if results else 1
