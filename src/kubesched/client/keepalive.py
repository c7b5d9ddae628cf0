"""The writes a scheduler sends once per pod (bindings, events) on keep-alive HTTP/1.1 connections
of its own, as client-go's transport keeps its connections to the API server open.

kubernetes_asyncio sends through aiohttp, whose request and response machinery costs about three
times what the request itself does here (448 against 154 µs of client CPU a POST, measured against
kube-apiserver v1.37.2; see docs/benchmarks.md). These requests are small and all alike: a JSON
body out, a JSON Status or object back, so a plain HTTP/1.1 exchange over asyncio streams carries
them. The connection settings are the library's own (its configuration's server, CA, client
certificate, TLS server name and bearer token, refreshed as its calls refresh it); a configuration
with a proxy, or an environment naming one, keeps aiohttp (``for_api`` returns None).

An answer of 400 or more is raised as the library's ``ApiException`` with the body, as ``checked``
raises it; a connection that fails is an ``OSError`` (a reused connection the server had closed
before answering is tried once more on a new one, as Go's transport retries a request it knows was
not sent), and no answer within ``timeout`` is a ``TimeoutError``.
"""

from __future__ import annotations

import asyncio
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


class _Connection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        self.writer.close()


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

    async def json(self, method: str, path: str, body: Any, content_type: str = "application/json") -> Any:
        """Send ``body`` as JSON; the decoded answer (None if empty), ``ApiException`` for 400 or more."""
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
        return orjson.loads(answer) if answer else None

    async def _auth(self) -> dict[str, str]:
        """The token header as the library's calls send it: asked of the library for every request
        where its configuration refreshes the token through a hook (in-cluster, a service account's
        rotated file), else taken again only when the configuration's token changes (kubernetes_asyncio's
        kubeconfig loader writes a refreshed exec or OIDC token there)."""
        cfg = self._api.configuration
        token = cfg.api_key.get("BearerToken")
        if cfg.refresh_api_key_hook is None and self._auth_cache is not None and self._auth_cache[0] == token:
            return self._auth_cache[1]
        headers: dict[str, str] = {}
        await self._api.update_params_for_auth(headers, [], ["BearerToken"])
        self._auth_cache = (token, headers)
        return headers

    async def _exchange(self, request: bytes) -> tuple[int, str, bytes]:
        for reused in (True, False):
            conn = self._idle.pop() if reused and self._idle else None
            if conn is None:
                reused = False
                conn = _Connection(
                    *await asyncio.open_connection(
                        self._host,
                        self._port,
                        ssl=self._tls,
                        server_hostname=self._server_hostname if self._tls else None,
                        limit=MAX_HEAD,
                    )
                )
            try:
                conn.writer.write(request)
                head = await conn.reader.readuntil(b"\r\n\r\n")
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
                conn.close()
                nothing = isinstance(exc, asyncio.IncompleteReadError) and not exc.partial
                if reused and (nothing or isinstance(exc, ConnectionResetError)):
                    continue  # closed by the server while idle: the request was not read
                raise ConnectionResetError(f"the API server closed the connection: {exc!r}") from None
            try:
                status, reason, body, keep = await self._answer(conn.reader, head)
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
                conn.close()
                raise ConnectionResetError(f"the API server's answer was cut short: {exc!r}") from None
            if keep:
                self._idle.append(conn)
            else:
                conn.close()
            return status, reason, body
        raise AssertionError("unreachable")  # the second pass never continues

    @staticmethod
    async def _answer(reader: asyncio.StreamReader, head: bytes) -> tuple[int, str, bytes, bool]:
        """Status, reason, body and whether the connection stays open, from the head read so far."""
        lines = head[:-4].split(b"\r\n")
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
        if chunked:
            parts = []
            while True:
                size = int((await reader.readuntil(b"\r\n"))[:-2].split(b";")[0], 16)
                if size == 0:
                    while await reader.readuntil(b"\r\n") != b"\r\n":
                        pass  # trailers
                    break
                parts.append(await reader.readexactly(size))
                await reader.readexactly(2)
            body = b"".join(parts)
        elif length >= 0:
            body = await reader.readexactly(length)
        else:  # the body runs to the end of the connection
            body, keep = await reader.read(), False
        return int(code), reason.decode("latin-1"), body, keep

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()


async def write_json(
    api: k8s.ApiClient, writer: KeepAliveWriter | None, method: str, path: str, body: Any, content_type: str
) -> Any:
    """One JSON write and its decoded answer: on ``writer`` where there is one, else through the
    library's session (the remote client's per-pod writes, the event writer's events)."""
    if writer is not None:
        return await writer.json(method, path, body, content_type)
    return await checked(send_json(api, method, path, body, content_type))
