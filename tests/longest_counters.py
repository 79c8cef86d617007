"""Counters at their longest: names of 64 characters that JSON writes in two each, totals of
every digit, added on one keep-alive connection until the broker refuses one."""

import http.client
import urllib.parse

LONGEST_TOTAL = "-999999999999.999999"


def longest_name(n):
    """The ``n``-th name of 64 characters, each one JSON writes in two: ``"`` and ``\\``."""
    return "{:064b}".format(n).replace("0", '"').replace("1", "\\")


def counter_path(name, op="add"):
    """The publish path of ``op`` on counter ``name``."""
    return "/publish?op=%s&key=%s" % (op, urllib.parse.quote(name, safe=""))


def add_counters(broker, most, headers, first=0):
    """Add LONGEST_TOTAL to counters ``first`` to ``first + most - 1`` of the longest names, on
    one keep-alive connection to ``broker``, until one is refused: how many were taken, and the
    refusal's (status, text) or None."""
    host, port = broker.origin[len("http://"):].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        for n in range(most):
            conn.request("POST", counter_path(longest_name(first + n)), LONGEST_TOTAL, headers)
            response = conn.getresponse()
            body = response.read().decode()
            if response.status != 200:
                return n, (response.status, body)
        return most, None
    finally:
        conn.close()
