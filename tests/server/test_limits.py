"""Connection limits: max.connections, max.connections.per.ip, and senders too slow to finish a request."""

from __future__ import annotations

import re
import time
import urllib.request

from protocol.api_keys import ApiKey
from protocol.client import encode_request
from protocol.error_codes import ErrorCode
from protocol.messages import ApiVersionsRequest
from tests.conftest import free_port


def _serves(wire) -> bool:
    return wire.request(ApiKey.API_VERSIONS, 0, ApiVersionsRequest()).error_code == ErrorCode.NONE


def _metric(http_port: int, name: str, **labels: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=5) as response:
        page = response.read().decode()
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    found = re.search("^" + re.escape(name) + r"\{" + re.escape(wanted) + r"\} (\S+)$", page, re.M)
    return float(found.group(1)) if found else 0.0


def test_connections_past_max_connections_are_closed_on_arrival_and_counted(server_factory, connect):
    http_port = free_port()
    srv = server_factory("max.connections=3", f"http.listener=127.0.0.1:{http_port}")
    admitted = [connect(srv) for _ in range(3)]
    assert all(_serves(w) for w in admitted)
    refused = connect(srv)
    assert refused.closed_by_server()
    assert _metric(http_port, "groupcoord_connections_refused_total", limit="max.connections") == 1
    admitted[0].close()
    deadline = time.monotonic() + 5
    while True:  # the server notices the close on its next loop turn
        replacement = connect(srv)
        try:
            if _serves(replacement):
                break
        except ConnectionError:
            assert time.monotonic() < deadline, "a freed slot was never given to a new connection"
            time.sleep(0.05)
    assert all(_serves(w) for w in admitted[1:])


def test_max_connections_per_ip_caps_one_address(server_factory, connect):
    srv = server_factory("max.connections.per.ip=2")
    first, second = connect(srv), connect(srv)
    assert connect(srv).closed_by_server()
    assert _serves(first) and _serves(second)


def test_a_request_trickled_a_byte_at_a_time_is_cut_off_after_request_read_timeout_ms(server_factory, connect):
    srv = server_factory("request.read.timeout.ms=500")
    slow, healthy = connect(srv), connect(srv)
    data = encode_request(ApiKey.API_VERSIONS, 3, 1, "slowloris", ApiVersionsRequest("slowloris", "1"))
    started = time.monotonic()
    cut_off = False
    for i in range(len(data) - 1):  # never the last byte; each byte keeps the connection "active"
        try:
            slow.send_raw(data[i:i + 1])
        except (BrokenPipeError, ConnectionResetError):
            cut_off = True
            break
        assert _serves(healthy)  # everyone else is served meanwhile
        time.sleep(0.1)
    assert cut_off or slow.closed_by_server(timeout=3)
    assert 0.4 < time.monotonic() - started < 4
    assert _serves(healthy)


def test_a_request_that_arrives_in_pieces_within_the_timeout_is_answered(server_factory, connect):
    srv = server_factory("request.read.timeout.ms=1000")
    wire = connect(srv)
    data = encode_request(ApiKey.API_VERSIONS, 3, 9, "pieces", ApiVersionsRequest("pieces", "1"))
    for _ in range(3):  # three whole requests, each in two halves 0.3 s apart: the clock starts per request
        wire.send_raw(data[:10])
        time.sleep(0.3)
        wire.send_raw(data[10:])
        got, response = wire.receive(ApiKey.API_VERSIONS, 3)
        assert (got, response.error_code) == (9, ErrorCode.NONE)
        time.sleep(0.6)
