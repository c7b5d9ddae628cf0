"""What the embedded API server stores and refuses at its limits, over real HTTPS: bodies read
whole whatever their framing, 413 for what is too large (before it is read into memory), and
the request-level checks kube-apiserver makes (resourceVersion syntax, malformed patches)."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import socket
import ssl
import threading
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


def raw_tls(server: Server) -> ssl.SSLSocket:
    host, _token, ctx = tls(server)
    return ctx.wrap_socket(socket.create_connection((host, server.port), timeout=30), server_hostname=host)


def read_all(sock: ssl.SSLSocket, limit: float = 15.0) -> bytes:
    out, deadline = b"", time.monotonic() + limit
    with contextlib.suppress(OSError, ssl.SSLError):
        while time.monotonic() < deadline:
            part = sock.recv(65536)
            if not part:
                break
            out += part
    return out


@pytest.mark.parametrize(
    "header",
    [b"Bearer \xff\xfe\xfd", b"Bearer", b"Basic dXNlcjpwYXNz", b"\xc3\x28 \xa0\xa1", b"Bearer  "],
    ids=["not-utf8-token", "no-token", "basic", "not-utf8-scheme", "blank"],
)
def test_a_malformed_authorization_header_is_401(server, header):
    sock = raw_tls(server)
    sock.sendall(
        b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: " + header + b"\r\n\r\n"
    )
    answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert b'"reason":"Unauthorized"' in answer


def test_the_schedulers_endpoint_answers_a_malformed_token_with_401():
    import asyncio

    from tests.live import free_port

    from kubesched.app.serving import SchedulerServer

    port = free_port()

    async def probe() -> bytes:
        serving = SchedulerServer("127.0.0.1", port, "secret", {})
        await serving.start()
        try:
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
            writer.write(
                b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer \xff\xfe\r\n\r\n"
            )
            answer = await reader.read()
            writer.close()
            return answer
        finally:
            await serving.stop()

    assert asyncio.run(probe()).startswith(b"HTTP/1.1 401")


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    s = Server(
        tmp_path_factory.mktemp("capped") / "data",
        args=[
            "--fault-injection",
            "--max-requests-inflight=2",
            "--max-mutating-requests-inflight=1",
            "--max-connections=6",
            "--idle-connection-timeout=1.5",
            "--watch-queue-length=50",
        ],
    ).start()
    yield s
    s.stop()


def test_requests_over_the_inflight_limit_get_429_with_retry_after(capped):
    capped.request("PUT", "/debug/kubesched/faults", {"latencySeconds": 1.0})
    try:
        results: list[tuple[int, dict, str | None]] = []

        def get() -> None:
            code, body = capped.request("GET", "/api/v1/namespaces")
            results.append((code, body, capped.last_headers.get("Retry-After")))

        threads = [threading.Thread(target=get) for _ in range(3)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
    finally:
        capped.request("PUT", "/debug/kubesched/faults", {})
    codes = sorted(code for code, _, _ in results)
    assert codes == [200, 200, 429], codes
    _, body, retry = next(r for r in results if r[0] == 429)
    assert retry == "1"
    assert body["reason"] == "TooManyRequests" and body["message"] == "Too many requests, please try again later."
    assert body["details"] == {"retryAfterSeconds": 1}


def test_connections_over_the_cap_get_429_and_idle_ones_are_closed(capped):
    idle = [raw_tls(capped) for _ in range(6)]
    time.sleep(0.3)
    over = raw_tls(capped)
    over.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = read_all(over, 5)
    assert answer.startswith(b"HTTP/1.1 429") and b"Retry-After: 1" in answer, answer[:200]
    for sock in idle:  # closed by the server once idle past 1.5 s
        started = time.monotonic()
        assert read_all(sock, 10) == b""
        assert time.monotonic() - started < 5
        sock.close()
    over.close()
    time.sleep(0.5)
    assert capped.request("GET", "/version")[0] == 200


def test_a_watcher_that_stops_reading_is_closed_and_the_others_get_every_event(capped):
    path = "/api/v1/namespaces/default/configmaps"
    _, listed = capped.request("GET", path)
    rv = listed["metadata"]["resourceVersion"]
    _host, token, _ctx = tls(capped)
    slow = raw_tls(capped)
    slow.sendall(
        f"GET {path}?watch=1&resourceVersion={rv} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
    )
    seen: list[str] = []

    def healthy() -> None:
        _code, raw = capped.request("GET", f"{path}?watch=1&resourceVersion={rv}&timeoutSeconds=12", raw=True)
        seen.extend(json.loads(line)["object"]["metadata"]["name"] for line in raw.splitlines() if line.strip())

    watcher = threading.Thread(target=healthy)
    watcher.start()
    time.sleep(0.5)
    names = [f"w{i}" for i in range(150)]
    for name in names:
        assert capped.request("POST", path, configmap(name, 100_000))[0] == 201
    received = read_all(slow, 20)  # the server ends the slow watch: recv sees the end
    assert len(received) < 150 * 100_000, "the slow watcher got every event: it was never cut off"
    watcher.join(20)
    assert seen == names


@pytest.mark.parametrize("watch", ["", "&watch=1"], ids=["list", "watch"])
@pytest.mark.parametrize(
    ("rv", "why"),
    [("abc", "invalid syntax"), ("1.5", "invalid syntax"), ("99999999999999999999", "value out of range")],
)
def test_a_resource_version_that_is_not_a_revision_is_400(server, watch, rv, why):
    code, body = server.request("GET", f"/api/v1/namespaces/default/configmaps?resourceVersion={rv}{watch}")
    assert code == 400 and body["reason"] == "BadRequest"
    assert body["message"] == f'resourceVersion: Invalid value: "{rv}": strconv.ParseUint: parsing "{rv}": {why}'


def test_a_list_at_a_revision_not_yet_reached_is_504(server):
    _, listed = server.request("GET", "/api/v1/namespaces")
    ahead = int(listed["metadata"]["resourceVersion"]) + 1000
    code, body = server.request("GET", f"/api/v1/namespaces?resourceVersion={ahead}")
    assert code == 504 and body["reason"] == "Timeout"
    assert body["message"].startswith(f"Timeout: Too large resource version: {ahead}, current: ")
    assert server.request("GET", "/api/v1/namespaces?resourceVersion=0")[0] == 200


# 300 operations that change nothing (over writes.LONG_JSON_PATCH)
LONG = [{"op": "test", "path": "/metadata/name", "value": "patched"}] * 300


def test_a_long_json_patch_is_applied_and_answered_as_a_short_one(server):
    path = "/api/v1/namespaces/default/configmaps/long-patched"
    assert server.request("POST", "/api/v1/namespaces/default/configmaps", configmap("long-patched", 1))[0] == 201
    ops = [{"op": "add", "path": f"/data/k{i}", "value": str(i)} for i in range(1000)]
    code, body = server.request("PATCH", path, ops, content_type="application/json-patch+json")
    assert code == 200 and body["data"]["k999"] == "999" and len(body["data"]) == 1001
    _, stored = server.request("GET", path)
    assert stored == body


@pytest.mark.parametrize(
    ("ctype", "patch", "code", "message"),
    [
        (
            "application/json-patch+json",
            [{"op": "test", "path": "/data/blob", "value": "other"}],
            422,
            "the server rejected",
        ),
        ("application/json-patch+json", [{"op": "replace", "path": "/nope/x", "value": 1}], 422, "the server rejected"),
        ("application/json-patch+json", [{"op": "frob", "path": "/data"}], 422, "the server rejected"),
        (
            "application/json-patch+json",
            [{"op": "move", "from": "/metadata/name", "path": "/metadata/generateName"}],
            400,
            "the name of the object () does not match the name on the URL (patched)",
        ),
        (
            "application/json-patch+json",
            [{"op": "replace", "path": "/metadata/name", "value": "renamed"}],
            400,
            "the name of the object (renamed) does not match the name on the URL (patched)",
        ),
        ("application/json-patch+json", {"op": "add"}, 400, "json: cannot unmarshal object into Go value"),
        (
            "application/merge-patch+json",
            {"metadata": {"name": "renamed"}},
            400,
            "the name of the object (renamed) does not match the name on the URL (patched)",
        ),
        (
            "application/strategic-merge-patch+json",
            {"metadata": {"namespace": "elsewhere"}},
            400,
            "the namespace of the object (elsewhere) does not match the namespace on the URL (default)",
        ),
        ("application/merge-patch+json", [1, 2], 400, "the patch must be a JSON object"),
        # long enough to be applied on a worker thread: the same answers
        (
            "application/json-patch+json",
            [*LONG, {"op": "test", "path": "/data/blob", "value": "other"}],
            422,
            "the server rejected",
        ),
        (
            "application/json-patch+json",
            [*LONG, {"op": "replace", "path": "/metadata/name", "value": "renamed"}],
            400,
            "the name of the object (renamed) does not match the name on the URL (patched)",
        ),
    ],
    ids=[
        "test-fails",
        "missing-path",
        "unknown-op",
        "move-name",
        "rename",
        "not-array",
        "merge-rename",
        "smp-namespace",
        "merge-not-object",
        "test-fails-after-300",
        "rename-after-300",
    ],
)
def test_a_patch_that_cannot_apply_is_refused_and_changes_nothing(server, ctype, patch, code, message):
    path = "/api/v1/namespaces/default/configmaps/patched"
    if server.request("GET", path)[0] == 404:
        assert server.request("POST", "/api/v1/namespaces/default/configmaps", configmap("patched", 1))[0] == 201
    _, before = server.request("GET", path)
    got, body = server.request("PATCH", path, patch, content_type=ctype)
    assert (got, body["message"][: len(message)]) == (code, message), body
    _, after = server.request("GET", path)
    assert after == before
    assert server.request("GET", "/api/v1/namespaces/default/configmaps/renamed")[0] == 404


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("kubelet") / "data", nodes=1).start()
    yield s
    s.stop()


def bound_pod(cluster: Server, name: str, finalizers: list[str] | None = None) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **({"finalizers": finalizers} if finalizers else {})},
        "spec": {"containers": [{"name": "c", "image": "pause"}], "terminationGracePeriodSeconds": 30},
    }
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"name": "node-0"}}
    assert cluster.request("POST", f"/api/v1/namespaces/default/pods/{name}/binding", binding)[0] == 201


def test_the_hollow_kubelet_confirms_a_graceful_deletion_promptly(cluster):
    """Not the whole 30 s grace period: the pod is Terminating (deletionTimestamp 30 s ahead),
    then gone within about the kubelet's half-second termination delay."""
    bound_pod(cluster, "quick")
    started = time.monotonic()
    code, marked = cluster.request("DELETE", "/api/v1/namespaces/default/pods/quick")
    assert code == 200 and marked["metadata"]["deletionGracePeriodSeconds"] == 30
    while cluster.request("GET", "/api/v1/namespaces/default/pods/quick")[0] == 200:
        assert time.monotonic() - started < 5, "the pod waited out its grace period"
        time.sleep(0.05)


