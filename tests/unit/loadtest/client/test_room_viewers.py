"""The rooms command's viewers without sockets: what they count, time and call foreign."""

import asyncio

import pytest

from loadtest.client import room_viewers
from loadtest.client.connections import GroupSpec
from loadtest.client.deliveries import now_us
from loadtest.method import rules

BASE = "http://127.0.0.1:9/broadcast"


def frame(viewer, text):
    data = text.replace(b"SENT", b"%d" % (now_us() - 5000))
    return viewer.count_frame(data, 0, len(data))


def new_viewer(rooms):
    return room_viewers.RoomViewer(rooms, rules.new_histogram(), rules.new_histogram())


def test_a_viewer_url_names_its_rooms_and_reads_back():
    url = room_viewers.viewer_url(BASE, (3, 7))
    assert url == BASE + "?rooms=room-3,room-7"
    assert room_viewers.rooms_of(url) == (3, 7)
    assert room_viewers.rooms_of(room_viewers.viewer_url(BASE + "?positions=1", (0,))) == (0,)


def test_a_viewer_of_one_room_times_its_room_s_messages_hot_apart_and_calls_another_room_s_foreign():
    viewer = new_viewer((0,))
    assert frame(viewer, b'a["0:1:SENT","0:2:SENT"]') == 2
    assert frame(viewer, b'a["4:3:SENT"]') == 0
    assert (viewer.received, viewer.foreign) == (2, 1)
    assert viewer.hot.get_total_count() == 2 and viewer.tail.get_total_count() == 0
    assert 5000 <= viewer.hot.get_max_value() < 60 * 10 ** 6


def test_a_viewer_of_several_rooms_reads_each_message_s_room_and_checks_it():
    viewer = new_viewer((0, 2))
    assert frame(viewer, b'a[{"r":"room-2","d":"2:1:SENT"},{"r":"room-0","d":"0:2:SENT"}]') == 2
    assert frame(viewer, b'a[{"r":"room-0","d":"2:3:SENT"},{"r":"room-5","d":"5:4:SENT"}]') == 0
    assert frame(viewer, b'a[{"r":"room-2","a":{"audience":3}},"not a load message"]') == 0
    assert (viewer.received, viewer.foreign) == (2, 2)
    assert viewer.hot.get_total_count() == 1 and viewer.tail.get_total_count() == 1


def test_a_group_counts_what_each_viewer_lacks_or_had_twice_against_its_rooms_publishes():
    async def reports():
        urls = [room_viewers.viewer_url(BASE, rooms) for rooms in ((0,), (1,), (0, 1))]
        group = room_viewers.RoomViewers(GroupSpec(urls, count=3))
        try:
            for viewer, text in zip(group.viewers, (b'a["0:1:SENT","0:2:SENT"]', b'a["1:3:SENT"]',
                                                    b'a[{"r":"room-0","d":"0:1:SENT"}]')):
                frame(viewer, text)
            return group.viewers, await group.report([1, 1])
        finally:
            group.close()

    viewers, report = asyncio.run(reports())
    assert [v.rooms for v in viewers] == [{0}, {1}, {0, 1}]
    assert (report.viewers, report.received, report.foreign, report.extra) == (3, 4, 0, 1)
    assert report.short == 0, "no connection is open: nobody alive lacks anything"
    merged, hot, tail = room_viewers.merged([report, report])
    assert (merged.viewers, merged.received, merged.extra) == (6, 8, 2)
    assert (hot.get_total_count(), tail.get_total_count()) == (6, 2)


@pytest.mark.parametrize("index", [0, 9, 10000])
def test_a_room_s_name_is_its_index(index):
    assert room_viewers.room_name(index) == "room-%d" % index
