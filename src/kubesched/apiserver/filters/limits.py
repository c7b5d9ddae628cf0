"""What the API server lets in at once: kube-apiserver's max-in-flight filter
(``apiserver/pkg/server/filters/maxinflight.go``: ``--max-requests-inflight`` 400 reads and
``--max-mutating-requests-inflight`` 200 writes, long-running watches not counted, 429
``TooManyRequests`` with ``Retry-After: 1`` past them), plus a cap on open connections and an
idle timeout, which Go's http.Server gives kube-apiserver (``IdleTimeout`` 90 s) and which keep an
idle TLS connection's ~300 KiB from adding up without bound."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import orjson

from kubesched.api.errors import TooManyRequests

MAX_REQUESTS_INFLIGHT = 400
MAX_MUTATING_REQUESTS_INFLIGHT = 200
MAX_CONNECTIONS = 1000
IDLE_TIMEOUT = 90.0
RETRY_AFTER = "1"
MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def too_many_requests() -> TooManyRequests:
    """``tooManyRequests`` of maxinflight.go."""
    return TooManyRequests("Too many requests, please try again later.", details={"retryAfterSeconds": 1})


@dataclass(slots=True)
class Limits:
    max_requests_inflight: int = MAX_REQUESTS_INFLIGHT
    max_mutating_requests_inflight: int = MAX_MUTATING_REQUESTS_INFLIGHT
    max_connections: int = MAX_CONNECTIONS
    idle_timeout: float = IDLE_TIMEOUT
    priority_and_fairness: bool = True  # ``--enable-priority-and-fairness`` (``fairness.py``)


class Inflight:
    """Counts the requests being served, reads and writes apart; 0 for a limit means none."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.reads = 0
        self.writes = 0

    def enter(self, method: str) -> bool:
        """Take a place for a request (False: over the limit, answer 429)."""
        if method in MUTATING:
            if self.limits.max_mutating_requests_inflight and self.writes >= self.limits.max_mutating_requests_inflight:
                return False
            self.writes += 1
        else:
            if self.limits.max_requests_inflight and self.reads >= self.limits.max_requests_inflight:
                return False
            self.reads += 1
        return True

    def leave(self, method: str) -> None:
        if method in MUTATING:
            self.writes -= 1
        else:
            self.reads -= 1


def _refusal() -> bytes:
    body = orjson.dumps(too_many_requests().status())
    head = (
        "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
        f"Retry-After: {RETRY_AFTER}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class _Refuse(asyncio.Protocol):
    """A connection over the cap: answered 429 at once and closed, whatever it sends."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a write transport, though not always a subclass of asyncio's (uvloop's TLS transport)
        cast(asyncio.WriteTransport, transport).write(_refusal())
        transport.close()


class _SilenceTimeout(asyncio.Protocol):
    """The HTTP handler's protocol, closed when nothing arrives within ``timeout`` of the
    connection opening. Once a request has come, the handler's keep-alive timeout governs; this
    covers a connection that never sends one, which aiohttp before 3.14 never closes."""

    def __init__(self, inner: asyncio.Protocol, timeout: float) -> None:
        self.inner = inner
        self.timeout = timeout
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.inner.connection_made(transport)
        self.timer = asyncio.get_running_loop().call_later(self.timeout, self._expire, transport)

    @staticmethod
    def _expire(transport: asyncio.BaseTransport) -> None:
        if not transport.is_closing():
            transport.close()

    def data_received(self, data: bytes) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


def limited_factory(
    factory: Callable[[], Any], open_connections: Callable[[], int], cap: int, idle_timeout: float = 0.0
) -> Callable[[], Any]:
    """A protocol factory that serves with ``factory`` while fewer than ``cap`` connections are
    open (0: no cap) and refuses the others; a connection silent for ``idle_timeout`` seconds
    from its start is closed (0: never)."""

    def make() -> asyncio.BaseProtocol:
        if cap and open_connections() >= cap:
            return _Refuse()
        protocol: asyncio.Protocol = factory()
        return _SilenceTimeout(protocol, idle_timeout) if idle_timeout > 0 else protocol

    return make
