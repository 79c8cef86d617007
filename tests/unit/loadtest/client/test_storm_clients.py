"""A storm's subscribers without sockets: what they time, when they are caught up."""

import asyncio

from loadtest.client.connections import GroupSpec
from loadtest.client.deliveries import now_us
from loadtest.client.storm_clients import StormGroup, StormSubscriber


def test_a_subscriber_times_each_message_it_delivers_and_no_copy_it_drops():
    subscriber = StormSubscriber()
    timed = []
    subscriber.record = timed.append
    sent = now_us() - 5000

    def read(text):
        frame = text.replace(b"SENT", b"%d" % sent)
        return subscriber.count_frame(frame, 0, len(frame))

    assert read(b'a[{"c":"open","epoch":"E","o":"1"},{"o":"1","d":"-1:1:SENT"},{"o":"2","d":"-1:2:SENT"}]') == 2
    # Resumed after 2: message 2 comes again and is dropped (as a duplicate), 3 is new.
    assert read(b'a[{"c":"resumed","epoch":"E","o":"2"},{"o":"2","d":"-1:2:SENT"},{"o":"3","d":"-1:3:SENT"}]') == 1
    assert (subscriber.first, subscriber.last, subscriber.holes, subscriber.duplicates) == (1, 3, 0, 1)
    assert len(timed) == 3 and all(5000 <= lateness < 60 * 10 ** 6 for lateness in timed), timed


def test_a_subscriber_back_after_the_last_publish_is_caught_up_when_it_delivers_the_last_message():
    async def counts():
        group = StormGroup(GroupSpec(["http://127.0.0.1:9/broadcast"], "websocket", count=2))
        early, late = group.subscribers
        for subscriber in group.subscribers:
            subscriber.record = lambda lateness: None
        group.dropped_us = now_us() - 3000
        deliver(early, "-1:1:%d" % (group.dropped_us - 1000))
        early.back_us = now_us() - 2000
        deliver(early, "-1:2:%d" % (now_us() - 1000))  # published after it began coming back
        late.back_us = now_us()  # back after the last publish: message 2 comes with its resume
        deliver(late, "-1:1:%d" % (group.dropped_us - 1000))
        deliver(late, "-1:2:%d" % (late.back_us - 1000))
        return group.counts(2)

    report = asyncio.run(counts())
    assert report["complete"] == 2 and report["not_caught_up"] == 0
    assert all(0 < ms < 60000 for ms in report["caught_up_ms"]), report["caught_up_ms"]


def deliver(subscriber, message):
    subscriber.delivered(None, message)
