"""Idempotency keys without a broker: what a window keeps, and for how long."""

from broker.core.idempotency import Answer, Window, fingerprint, valid_key


def test_a_key_is_short_printable_ascii():
    assert valid_key("order-42:attempt") and valid_key("x" * 255)
    assert not any(valid_key(k) for k in ("", "x" * 256, "with space", "tab\t", "caf\u00e9"))


def test_the_fingerprint_binds_the_body_and_its_kind():
    assert fingerprint(b"1", True) == fingerprint(b"1", True)
    assert fingerprint(b"1", True) != fingerprint(b"1", False) != fingerprint(b"2", False)


def test_a_window_keeps_answers_for_its_seconds():
    window = Window(10)
    first = Answer("f", 3, "e", "7")
    window.put("k", first, now=0)
    assert window.get("k", now=9.9) == first
    assert window.get("k", now=10) is None and len(window) == 0


def test_a_full_window_forgets_its_oldest_key_first():
    window = Window(600, max_keys=2)
    for n, key in enumerate("abc"):
        window.put(key, Answer("f", 0, "e", str(n)), now=n)
    assert window.get("a", now=3) is None and window.get("c", now=3).offset == "2"
    assert window.evicted == 1


def test_an_answer_survives_its_record_in_redis():
    first = Answer("f00d", 12, "k3J9x2", None)
    assert Answer.parse(first.record() + " 1700000000000-0") == first._replace(offset="1700000000000-0")
