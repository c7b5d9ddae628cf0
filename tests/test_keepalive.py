"""The keep-alive writer (``client/keepalive.py``) that carries a scheduler's per-pod writes: its
HTTP/1.1 exchanges against a server on loopback that answers as a Go server may (Content-Length,
chunked with a trailer, ``Connection: close``, an idle connection closed, an answer cut short, no
answer), and a sent binding (``RemoteClient.bind_later``) against kube-apiserver v1.37.2: bound, or
refused with its Status as the waiting ``bind`` is."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.client.exceptions import ApiException
from tests.live import wait_for
from tests.upstream import ControlPlane

from kubesched.api.errors import ApiError
from kubesched.client.keepalive import KeepAliveWriter
from kubesched.client.remote import RemoteClient

Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter, bytes], Awaitable[bool]]


async def read_request(reader: asyncio.StreamReader) -> bytes | None:
    """One request's head and body, or None at the end of the connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    return head + await reader.readexactly(length)


async def serve(answer: Answer) -> tuple[asyncio.Server, list[bytes], list[int]]:
    """A server on loopback: ``answer`` writes the response to each request and says whether the
    connection stays open; the requests and the number of connections are recorded."""
    requests: list[bytes] = []
    connections = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections[0] += 1
        while (request := await read_request(reader)) is not None:
            requests.append(request)
            if not await answer(reader, writer, request):
                break
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, requests, connections


def writer_for(server: asyncio.Server, timeout: float = 5.0) -> KeepAliveWriter:
    cfg = k8s.Configuration()
    cfg.host = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    cfg.api_key = {"BearerToken": "secret"}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    writer = KeepAliveWriter.for_api(k8s.ApiClient(cfg))
    assert writer is not None
    writer.timeout = timeout
    return writer


def response(status: str, body: bytes, *headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status}", "Content-Type: application/json", *headers]
    if not any(h.lower().startswith("transfer-encoding") for h in headers):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def test_a_json_answer_and_the_request_as_sent() -> None:
    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter, _req: bytes) -> bool:
        w.write(response("201 Created", b'{"kind":"Status","status":"Success"}'))
        return True

    async def go() -> tuple[Any, list[bytes], list[int]]:
        server, requests, connections = await serve(answer)
        writer = writer_for(server)
        got = [await writer.json("POST", "/api/v1/namespaces/a%2Fb/pods/p/binding", {"x": i}) for i in range(3)]
        writer.close()
        server.close()
        return got, requests, connections

    got, requests, connections = run(go())
    assert got == [{"kind": "Status", "status": "Success"}] * 3
    assert connections == [1]  # kept alive: one connection for the three
    head, _, body = requests[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /api/v1/namespaces/a%2Fb/pods/p/binding HTTP/1.1"
    assert {"authorization: Bearer secret", "content-type: application/json", "accept: application/json"} <= {
        line.lower().replace("bearer", "Bearer") for line in lines[1:]
    }
    assert json.loads(body) == {"x": 0}


@pytest.mark.parametrize("how", ["refresh-hook", "rewritten", "static-token"])
def test_the_token_is_the_librarys_each_time_it_can_change(how: str) -> None:
    """A configuration whose hook refreshes the token (in-cluster: the service account's rotated
    file) is asked for it on every request; a token rewritten in the configuration (kubernetes_asyncio's
    kubeconfig refresh of an exec or OIDC credential) is sent from the next request; a static one as
    it is."""
    asked = [0]

    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter, _req: bytes) -> bool:
        w.write(response("201 Created", b"{}"))
        return True

    def rotate(cfg: k8s.Configuration) -> None:
        asked[0] += 1
        cfg.api_key["BearerToken"] = f"token-{asked[0]}"

    async def go() -> list[bytes]:
        server, requests, _ = await serve(answer)
        writer = writer_for(server)
        cfg = writer._api.configuration
        if how == "refresh-hook":
            cfg.refresh_api_key_hook = rotate
        for i in range(3):
            await writer.json("POST", "/p", {"x": i})
            if how == "rewritten":
                cfg.api_key["BearerToken"] = f"token-{i + 2}"
        writer.close()
        server.close()
        return requests

    requests = run(go())
    sent = [next(line for line in r.split(b"\r\n") if line.lower().startswith(b"authorization:")) for r in requests]
    if how == "refresh-hook":
        assert asked[0] == 3
    if how != "static-token":
        assert sent == [
            f"authorization: Bearer {t}".encode() for t in ("token-1" if asked[0] else "secret", "token-2", "token-3")
        ]
    else:
        assert sent == [b"authorization: Bearer secret"] * 3


