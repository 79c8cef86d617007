from broker.core.token_bucket import TokenBucket


def test_a_full_bucket_allows_a_burst_then_refuses():
    bucket = TokenBucket(rate=10, burst=3, now=0.0)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]


def test_tokens_come_back_at_the_rate_up_to_the_burst():
    bucket = TokenBucket(rate=10, burst=3, now=0.0)
    for _ in range(3):
        bucket.take(0.0)
    assert not bucket.take(0.05)
    assert bucket.take(0.1)
    assert not bucket.take(0.1)
    assert [bucket.take(100.0) for _ in range(4)] == [True, True, True, False]


def test_a_steady_client_at_the_rate_is_never_refused():
    bucket = TokenBucket(rate=50, burst=100, now=0.0)
    assert all(bucket.take(i / 50) for i in range(10000))
