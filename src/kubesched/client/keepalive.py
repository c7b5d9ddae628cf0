"""The writes a scheduler sends once per pod (bindings, events) on keep-alive HTTP/1.1 connections
of its own, as client-go's transport keeps its connections to the API server open.

kubernetes_asyncio sends through aiohttp, whose request and response machinery costs about three
times what the request itself does here (448 against 154 µs of client CPU a POST, measured against
kube-apiserver v1.37.2; see docs/benchmarks.md). These requests are small and all alike: a JSON
body out, a JSON Status or object back, so a plain HTTP/1.1 exchange carries them, its answer
parsed by the connection's protocol as the bytes arrive. The connection settings are the
library's own (its configuration's server, CA, client certificate, TLS server name and bearer
token, refreshed as its calls refresh it); a configuration with a proxy, or an environment naming
one, keeps aiohttp (``for_api`` returns None).

An answer of 400 or more is raised as the library's ``ApiException`` with the body, as ``checked``
raises it; a connection that fails is an ``OSError`` (a reused connection the server had closed
before answering is tried once more on a new one, as Go's transport retries a request it knows was
not sent), and no answer within ``timeout`` is a ``TimeoutError``.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
from collections import deque
from typing import Any
from urllib.parse import urlsplit

import orjson
from kubernetes_asyncio import client as k8s

from kubesched.client.rest import PROXY_VARIABLES, checked, http_error, send_json

CONNECTIONS = 32  # at most this many requests at once, each on a connection of its own
TIMEOUT = 60.0  # seconds for one request and its answer
MAX_HEAD = 64 * 1024  # bytes of status line and headers


def tls_context(cfg: k8s.Configuration) -> ssl.SSLContext:
    """The TLS settings kubernetes_asyncio's REST client gives aiohttp for ``cfg``."""
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, keyfile=cfg.key_file)
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if getattr(cfg, "disable_strict_ssl_verification", False):
        ctx.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return ctx


class _Lost(Exception):
    """The connection ended before its answer was whole; ``received``: whether any of it came."""

    def __init__(self, received: bool, why: BaseException | None) -> None:
        super().__init__(why or "closed")
        self.received = received