def test_a_chunked_answer_with_a_trailer_is_read_whole() -> None:
    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter, _req: bytes) -> bool:
        chunks = b'5\r\n{"a":\r\n4;ext=1\r\n[1,2\r\n2\r\n]}\r\n0\r\nX-Trailer: t\r\n\r\n'
        w.write(response("200 OK", chunks, "Transfer-Encoding: chunked"))
        return True

    async def go() -> tuple[Any, Any]:
        server, _, connections = await serve(answer)
        writer = writer_for(server)
        first = await writer.json("PATCH", "/p", {}, "application/merge-patch+json")
        second = await writer.json("PATCH", "/p", {}, "application/merge-patch+json")
        server.close()
        return (first, second), connections

    answers, connections = run(go())
    assert answers == ({"a": [1, 2]}, {"a": [1, 2]}) and connections == [1]


@pytest.mark.parametrize("framing", ["content-length", "chunked", "to-the-end"])
def test_an_answer_arriving_a_byte_at_a_time_is_read_whole(framing: str) -> None:
    """The answer is parsed as its bytes arrive: a head and a body split anywhere (here into single
    bytes, each sent on its own) make the same answer, and the connection is kept only where its
    framing says where the answer ends."""
    body = b'{"kind":"Status","status":"Success","code":201}'
    if framing == "chunked":
        raw = response(
            "201 Created",
            b"9\r\n" + body[:9] + b"\r\n" + f"{len(body) - 9:x}".encode() + b"\r\n" + body[9:] + b"\r\n0\r\n\r\n",
            "Transfer-Encoding: chunked",
        )
    elif framing == "to-the-end":
        raw = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n\r\n" + body
    else:
        raw = response("201 Created", body)

    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter, _req: bytes) -> bool:
        for i in range(len(raw)):
            w.write(raw[i : i + 1])
            await w.drain()
            await asyncio.sleep(0)
        return framing != "to-the-end"

    async def go() -> tuple[list[Any], list[int]]:
        server, _, connections = await serve(answer)
        writer = writer_for(server)
        got = [await writer.json("POST", "/x", {}) for _ in range(2)]
        writer.close()
        server.close()
        return got, connections

    got, connections = run(go())
    assert got == [json.loads(body)] * 2
    assert connections == [2 if framing == "to-the-end" else 1]


@pytest.mark.parametrize(
    ("headers", "connections"),
    [((), 1), (("Connection: close",), 2)],
    ids=["kept", "closed-by-header"],
)
def test_connection_close_is_honoured(headers: tuple[str, ...], connections: int) -> None:
    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter, _req: bytes) -> bool:
        w.write(response("200 OK", b"{}", *headers))
        return not headers

    async def go() -> list[int]:
        server, _, count = await serve(answer)
        writer = writer_for(server)
        await writer.json("POST", "/x", {})
        await writer.json("POST", "/x", {})
        server.close()
        return count

    assert run(go()) == [connections]


def test_an_idle_connection_the_server_closed_is_replaced_and_the_request_sent_once() -> None:
    """The server answers and closes without saying so (an idle timeout): the next request finds
    the connection closed before any answer and goes again on a new one, sent once in all."""

    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter, _req: bytes) -> bool:
        w.write(response("201 Created", b"{}"))
        await w.drain()
        return False

    async def go() -> tuple[list[bytes], list[int]]:
        server, requests, connections = await serve(answer)
        writer = writer_for(server)
        await writer.json("POST", "/first", {})
        await asyncio.sleep(0.05)
        await writer.json("POST", "/second", {})
        server.close()
        return requests, connections

    requests, connections = run(go())
    assert [r.split(b" ")[1] for r in requests] == [b"/first", b"/second"]
    assert connections == [2]


def test_a_refusal_is_the_librarys_api_exception_with_its_status() -> None:
    status = {"kind": "Status", "status": "Failure", "reason": "Conflict", "code": 409, "message": "taken"}

    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter, _req: bytes) -> bool:
        w.write(response("409 Conflict", json.dumps(status).encode()))
        return True

    async def go() -> ApiException:
        server, _, _ = await serve(answer)
        writer = writer_for(server)
        try:
            await writer.json("POST", "/x", {})
        except ApiException as exc:
            return exc
        finally:
            server.close()
        raise AssertionError("no exception")

    exc = run(go())
    assert exc.status == 409 and exc.reason == "Conflict" and json.loads(exc.body) == status


