"""The kubernetes_asyncio plumbing every HTTP client here shares (the remote client, the event
writer, the lease lock): raw calls checked against their status, ApiErrors from Status bodies,
no environment lookups per request."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Coroutine
from typing import Any

import orjson
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.client.exceptions import ApiException

from kubesched.api import errors


def api_error(exc: ApiException) -> errors.ApiError:
    """The ApiError for an HTTP error, from the Status body the server sent."""
    message, reason = exc.reason or "", ""
    with contextlib.suppress(Exception):
        body = orjson.loads(exc.body)
        message, reason = body.get("message", message), body.get("reason", "")
    for cls in errors.ApiError.__subclasses__():
        if cls.code == exc.status and (not reason or cls.reason == reason):
            return cls(message)
    err = errors.ApiError(message)
    err.code = exc.status or 500
    return err


def http_error(status: int, reason: str | None, body: bytes | None) -> ApiException:
    """An ApiException carrying the response's Status body (its constructor takes no body)."""
    exc = ApiException(status=status, reason=reason)
    exc.body = body
    return exc


async def checked(coro: Coroutine[Any, Any, Any]) -> Any:
    """Await a raw (``_preload_content=False``) call: the library leaves HTTP errors unraised then."""
    resp = await coro
    try:
        body = await resp.read()
    finally:
        resp.release()
    if resp.status >= 400:
        raise http_error(resp.status, resp.reason, body)
    return orjson.loads(body) if body else None


PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def no_env_lookups(api: k8s.ApiClient) -> None:
    """kubernetes_asyncio's session trusts the environment, so aiohttp looks up ~/.netrc and the
    proxy variables on a worker thread for every request: two thread hops per bind, which cost
    more than the bind itself. client-go reads no netrc and only the proxy variables, so the
    lookups stay on only when a proxy variable is set."""
    if any(os.environ.get(v) for v in PROXY_VARIABLES):
        return
    session = getattr(api.rest_client, "pool_manager", None)
    if session is not None and hasattr(session, "_trust_env"):
        session._trust_env = False
