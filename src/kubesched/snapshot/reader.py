"""Reading a snapshot from a live API server: each resource listed page by page (``limit`` and
``continue``, as client-go's pager lists), every list after the first at the first one's
resourceVersion (``resourceVersionMatch=Exact``) so that the state is one, where the server still
holds that revision; each page handed on as it arrives (the file is written as the lists are read,
so memory holds one page, not the cluster); a resource the server does not serve (or the user may
not list) is skipped and named."""

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
TERMINAL = ("Succeeded", "Failed")


@dataclass(slots=True)
class Snapshot:
    """What was read: where, when, at which revision, how many of each resource."""

    server: str
    server_version: str
    taken: float  # Unix time the first list was read
    resource_version: str = ""  # the first list's revision
    consistent: bool = True  # every list read at ``resource_version``
    counts: dict[str, int] = field(default_factory=dict)  # resource -> objects read
    finished_pods: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # resource -> why it is not in the snapshot


Page = Callable[[Snapshot, Listed, list[dict[str, Any]]], None]  # one page of a resource, as read


async def read(kubeconfig: str | None, context: str | None, on_page: Page, *, page: int = PAGE) -> Snapshot:
    """List every resource of ``SNAPSHOT_RESOURCES`` from the cluster the kubeconfig names,
    handing each page to ``on_page``."""
    try:
        api = await api_client(kubeconfig, context)
    except InputError:
        raise
    except Exception as exc:  # the library's ConfigException: no such context, a bad file
        raise InputError(f"cannot load the kubeconfig: {exc}", file=kubeconfig) from None
    try:
        version = await _get(api, "/version", "the server's version")
        snap = Snapshot(api.configuration.host, str(version.get("gitVersion") or ""), time.time())
        for listed in SNAPSHOT_RESOURCES:
            try:
                await _list(api, snap, listed, page, on_page)
            except ApiException as exc:
                if listed.plural in REQUIRED or exc.status not in (403, 404):
                    raise InputError(f"listing {listed.plural}: {api_error(exc).message}") from None
                snap.skipped[listed.plural] = "not served" if exc.status == 404 else "forbidden"
        return snap
    except ApiException as exc:
        raise InputError(f"reading the cluster at {api.configuration.host}: {api_error(exc).message}") from None
    except OSError as exc:
        raise InputError(f"cannot reach the API server at {api.configuration.host}: {exc}") from None
    finally:
        await api.close()


def take(kubeconfig: str | None, context: str | None, on_page: Page, *, page: int = PAGE) -> Snapshot:
    """``read`` on an event loop of its own, for a command line."""
    return eventloop.run(read(kubeconfig, context, on_page, page=page))


async def _get(api: Any, path: str, what: str) -> Any:
    try:
        return await get_json(api, path)
    except ApiException as exc:
        raise InputError(f"reading {what}: {api_error(exc).message}") from None


async def _list(api: Any, snap: Snapshot, listed: Listed, page: int, on_page: Page) -> None:
    """Every object of a resource, page by page: at the snapshot's revision once it has one
    (the newest when the server no longer holds it, which makes the snapshot not consistent)."""
    at = snap.resource_version if snap.consistent else ""
    query = f"limit={page}" + (f"&resourceVersion={quote(at)}&resourceVersionMatch=Exact" if at else "")
    cont = ""
    while True:
        path = f"{listed.path}?{query}" if not cont else f"{listed.path}?limit={page}&continue={quote(cont)}"
        try:
            body = await get_json(api, path)
        except ApiException as exc:
            if at and not cont and exc.status in (400, 410):  # compacted, or Exact not understood
                at, query, snap.consistent = "", f"limit={page}", False
                continue
            if exc.status == 410 and cont:  # the continue token expired while paging
                raise InputError(
                    f"listing {listed.plural}: the list's revision expired while it was paged "
                    "(the server compacted it); take the snapshot again, or with a larger --page"
                ) from None
            raise
        meta = body.get("metadata") or {}
        if not snap.resource_version:
            snap.resource_version = str(meta.get("resourceVersion") or "")
        items = [{"apiVersion": listed.api_version, "kind": listed.kind, **o} for o in body.get("items") or []]
        snap.counts[listed.plural] = snap.counts.get(listed.plural, 0) + len(items)
        if listed.plural == "pods":
            snap.finished_pods += sum(1 for p in items if (p.get("status") or {}).get("phase") in TERMINAL)
        on_page(snap, listed, items)
        cont = str(meta.get("continue") or "")
        if not cont:
            return