def test_a_finalizer_still_holds_a_pod_the_kubelet_has_stopped(cluster):
    bound_pod(cluster, "held", finalizers=["example.com/hold"])
    assert cluster.request("DELETE", "/api/v1/namespaces/default/pods/held")[0] == 200
    time.sleep(1.5)
    code, pod = cluster.request("GET", "/api/v1/namespaces/default/pods/held")
    assert code == 200 and pod["metadata"]["deletionTimestamp"]
    patch = [{"op": "remove", "path": "/metadata/finalizers"}]
    assert (
        cluster.request(
            "PATCH", "/api/v1/namespaces/default/pods/held", patch, content_type="application/json-patch+json"
        )[0]
        == 200
    )
    deadline = time.monotonic() + 5
    while cluster.request("GET", "/api/v1/namespaces/default/pods/held")[0] == 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def silent_watch(server: Server, path: str) -> ssl.SSLSocket:
    """A watch whose client sends the request and then reads nothing (a small receive buffer:
    the kernel keeps little for it, so what the server buffers shows)."""
    host, token, ctx = tls(server)
    raw = socket.create_connection((host, server.port), timeout=30)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock = ctx.wrap_socket(raw, server_hostname=host)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    return sock


def rss_mib(pid: int) -> float:
    for line in open(f"/proc/{pid}/status").read().splitlines():  # noqa: SIM115
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def closed_watches(server: Server) -> list[str]:
    log = server.data_dir.parent / f"{server.data_dir.name}.log"
    return [line for line in log.read_text().splitlines() if "closing a watch of configmaps whose client" in line]


