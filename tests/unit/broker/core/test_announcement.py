from broker.core.announcement import Announcement
from broker.protocol.batch import Batch


def test_an_announcement_rides_the_next_unkeyed_batch_once_and_greets_every_newcomer():
    announcement = Announcement()
    assert announcement.riding(Batch(['"a"'])).encoded == ['"a"']
    announcement.announce('{"audience":1}')
    announcement.announce('{"audience":2}')  # the newer replaces the one not sent
    keyed = Batch(['"k"'], key="total")
    assert announcement.riding(keyed) is keyed
    assert announcement.riding(Batch(['"b"'])).encoded == ['"b"', '{"audience":2}']
    assert announcement.riding(Batch(['"c"'])).encoded == ['"c"']
    assert announcement.for_newcomer(Batch([])).encoded == ['{"audience":2}']
