"""Which CPUs a server and its load run on."""

from loadtest import affinity


def test_a_cpu_list_reads_as_the_kernel_writes_it():
    assert affinity._cpu_list("0-3,6\n") == {0, 1, 2, 3, 6}
    assert affinity._cpu_list("5") == {5}


def test_the_defaults_are_cpus_this_process_may_use():
    server, client = affinity.default_cpus()
    allowed = affinity.allowed_cpus()
    assert server in allowed and client in allowed
    assert server != client or len(allowed) == 1
