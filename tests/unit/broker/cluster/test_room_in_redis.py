from broker.cluster import room_in_redis


def test_an_entry_carries_its_conflating_key_in_a_field_of_its_own():
    entries = [(b"1-0", {b"m": b'"a"'}), (b"2-0", {b"m": b'"b"', b"k": b"total"})]
    assert room_in_redis.keys_of(entries) == [None, "total"]
    assert room_in_redis.keys_of(entries[:1]) is None


def test_the_counters_hash_gives_each_counters_latest_message():
    fields = {b"v:raised": b"21500000", b"s:raised": b"2", b"o:raised": b"7-0",
              b"m:raised": b'{"counter":"raised","value":"21.50"}'}
    assert room_in_redis.latest_counters(fields) == [("raised", "7-0", '{"counter":"raised","value":"21.50"}')]


def test_every_key_of_a_room_starts_with_its_streams():
    stream = room_in_redis.stream_key("/broadcast")
    for key in (room_in_redis.epoch_key("/broadcast"), room_in_redis.counters_key("/broadcast"),
                room_in_redis.audience_key("/broadcast")):
        assert key.startswith(stream + ":")
