"""What the kernel says about a process and the machine: CPU time, RSS, CPU model, who listens on a port."""

import glob
import ipaddress
import os
import platform

from loadtest.errors import LoadTestError

_TICKS = os.sysconf("SC_CLK_TCK")


class ProcessGone(LoadTestError):
    """The process no longer exists (or is a zombie)."""


def cpu_seconds(pid):
    """User plus system CPU seconds of ``pid`` so far, from ``/proc/<pid>/stat``."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        raise ProcessGone("process %d exited" % pid) from None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        raise ProcessGone("process %d exited" % pid)
    return (int(fields[11]) + int(fields[12])) / _TICKS


def rss_kb(pid):
    """Resident set size of ``pid`` in KiB, from ``/proc/<pid>/status``."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    raise ProcessGone("process %d exited" % pid)


def runtime_of(pid):
    """The program a process runs, e.g. ``python3.11`` or ``node`` (best effort)."""
    try:
        return os.path.basename(os.readlink("/proc/%d/exe" % pid))
    except OSError:
        return None


def machine():
    cpu_model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu_model": cpu_model, "cores": os.cpu_count(), "kernel": platform.release()}


def tcp_counters(path="/proc/net/netstat"):
    """The kernel's ``TcpExt`` counters since boot, machine-wide; empty where the file is not."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:") and values.startswith("TcpExt:"):
            return dict(zip(names.split()[1:], map(int, values.split()[1:])))
    return {}


_LISTEN = "0A"


def listening_pids(addresses, port):
    """The processes (readable by this user) listening on TCP ``port`` at one of ``addresses``, or all, sorted."""
    wanted = {ipaddress.ip_address(address) for address in addresses}
    inodes = set()
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                rows = [line.split() for line in f.readlines()[1:]]
        except OSError:
            continue
        for row in rows:
            local, _, local_port = row[1].partition(":")
            address = ipaddress.ip_address(b"".join(bytes.fromhex(local[i:i + 8])[::-1] for i in range(0, len(local), 8)))
            if row[3] == _LISTEN and int(local_port, 16) == port and (address in wanted or address.is_unspecified):
                inodes.add("socket:[%s]" % row[9])
    pids = set()
    for descriptor in glob.glob("/proc/[0-9]*/fd/*") if inodes else ():
        try:
            if os.readlink(descriptor) in inodes:
                pids.add(int(descriptor.split("/")[2]))
        except OSError:
            continue
    return sorted(pids)