@pytest.mark.parametrize("how", ["cut-body", "no-answer"])
def test_a_broken_or_silent_server_is_an_error_not_a_hang(how: str) -> None:
    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter, _req: bytes) -> bool:
        if how == "cut-body":
            w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")
            await w.drain()
            return False
        await asyncio.sleep(10)
        return False

    async def go() -> BaseException:
        server, _, _ = await serve(answer)
        writer = writer_for(server, timeout=0.5)
        try:
            await writer.json("POST", "/x", {})
        except (OSError, TimeoutError) as exc:
            return exc
        finally:
            server.close()
        raise AssertionError("no exception")

    exc = run(go())
    assert isinstance(exc, ConnectionResetError if how == "cut-body" else TimeoutError)


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory):
    plane = ControlPlane(tmp_path_factory.mktemp("keepalive")).start()
    try:
        yield plane
    finally:
        plane.stop()


def test_a_sent_binding_binds_or_is_refused_as_a_waited_one(plane: ControlPlane) -> None:
    """Against kube-apiserver v1.37.2: the first binding binds; a second for the same pod fails
    with the same ApiError the waiting ``bind`` raises (409, kube-apiserver's message)."""
    plane.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    for name in ("sent", "waited"):
        plane.apply(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "pause"}]},
            }
        )
    client = RemoteClient(str(plane.kubeconfig), kinds=["Pod"])
    try:
        assert client.wait_synced(30)
        uid = plane.get("pod", "-n", "default", "sent")["metadata"]["uid"]
        future = client.bind_later("default", "sent", uid, "n1")
        assert isinstance(future, concurrent.futures.Future)
        assert future.result(30) is None
        assert plane.get("pod", "-n", "default", "sent")["spec"]["nodeName"] == "n1"
        again = client.bind_later("default", "sent", uid, "n1")
        assert again is not None
        with pytest.raises(ApiError) as sent_error:
            again.result(30)
        client.bind("default", "waited", "", "n1")
        with pytest.raises(ApiError) as waited_error:
            client.bind("default", "waited", "", "n1")
    finally:
        client.close()
    assert sent_error.value.code == waited_error.value.code == 409
    assert (
        sent_error.value.message
        == 'Operation cannot be fulfilled on pods/binding "sent": pod sent is already assigned to node "n1"'
    )
    assert waited_error.value.message == sent_error.value.message.replace("sent", "waited")


def test_the_pod_informer_drops_managed_fields_as_kube_schedulers_does(plane: ControlPlane) -> None:
    """kube-scheduler's pod informer drops ``metadata.managedFields`` as pods enter its cache
    (``newPodInformer``'s transform); other kinds keep them. Listed and watched pods alike."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "listed", "namespace": "default", "labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "pause"}]},
    }
    plane.apply(pod, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    client = RemoteClient(str(plane.kubeconfig), kinds=["Pod", "Node"])
    try:
        assert client.wait_synced(30)
        plane.apply({**pod, "metadata": {**pod["metadata"], "name": "watched"}})
        for name in ("listed", "watched"):
            served = plane.request("GET", f"/api/v1/namespaces/default/pods/{name}")[1]
            assert served["metadata"]["managedFields"]  # kube-apiserver keeps them
            cached = wait_for(lambda n=name: cached_pod(client, n), timeout=30)
            assert "managedFields" not in cached["metadata"]
            assert cached["metadata"]["labels"] == {"app": "a"}
        node = client.get("Node", "", "n1")
        assert node["metadata"]["managedFields"]
    finally:
        client.close()


def cached_pod(client: RemoteClient, name: str) -> dict[str, Any] | None:
    """The informer's copy of a pod of the default namespace, None until it has one."""
    return next((p for p in client.list("Pod", "default")[0] if p["metadata"]["name"] == name), None)


