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
from typing import Any

import orjson

from kubesched.cluster.errors import TooManyRequests

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
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(_refusal())
        transport.close()


def limited_factory(factory: Callable[[], Any], open_connections: Callable[[], int], cap: int) -> Callable[[], Any]:
    """A protocol factory that serves with ``factory`` while fewer than ``cap`` connections are
    open (0: no cap) and refuses the others."""

    def make() -> asyncio.BaseProtocol:
        if cap and open_connections() >= cap:
            return _Refuse()
        protocol: asyncio.BaseProtocol = factory()
        return protocol

    return make
