"""A storm's subscriber without sockets: what it times."""

from loadtest.client.deliveries import now_us
from loadtest.client.storm_clients import StormSubscriber


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
