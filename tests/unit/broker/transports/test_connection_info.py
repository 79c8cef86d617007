"""What a session keeps of the request that opened it: its address and path, not its headers,
arguments or cookies, whatever its transport, refused or not."""

import types

from sockjs.tornado import SockJSConnection
from sockjs.tornado.session import ConnectionInfo
from tornado.httputil import HTTPHeaders, HTTPServerRequest

from broker.transports.http_transports import NewSessions
from broker.transports.owned_socket import opening_info
from broker.transports.router import BrokerRouter


class Refused(SockJSConnection):
    """A connection that closes its session as it opens, as a refused one does."""

    def on_open(self, info):
        assert info.arguments and info.headers  # what the opening is judged by is there
        self.close()


class NoCookies(HTTPServerRequest):
    @property
    def cookies(self):
        raise AssertionError("a session's cookies were parsed")


def test_an_opened_session_keeps_only_its_address_and_path():
    fat = ConnectionInfo("127.0.0.9", {"c": "x" * 1000}, {"q": [b"x" * 1000]},
                         HTTPHeaders({"X-Fat": "x" * 1000}), "/x/000/s1/xhr")
    for connection in (SockJSConnection, Refused):
        session = BrokerRouter(connection, "/x").create_session("s1", register=False)
        handler = types.SimpleNamespace(name="xhr", get_conn_info=lambda: fat, send_pack=lambda frame: None,
                                          session_closed=lambda: None)
        assert session.set_handler(handler)
        session.verify_state()
        info = session.conn_info
        assert (info.ip, info.path) == ("127.0.0.9", "/x/000/s1/xhr")
        assert not (info.cookies or info.arguments or info.headers)


def test_a_session_opens_without_parsing_the_cookie_header():
    """Streams and websockets (opening_info) and the polls Tornado answers (NewSessions)."""
    headers = HTTPHeaders({"Cookie": ";".join("c%d=" % n for n in range(8000)), "Origin": "https://a.example"})
    request = NoCookies(method="GET", uri="/x/000/s1/eventsource?positions=1", headers=headers)
    for info in (opening_info(request), NewSessions.get_conn_info(types.SimpleNamespace(request=request))):
        assert info.arguments == {"positions": [b"1"]} and info.headers["Origin"] == "https://a.example"
        assert not info.cookies