class SendingClient:
    """The embedded cluster's client with a binding that is sent (``bind_later``), as a remote
    client's is: the futures it handed out, or None when ``sends`` is off; ``bind`` refused alike."""

    def __init__(self, inner: Any, refusal: ApiError | None, sends: bool = True) -> None:
        self.inner = inner
        self.refusal = refusal
        self.sends = sends
        self.futures: list[concurrent.futures.Future[None]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def bind(self, *args: Any, **kwargs: Any) -> None:
        if self.refusal is not None:
            raise self.refusal
        self.inner.bind(*args, **kwargs)

    def bind_later(self, namespace: str, name: str, uid: str, node_name: str) -> concurrent.futures.Future[None] | None:
        if not self.sends:
            return None
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.futures.append(future)
        return future


def conflict() -> ApiError:
    from kubesched.api.errors import Conflict

    return Conflict('Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"')


@pytest.mark.parametrize(
    ("case", "sent"),
    [
        ("plain", True),
        ("a-prebind-to-run", False),
        ("plugin-metrics-sampled", True),
        ("results-recorded", False),
        ("client-binds-only-waiting", False),
    ],
)
@pytest.mark.parametrize("refused", [False, True], ids=["bound", "refused"])
def test_send_bind_sends_only_a_binding_that_is_one_request(case: str, sent: bool, refused: bool) -> None:
    """``Framework.send_bind``: sent when every PreBind plugin skipped at its pre-flight, no
    observer watches the cycle and the client can send; its status once answered is what
    ``run_bind`` returns for the same answer."""
    from kubesched.api.pod import pod_info_from
    from kubesched.framework.cycle_state import CycleState
    from kubesched.testing import Cluster

    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1"}}}
    c = Cluster(node)
    fwk = c.sched.profiles["default-scheduler"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u1"},
        "spec": {},
    }
    info = pod_info_from(pod)
    client = SendingClient(
        fwk.handle.client, conflict() if refused else None, sends=case != "client-binds-only-waiting"
    )
    fwk.handle.client = client
    state = CycleState()
    state.skip_pre_bind = {p.name for p in fwk.pre_bind}
    if case == "a-prebind-to-run":
        state.skip_pre_bind.discard(fwk.pre_bind[0].name)
    state.record_plugin_metrics = case == "plugin-metrics-sampled"
    timed: list[tuple[str, str, Any]] = []
    fwk.plugin_metrics = lambda plugin, point, args, ret, seconds: timed.append((plugin, point, ret))
    if case == "results-recorded":
        from kubesched.scheduler.resultstore import PodResults

        state.results = PodResults()
    out = fwk.send_bind(state, info, "n1")
    assert (out is not None) is sent
    if out is None:
        assert client.futures == [] or case == "client-binds-only-waiting"
        return
    assert client.futures == [out.future]
    if refused:
        out.future.set_exception(conflict())
    else:
        out.future.set_result(None)
    got = out.status()
    if case == "plugin-metrics-sampled":  # the Bind plugin timed as run_bind's sampled cycle times it
        assert [(p, point, r is None) for p, point, r in timed] == [("DefaultBinder", "Bind", not refused)]
        timed.clear()
        sampled = CycleState()
        sampled.record_plugin_metrics = True
        fwk.run_bind(sampled, info, "n1")
        assert [(p, point) for p, point, _ in timed] == [("DefaultBinder", "Bind")]
    else:
        assert timed == []
    waited = fwk.run_bind(CycleState(), info, "n1")
    assert (got is None) is (not refused)
    if refused:
        assert waited is not None and got is not None
        assert (got.code, got.reasons, got.plugin) == (waited.code, waited.reasons, waited.plugin)
        assert got.reasons == (
            'running Bind plugin "DefaultBinder": Operation cannot be fulfilled on pods/binding "p": '
            'pod p is already assigned to node "n1"',
        )


@pytest.mark.parametrize(
    ("env", "proxy", "kept"),
    [({}, None, True), ({"HTTPS_PROXY": "http://proxy:3128"}, None, False), ({}, "http://proxy:3128", False)],
    ids=["direct", "proxy-in-environment", "proxy-configured"],
)
def test_a_proxied_client_keeps_the_librarys_session(monkeypatch, env, proxy, kept) -> None:
    from kubesched.client.rest import PROXY_VARIABLES

    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    cfg = k8s.Configuration()
    cfg.host = "https://127.0.0.1:6443"
    cfg.proxy = proxy

    async def writer() -> KeepAliveWriter | None:
        api = k8s.ApiClient(cfg)  # its aiohttp session needs a running loop
        try:
            return KeepAliveWriter.for_api(api)
        finally:
            await api.close()

    assert (run(writer()) is not None) is kept
