"""What the embedded API server stores and refuses at its limits, over real HTTPS: bodies read
whole whatever their framing, 413 for what is too large (before it is read into memory), and
the request-level checks kube-apiserver makes (resourceVersion syntax, malformed patches)."""

from __future__ import annotations

import base64
import contextlib
import http.client
import socket
import ssl
import time

import pytest
import yaml
from tests.live import Server

LIMIT = 3 * 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("limits") / "data").start()
    yield s
    s.stop()


def tls(server: Server) -> tuple[str, str, ssl.SSLContext]:
    cfg = yaml.safe_load(server.kubeconfig.read_text())
    cluster = cfg["clusters"][0]["cluster"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    return "127.0.0.1", cfg["users"][0]["user"]["token"], ctx


def configmap(name: str, size: int) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"blob": "x" * size}}


def test_a_100kb_configmap_is_stored_whole(server):
    code, body = server.request("POST", "/api/v1/namespaces/default/configmaps", configmap("big", 100_000))
    assert code == 201, body
    code, got = server.request("GET", "/api/v1/namespaces/default/configmaps/big")
    assert code == 200 and len(got["data"]["blob"]) == 100_000


def test_a_chunked_body_in_small_pieces_is_read_whole(server):
    host, token, ctx = tls(server)
    payload = yaml.safe_dump(configmap("chunked", 200_000)).encode()
    conn = http.client.HTTPSConnection(host, server.port, context=ctx, timeout=30)
    pieces = (payload[i : i + 1000] for i in range(0, len(payload), 1000))
    conn.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        body=pieces,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/yaml"},
        encode_chunked=True,
    )
    resp = conn.getresponse()
    assert resp.status == 201, resp.read()[:300]
    code, got = server.request("GET", "/api/v1/namespaces/default/configmaps/chunked")
    assert code == 200 and got["data"]["blob"] == "x" * 200_000


def test_a_declared_body_over_the_limit_is_413_unread(server):
    code, body = server.request(
        "POST", "/api/v1/namespaces/default/configmaps", b"{" + b" " * LIMIT + b"}", content_type="application/json"
    )
    assert code == 413
    assert body["reason"] == "RequestEntityTooLarge"
    assert body["message"] == f"Request entity too large: limit is {LIMIT}"
    assert server.request("GET", "/api/v1/namespaces/default/configmaps/huge")[0] == 404


def test_an_object_over_etcds_limit_is_413_and_not_stored(server):
    code, body = server.request("POST", "/api/v1/namespaces/default/configmaps", configmap("toolarge", 2_000_000))
    assert code == 413 and body["reason"] == "RequestEntityTooLarge"
    assert "over the 1572864 bytes etcd stores in one object" in body["message"]
    assert server.request("GET", "/api/v1/namespaces/default/configmaps/toolarge")[0] == 404


def test_a_chunked_100mb_body_gets_413_before_it_is_all_sent(server):
    host, token, ctx = tls(server)
    raw = socket.create_connection((host, server.port), timeout=30)
    sock = ctx.wrap_socket(raw, server_hostname=host)
    sock.sendall(
        (
            "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n"
        ).encode()
    )
    chunk = b"%x\r\n%s\r\n" % (1 << 20, b" " * (1 << 20))
    sent, answer = 0, b""
    try:
        while sent < 100 and not answer:
            sock.sendall(chunk)
            sent += 1
            sock.setblocking(False)  # has the server answered yet? (TLS tickets make select() useless)
            with contextlib.suppress(ssl.SSLWantReadError, BlockingIOError):
                answer = sock.recv(65536)
            sock.settimeout(30)
    except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
        pass
    deadline = time.monotonic() + 10
    while b"\r\n\r\n" not in answer and time.monotonic() < deadline:
        part = sock.recv(65536)
        if not part:
            break
        answer += part
    sock.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 40, f"the server let {sent} MiB through before answering"