def test_watchers_that_never_read_are_bounded_and_closed_and_timeout_seconds_is_honoured(server):
    """Each watch used to hold its whole initial list, encoded, in one write: 20 such watchers
    over 60 MB took the server to 3.4 GB and it kept 2.2 GB. Now a watch is written ~64 KiB at a
    time, each write waiting for the client; timeoutSeconds ends it even while the client does not
    read, and a client that takes nothing for 10 s is disconnected."""
    assert server.proc is not None
    path = "/api/v1/namespaces/watched/configmaps"
    assert server.request("POST", "/api/v1/namespaces", {"metadata": {"name": "watched"}})[0] == 201
    for i in range(12):
        assert server.request("POST", path, configmap(f"big-{i}", 1_000_000))[0] == 201
    before_closes = len(closed_watches(server))
    before = rss_mib(server.proc.pid)
    timed = silent_watch(server, f"{path}?watch=1&timeoutSeconds=2")
    stalled = [silent_watch(server, f"{path}?watch=1") for _ in range(3)]
    started = time.monotonic()
    peak = before
    while time.monotonic() - started < 4.0:
        peak = max(peak, rss_mib(server.proc.pid))
        time.sleep(0.1)
    # 12 MB listed to 4 clients that read nothing: the server holds a few writes of each, not 48 MB
    assert peak - before < 15, (before, peak)
    assert len(closed_watches(server)) == before_closes + 1  # the timed one, at its timeoutSeconds
    while len(closed_watches(server)) < before_closes + 4 and time.monotonic() - started < 20:
        time.sleep(0.2)
    waited = time.monotonic() - started
    assert len(closed_watches(server)) == before_closes + 4 and 9 < waited < 16, waited
    for sock in [timed, *stalled]:
        sock.close()
    # a reading watcher gets the whole list, and its stream ends at timeoutSeconds
    begun = time.monotonic()
    code, raw = server.request("GET", f"{path}?watch=1&timeoutSeconds=2", raw=True)
    assert code == 200 and 1.5 < time.monotonic() - begun < 8
    seen = sorted(json.loads(line)["object"]["metadata"]["name"] for line in raw.splitlines())
    assert [n for n in seen if n != "kube-root-ca.crt"] == sorted(f"big-{i}" for i in range(12))  # the CA publisher's
