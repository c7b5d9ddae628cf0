"""The API server's fault mode (``--fault-injection``), set over HTTP from the test: 503s, dropped
connections, added latency, a pause holding every request; bad settings are a 400 naming the
field; a server started without the flag has no such endpoint."""

from __future__ import annotations

import http.client
import time
import urllib.error

import pytest
from tests.live import Server

FAULTS = "/debug/kubesched/faults"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("faults") / "data", args=["--fault-injection"]).start()
    yield s
    s.request("PUT", FAULTS, {})
    s.stop()


def test_failures_are_503_status_bodies(server):
    assert server.request("PUT", FAULTS, {"failRate": 1.0})[0] == 200
    try:
        code, body = server.request("GET", "/api/v1/namespaces")
        assert code == 503
        assert body["reason"] == "ServiceUnavailable" and body["code"] == 503
        assert body["message"].startswith("injected fault")
    finally:
        assert server.request("PUT", FAULTS, {})[1]["failRate"] == 0
    assert server.request("GET", "/api/v1/namespaces")[0] == 200


def test_drops_close_the_connection_without_an_answer(server):
    server.request("PUT", FAULTS, {"dropRate": 1.0})
    try:
        with pytest.raises((urllib.error.URLError, http.client.RemoteDisconnected, ConnectionError)):
            server.request("GET", "/api/v1/namespaces")
    finally:
        server.request("PUT", FAULTS, {})


def test_latency_and_pause_delay_requests(server):
    server.request("PUT", FAULTS, {"latencySeconds": 0.3})
    started = time.monotonic()
    assert server.request("GET", "/api/v1/namespaces")[0] == 200
    assert time.monotonic() - started >= 0.3
    assert server.request("PUT", FAULTS, {"pauseSeconds": 1.0})[1]["pauseSeconds"] > 0.5
    started = time.monotonic()
    assert server.request("GET", "/api/v1/namespaces")[0] == 200
    assert time.monotonic() - started >= 0.9
    server.request("PUT", FAULTS, {})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"failRate": 2}, "faults: failRate must be a number from 0 to 1"),
        ({"latencySeconds": "slow"}, "faults: latencySeconds must be a number from 0 to 600"),
        ({"pause": 3}, 'faults: unknown field "pause"'),
        ([1, 2], "the body of the request must be a JSON object"),
    ],
)
def test_bad_fault_settings_are_400(server, body, message):
    code, status = server.request("PUT", FAULTS, body)
    assert (code, status["reason"], status["message"]) == (400, "BadRequest", message)
    assert server.request("GET", FAULTS)[1] == {
        "latencySeconds": 0.0,
        "failRate": 0.0,
        "dropRate": 0.0,
        "pauseSeconds": 0.0,
    }


def test_without_the_flag_there_is_no_fault_endpoint(tmp_path):
    s = Server(tmp_path / "data").start()
    try:
        assert s.request("PUT", FAULTS, {"failRate": 1})[0] == 404
        assert s.request("GET", "/api/v1/namespaces")[0] == 200
    finally:
        s.stop()