class _Connection(asyncio.Protocol):
    """One keep-alive connection, its answer parsed as the bytes arrive: no stream reader between
    the transport and the parse (asyncio's StreamReader wakes a waiter for every read, each a few
    Python calls, and a request made three of them)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop  # asked once: asyncio's get_running_loop compares the process id each time
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._buf = bytearray()
        self._waiter: asyncio.Future[tuple[int, str, bytes, bool]] | None = None
        self._received = False  # any byte of the awaited answer
        # the awaited answer's head once read: status, reason, length (-1: none), chunked, keep
        self._head: tuple[int, str, int, bool, bool] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, request: bytes) -> asyncio.Future[tuple[int, str, bytes, bool]]:
        """Write ``request``; the future holds status, reason, body and whether to keep the connection."""
        assert self.transport is not None
        self._waiter = self._loop.create_future()
        self._received = False
        self.transport.write(request)
        return self._waiter

    def data_received(self, data: bytes) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done():  # bytes nobody asked for: the connection is not to be trusted
            self.close()
            return
        self._received = True
        self._buf += data
        try:
            answer = self._parse()
        except ValueError as exc:
            self._fail(exc)
            return
        if answer is not None:
            self._waiter = None
            self._head = None
            if self._buf:  # more than one answer: never reused
                answer = (*answer[:3], False)
            waiter.set_result(answer)

    def _parse(self) -> tuple[int, str, bytes, bool] | None:
        """The whole answer when its last byte is in, else None (the head is kept once read)."""
        buf = self._buf
        if self._head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD:
                    raise ValueError("the answer's head is too long")
                return None
            self._head = _head(bytes(buf[:end]))
            del buf[: end + 4]
        code, reason, length, chunked, keep = self._head
        if chunked:
            found = _dechunked(buf)
            if found is None:
                return None
            body, used = found
            del buf[:used]
            return code, reason, body, keep
        if length >= 0:
            if len(buf) < length:
                return None
            body = bytes(buf[:length])
            del buf[:length]
            return code, reason, body, keep
        return None  # the body runs to the end of the connection

    def eof_received(self) -> bool:
        return False  # the transport closes, and connection_lost says what was left

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        head = self._head
        if head is not None and not head[3] and head[2] < 0 and exc is None:
            waiter = self._waiter
            if waiter is not None and not waiter.done():  # a body that ran to the end
                self._waiter = None
                waiter.set_result((head[0], head[1], bytes(self._buf), False))
                return
        self._fail(exc)

    def _fail(self, why: BaseException | None) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(_Lost(self._received, why))
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def _head(head: bytes) -> tuple[int, str, int, bool, bool]:
    """Status, reason, Content-Length (-1 if none), whether chunked, whether the connection stays."""
    lines = head.split(b"\r\n")
    version, _, rest = lines[0].partition(b" ")
    code, _, reason = rest.partition(b" ")
    length = -1
    chunked = False
    keep = version == b"HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name == b"connection":
            keep = b"close" not in value.lower()
    return int(code), reason.decode("latin-1"), length, chunked, keep


def _dechunked(buf: bytearray) -> tuple[bytes, int] | None:
    """A chunked body and the bytes it took (its trailers included), or None until it is all in."""
    parts: list[bytes] = []
    at = 0
    while True:
        eol = buf.find(b"\r\n", at)
        if eol < 0:
            return None
        size = int(bytes(buf[at:eol]).split(b";")[0], 16)
        at = eol + 2
        if size == 0:
            while True:  # trailers, up to an empty line
                eol = buf.find(b"\r\n", at)
                if eol < 0:
                    return None
                empty = eol == at
                at = eol + 2
                if empty:
                    return b"".join(parts), at
        if len(buf) < at + size + 2:
            return None
        parts.append(bytes(buf[at : at + size]))
        at += size + 2


class KeepAliveWriter:
    """JSON requests on a pool of keep-alive connections to one API server."""

    def __init__(self, api: k8s.ApiClient, connections: int = CONNECTIONS, timeout: float = TIMEOUT) -> None:
        cfg = api.configuration
        url = urlsplit(cfg.host)
        self._api = api
        self._secure = url.scheme == "https"
        self._host = url.hostname or "localhost"
        self._port = url.port or (443 if self._secure else 80)
        self._prefix = url.path.rstrip("/")
        self._tls = tls_context(cfg) if self._secure else None
        self._server_hostname = cfg.tls_server_name or None
        self._authority = url.netloc.rsplit("@", 1)[-1]
        # the headers every request carries: the library's defaults (its User-Agent), the host
        fixed = {k: v for k, v in api.default_headers.items() if k.lower() not in ("host", "content-length")}
        self._fixed = "\r\n".join(
            [f"Host: {self._authority}", "Accept: application/json"] + [f"{k}: {v}" for k, v in fixed.items()]
        )
        self._auth_cache: tuple[object, dict[str, str]] | None = None  # (the token, its headers)
        self._idle: deque[_Connection] = deque()
        self._slots = asyncio.Semaphore(connections)
        self.timeout = timeout

    @classmethod
    def for_api(cls, api: k8s.ApiClient) -> KeepAliveWriter | None:
        """A writer for the library client's server, or None where its requests may go through a
        proxy (the configuration's, or one the environment names, which aiohttp honours)."""
        cfg = api.configuration
        if cfg.proxy or any(os.environ.get(v) for v in PROXY_VARIABLES):
            return None
        if urlsplit(cfg.host).scheme not in ("http", "https"):
            return None
        return cls(api)

    async def json(
        self, method: str, path: str, body: Any, content_type: str = "application/json", decode: bool = True
    ) -> Any:
        """Send ``body`` as JSON; the decoded answer (None if empty, or not ``decode``d: a binding's
        Status, a created Event nobody reads), ``ApiException`` for 400 or more."""
        headers = self._auth_cached()
        if headers is None:
            headers = await self._auth()
        data = orjson.dumps(body)
        lines = [f"{method} {self._prefix}{path} HTTP/1.1", self._fixed]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        lines += [f"Content-Type: {content_type}", f"Content-Length: {len(data)}", "", ""]
        request = "\r\n".join(lines).encode("latin-1") + data
        async with self._slots, asyncio.timeout(self.timeout):
            status, reason, answer = await self._exchange(request)
        if status >= 400:
            raise http_error(status, reason, answer)
        return orjson.loads(answer) if answer and decode else None

    def _auth_cached(self) -> dict[str, str] | None:
        """The token header taken before, while the configuration's token is unchanged and nothing
        refreshes it through a hook (kubernetes_asyncio's kubeconfig loader writes a refreshed exec
        or OIDC token into the configuration); None: ask the library (``_auth``)."""
        cfg = self._api.configuration
        cache = self._auth_cache
        if cache is None or cfg.refresh_api_key_hook is not None or cache[0] != cfg.api_key.get("BearerToken"):
            return None
        return cache[1]

    async def _auth(self) -> dict[str, str]:
        """The token header as the library's calls send it: asked of the library for every request
        where its configuration refreshes the token through a hook (in-cluster, a service account's
        rotated file), else when the configuration's token changed."""
        cfg = self._api.configuration
        token = cfg.api_key.get("BearerToken")
        headers: dict[str, str] = {}
        await self._api.update_params_for_auth(headers, [], ["BearerToken"])
        self._auth_cache = (token, headers)
        return headers

    async def _exchange(self, request: bytes) -> tuple[int, str, bytes]:
        for reused in (True, False):
            conn = None
            while reused and self._idle and conn is None:
                conn = self._idle.pop()
                if conn.closed:
                    conn = None  # closed by the server while idle
            if conn is None:
                reused = False
                loop = asyncio.get_running_loop()
                _, conn = await loop.create_connection(
                    functools.partial(_Connection, loop),
                    self._host,
                    self._port,
                    ssl=self._tls,
                    server_hostname=self._server_hostname if self._tls else None,
                )
            try:
                status, reason, body, keep = await conn.send(request)
            except _Lost as lost:
                if reused and not lost.received:
                    continue  # closed by the server while idle: the request was not read
                if lost.received:
                    raise ConnectionResetError(f"the API server's answer was cut short: {lost}") from None
                raise ConnectionResetError(f"the API server closed the connection: {lost}") from None
            except BaseException:  # cancelled (the timeout): an answer may still come, for nobody
                conn.close()
                raise
            if keep:
                self._idle.append(conn)
            else:
                conn.close()
            return status, reason, body
        raise AssertionError("unreachable")  # the second pass never continues

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()


async def write_json(
    api: k8s.ApiClient,
    writer: KeepAliveWriter | None,
    method: str,
    path: str,
    body: Any,
    content_type: str,
    decode: bool = True,
) -> Any:
    """One JSON write and its decoded answer: on ``writer`` where there is one, else through the
    library's session (the remote client's per-pod writes, the event writer's events)."""
    if writer is not None:
        return await writer.json(method, path, body, content_type, decode)
    return await checked(send_json(api, method, path, body, content_type))
