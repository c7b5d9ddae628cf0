"""The kubernetes_asyncio plumbing every HTTP client here shares (the remote client, the event
writer, the lease lock): raw calls checked against their status, ApiErrors from Status bodies,
no environment lookups per request."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Coroutine
from typing import Any
from urllib.parse import quote

import aiohttp
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


def _session_options(rest: Any) -> dict[str, Any]:
    """The proxy and server name the library's session is configured with, for a raw request."""
    extra: dict[str, Any] = {}
    if rest.proxy:
        extra["proxy"] = rest.proxy
    if rest.proxy_headers:
        extra["proxy_headers"] = rest.proxy_headers
    if rest.server_hostname:
        extra["server_hostname"] = rest.server_hostname
    return extra


async def send_json(
    api: k8s.ApiClient, method: str, path: str, body: Any, content_type: str = "application/json"
) -> aiohttp.ClientResponse:
    """A raw JSON request through the library's session, default headers and bearer-token auth
    (refreshed as its generated calls refresh it), with the body serialized by orjson: the generated
    calls walk the body (``sanitize_for_serialization``) and encode it with the stdlib's json, which
    cost more than the request itself for a binding that carries scheduling results."""
    headers = {**api.default_headers, "Accept": "application/json", "Content-Type": content_type}
    await api.update_params_for_auth(headers, [], ["BearerToken"])
    rest = api.rest_client
    extra = _session_options(rest)
    return await rest.pool_manager.request(
        method, api.configuration.host + path, data=orjson.dumps(body), headers=headers, **extra
    )


async def get_json(api: k8s.ApiClient, path: str) -> Any:
    """A raw GET through the library's session and auth, decoded by orjson (``ApiException`` for
    an HTTP error): a list of thousands of objects is not walked into the generated models."""
    headers = {**api.default_headers, "Accept": "application/json"}
    await api.update_params_for_auth(headers, [], ["BearerToken"])
    rest = api.rest_client
    extra = _session_options(rest)
    return await checked(rest.pool_manager.request("GET", api.configuration.host + path, headers=headers, **extra))


def path_segment(value: str) -> str:
    """A name in a request path, escaped as the generated calls escape path parameters."""
    return quote(value, safe="")


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
