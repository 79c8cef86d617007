"""broker-client.js in named rooms, in Chromium, on every transport at once, through
deploy/nginx.conf in front of three brokers sharing one real Redis, while each broker in turn
drains and is started again, then one is killed: the haproxy test's pages, publisher and checks
(test_rooms_through_haproxy.py), every message of each room delivered once, in order, no gap.

nginx takes a draining broker out by no check: its sessions' requests keep reaching it by their
server ids until its drain has closed each (3012), a new websocket it answers 503 is sent to
another broker, and a new polling or streaming session it answers 503 is opened again by the
page, with a new server id. Its clients resume on the others by their positions in Redis."""

from deployment import start_cluster_behind_nginx  # noqa: F401  (start_cluster, with nginx in front)
from test_rooms_through_haproxy import \
    test_pages_in_rooms_through_haproxy_keep_each_rooms_messages_through_a_rolling_restart_and_a_kill as \
    test_pages_in_rooms_through_nginx_keep_each_rooms_messages_through_a_rolling_restart_and_a_kill  # noqa: F401
