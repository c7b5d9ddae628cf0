"""Reading a snapshot from a live API server: each resource listed page by page (``limit`` and
``continue``, as client-go's pager lists), every list after the first at the first one's
resourceVersion (``resourceVersionMatch=Exact``) so that the state is one, where the server still
holds that revision; a resource the server does not serve (or the user may not list) is skipped
and named."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from kubernetes_asyncio.client.exceptions import ApiException

from kubesched import eventloop
from kubesched.client.connection import api_client
from kubesched.client.rest import api_error, get_json
from kubesched.errors import InputError
from kubesched.snapshot.resources import SNAPSHOT_RESOURCES, Listed

PAGE = 500  # kubectl's and client-go's pager's default chunk
# without these there is nothing to plan on: a snapshot that cannot list them fails
REQUIRED = frozenset({"nodes", "pods"})

Progress = Callable[[Listed, int], None]  # a resource and how many of its objects are read so far


@dataclass(slots=True)
class Snapshot:
    """A cluster's state as listed: the objects of each resource in ``SNAPSHOT_RESOURCES`` order."""

    server: str
    server_version: str
    taken: float  # Unix time the first list was read
    resource_version: str  # the revision every list was read at, "" when they could not be one
    objects: dict[Listed, list[dict[str, Any]]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # resource -> why it is not in the snapshot


async def read(
    kubeconfig: str | None, context: str | None = None, *, page: int = PAGE, progress: Progress | None = None
) -> Snapshot:
    """List every resource of ``SNAPSHOT_RESOURCES`` from the cluster the kubeconfig names."""
    try:
        api = await api_client(kubeconfig, context)
    except InputError:
        raise
    except Exception as exc:  # the library's ConfigException: no such context, a bad file
        raise InputError(f"cannot load the kubeconfig: {exc}", file=kubeconfig) from None
    try:
        version = await _get(api, "/version", "the server's version")
        snap = Snapshot(api.configuration.host, str(version.get("gitVersion") or ""), time.time(), "")
        exact = True
        for listed in SNAPSHOT_RESOURCES:
            try:
                items, rv, exact = await _list(api, listed, snap.resource_version if exact else "", page, progress)
            except ApiException as exc:
                why = api_error(exc)
                if listed.plural in REQUIRED or exc.status not in (403, 404):
                    raise InputError(f"listing {listed.plural}: {why.message}") from None
                snap.skipped[listed.plural] = "not served" if exc.status == 404 else "forbidden"
                continue
            if not snap.resource_version and exact:
                snap.resource_version = rv
            snap.objects[listed] = items
        if not exact:
            snap.resource_version = ""
        return snap
    except ApiException as exc:
        raise InputError(f"reading the cluster at {api.configuration.host}: {api_error(exc).message}") from None
    except OSError as exc:
        raise InputError(f"cannot reach the API server at {api.configuration.host}: {exc}") from None
    finally:
        await api.close()


def take(
    kubeconfig: str | None, context: str | None = None, *, page: int = PAGE, progress: Progress | None = None
) -> Snapshot:
    """``read`` on an event loop of its own, for a command line."""
    return eventloop.run(read(kubeconfig, context, page=page, progress=progress))


async def _get(api: Any, path: str, what: str) -> Any:
    try:
        return await get_json(api, path)
    except ApiException as exc:
        raise InputError(f"reading {what}: {api_error(exc).message}") from None


async def _list(
    api: Any, listed: Listed, at: str, page: int, progress: Progress | None
) -> tuple[list[dict[str, Any]], str, bool]:
    """Every object of a resource, page by page: at revision ``at`` when given (falling back to
    the newest when the server no longer holds it: the third value is then False)."""
    query = f"limit={page}"
    exact = True
    if at:
        query += f"&resourceVersion={quote(at)}&resourceVersionMatch=Exact"
    items: list[dict[str, Any]] = []
    cont = ""
    rv = ""
    while True:
        path = f"{listed.path}?{query}" if not cont else f"{listed.path}?limit={page}&continue={quote(cont)}"
        try:
            body = await get_json(api, path)
        except ApiException as exc:
            if at and not cont and exc.status in (400, 410):  # compacted, or Exact not understood
                at, exact, query = "", False, f"limit={page}"
                continue
            if exc.status == 410 and cont:  # the continue token expired while paging
                raise InputError(
                    f"listing {listed.plural}: the list's revision expired while it was paged "
                    "(the server compacted it); take the snapshot again, or with a larger --page"
                ) from None
            raise
        meta = body.get("metadata") or {}
        rv = rv or str(meta.get("resourceVersion") or "")
        items += [{"apiVersion": listed.api_version, "kind": listed.kind, **o} for o in body.get("items") or []]
        if progress is not None:
            progress(listed, len(items))
        cont = str(meta.get("continue") or "")
        if not cont:
            return items, rv, exact
