"""sockjs-client in Chromium through deploy/nginx.conf, on every transport: the haproxy test's
pages and checks, two brokers sharing the room through Redis behind nginx."""

from deployment import start_cluster_behind_nginx  # noqa: F401  (start_cluster, with nginx in front)
from test_transports_through_haproxy import test_every_transport_works_through_haproxy as \
    test_every_transport_works_through_nginx  # noqa: F401
