"""What the kernel says of the machine's TCP, read from a file shaped as /proc/net/netstat."""

from loadtest import procstat

NETSTAT = ("TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPSynRetrans\n"
           "TcpExt: 6 64226 64230 43545\n"
           "IpExt: InNoRoutes InOctets\n"
           "IpExt: 0 639\n")


def test_the_tcpext_counters_are_read_by_name(tmp_path):
    path = tmp_path / "netstat"
    path.write_text(NETSTAT)
    counters = procstat.tcp_counters(str(path))
    assert counters == {"SyncookiesSent": 6, "ListenOverflows": 64226, "ListenDrops": 64230, "TCPSynRetrans": 43545}


def test_without_the_file_or_its_tcpext_lines_there_are_none(tmp_path):
    assert procstat.tcp_counters(str(tmp_path / "missing")) == {}
    path = tmp_path / "netstat"
    path.write_text(NETSTAT.split("IpExt", 1)[0].replace("TcpExt", "MPTcpExt"))
    assert procstat.tcp_counters(str(path)) == {}
