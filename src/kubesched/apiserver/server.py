"""The embedded Kubernetes-compatible API server: kube-apiserver's REST surface over the Store.

aiohttp.web serves discovery, ``/version``, the OpenAPI stub kubectl validates against, and for
every resource of ``resources.RESOURCES`` the verbs get, list (label and field selectors),
watch (chunked newline-delimited JSON from a resourceVersion, bookmarks, selector transitions,
410 after compaction), create, update, patch (four content types), delete (graceful for bound
pods, preconditions) and deletecollection, plus pods/binding, pods/eviction and ``/status``.
Errors are ``metav1.Status`` bodies with upstream's codes and reasons; every request needs the
bearer token; bodies are size-limited; nothing a client sends yields a 500 or a traceback.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from kubesched.api.errors import (
    ApiError,
    BadRequest,
    Expired,
    Invalid,
    MethodNotAllowed,
    NotFound,
    RequestEntityTooLarge,
    Unauthorized,
    UnsupportedMediaType,
)
from kubesched.api.watch import ADDED, DELETED, MODIFIED, WatchEvent
from kubesched.apiserver import discovery
from kubesched.apiserver import faults as faults_api
from kubesched.apiserver.authn import token_matches
from kubesched.apiserver.bodies import JSON, check_object_size, decode_json, decode_yaml, read_body, read_object
from kubesched.apiserver.faults import Faults
from kubesched.apiserver.limits import RETRY_AFTER, Inflight, Limits, too_many_requests
from kubesched.apiserver.objects import check_meta, decode, field_validation_mode, invalid, prepare_for_update, validate
from kubesched.apiserver.patch import json_patch, merge_patch, strategic_merge_patch
from kubesched.apiserver.resources import BY_PATH, Resource
from kubesched.apiserver.selectors import (
    fields_match,
    labels_match,
    parse_field_selector,
    parse_label_selector,
)
from kubesched.apiserver.tables import table
from kubesched.cluster.disruption import evict
from kubesched.cluster.events import from_core, to_core
from kubesched.cluster.store import StorageError, Store

log = logging.getLogger("kubesched.apiserver")

MAX_LIMIT_PAGE = 500
BOOKMARK_EVERY = 30.0
# events a watcher may fall behind before it is closed (kube-apiserver's cacher closes a watcher
# whose channel stays full past its dispatch budget); the client lists and watches again
WATCH_QUEUE_LENGTH = 10_000
MAX_WATCH_SECONDS = 1800.0  # --min-request-timeout 1800: a watch without timeoutSeconds lasts up to this
PUBLIC_PATHS = {"/version", "/version/", "/healthz", "/livez", "/readyz"}
PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
# kinds whose strategy has AllowCreateOnUpdate true (pkg/registry/{coordination/lease,core/event,core/service}):
# a PUT of a missing object creates it; for every other kind it is NotFound
CREATE_ON_UPDATE = {"Lease", "Event", "Service"}


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def respond(body: Any, status: int = 200, content_type: str = JSON) -> web.Response:
    """A JSON response with ``Content-Type: application/json`` exactly (no charset: lightkube
    maps errors to ApiError only then)."""
    resp = web.Response(body=dumps(body), status=status)
    resp.headers["Content-Type"] = content_type
    return resp


def status_response(err: ApiError) -> web.Response:
    return respond(err.status(), err.code)


def success(code: int = 201) -> web.Response:
    return respond({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}, code)


def parse_bool(value: str | None) -> bool:
    """Go's ``strconv.ParseBool`` (clients send ``true``, ``True``, ``1``)."""
    return value in ("1", "t", "T", "true", "TRUE", "True")


def wants_table(accept: str) -> bool:
    for part in accept.split(","):
        params = {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in part.split(";")[1:])}
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return True
    return False


@dataclass(slots=True)
class Target:
    """A parsed resource path."""

    resource: Resource
    namespace: str | None  # None: all namespaces (or cluster-scoped)
    name: str | None
    subresource: str


class ApiServer:
    """The HTTP front of a Store; ``app`` is the aiohttp application."""

    def __init__(
        self,
        store: Store,
        token: str,
        *,
        address: str = "127.0.0.1:6443",
        faults: Faults | None = None,
        limits: Limits | None = None,
        watch_queue_length: int = WATCH_QUEUE_LENGTH,
    ) -> None:
        self.faults = faults  # None: fault injection is off
        self.limits = limits or Limits()
        self.inflight = Inflight(self.limits)
        self.watch_queue_length = watch_queue_length
        self._commit: asyncio.Future[None] | None = None
        if store.backend is not None:
            store.commit_soon = self._schedule_commit
        self.store = store
        self.token = token
        self.address = address
        self.app = web.Application(middlewares=[self._middleware])
        self.app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._closing = asyncio.Event()
        self._wakes: set[asyncio.Event] = set()
        # Prometheus registries /metrics serves (the in-process scheduler's, under `kubesched up`)
        self.metrics_registries: list[Any] = []

    def close_watches(self) -> None:
        """End every open watch (shutdown): clients re-watch elsewhere or after the restart."""
        self._closing.set()
        for wake in self._wakes:
            wake.set()

    # -- middleware: auth, errors --------------------------------------------------------------
    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.path not in PUBLIC_PATHS and not self._authorized(request):
            return status_response(Unauthorized("Unauthorized"))
        method = request.method
        # watches are long-running requests: maxinflight does not count them
        counted = not parse_bool(request.query.get("watch"))
        if counted and not self.inflight.enter(method):
            resp = status_response(too_many_requests())
            resp.headers["Retry-After"] = RETRY_AFTER
            return resp
        try:
            return await self._serve(request, handler)
        finally:
            if counted:
                self.inflight.leave(method)

    async def _serve(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        try:
            if self.faults is not None:
                if request.path == faults_api.PATH:
                    return await self._faults(request)
                verdict = await self.faults.before()
                if verdict == "drop":  # the connection closes without an answer
                    if request.transport is not None:
                        request.transport.abort()
                    return web.Response(status=503)
                if verdict == "fail":
                    raise faults_api.ServiceUnavailable(
                        "injected fault: the server is currently unable to handle the request"
                    )
            resp = await handler(request)
            await self.durable()  # nothing is answered before what it saw is committed
            return resp
        except ApiError as err:
            resp = status_response(err)
            if isinstance(err, RequestEntityTooLarge):
                resp.force_close()  # the rest of the body is never read
            return resp
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception:  # a bug of ours: logged, answered without a traceback, nothing half-written
            log.exception("internal error serving %s %s", request.method, request.path_qs)
            return status_response(ApiError("Internal error occurred: the server could not handle the request"))

    # -- group commit --------------------------------------------------------------------------
    def _schedule_commit(self) -> None:
        """The backend recorded a first write since its last commit: commit once the writes
        of this loop iteration are in (every handler that is ready runs first)."""
        asyncio.get_running_loop().call_soon(self._run_commit)

    def _run_commit(self) -> None:
        waiter, self._commit = self._commit, None
        try:
            self.store.commit()
        except StorageError as exc:  # the disk failed: the writes are not acknowledged
            log.error("committing to the backend failed: %s", exc.__cause__)
            if waiter is not None and not waiter.done():
                waiter.set_exception(exc)
            return
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def durable(self) -> None:
        """Wait until every write made so far is committed (StorageError if the commit failed)."""
        if not self.store.pending():
            return
        if self._commit is None:
            self._commit = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._commit)

    async def _faults(self, request: web.Request) -> web.StreamResponse:
        assert self.faults is not None
        faults_api.check_loopback(request.remote)
        now = asyncio.get_running_loop().time()
        if request.method == "PUT":
            self.faults.set(await read_object(request), now)
        elif request.method != "GET":
            raise MethodNotAllowed(
                f"the server does not allow this method on the requested resource ({request.method})"
            )
        return respond(self.faults.show(now))

    def _authorized(self, request: web.Request) -> bool:
        return token_matches(request.headers.get("Authorization"), self.token)

    # -- routing -------------------------------------------------------------------------------
    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        parts = [p for p in path.split("/") if p]
        if request.method not in ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"):
            raise MethodNotAllowed(
                f"the server does not allow this method on the requested resource ({request.method})"
            )
        if not parts:
            return respond(
                {"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/openapi/v2", "/readyz", "/version"]}
            )
        head = parts[0]
        if head in ("healthz", "livez", "readyz") and len(parts) == 1:
            return web.Response(text="ok", content_type="text/plain")
        if head == "version" and len(parts) == 1:
            return respond(discovery.VERSION)
        if head == "metrics" and len(parts) == 1 and request.method in ("GET", "HEAD"):
            from prometheus_client import generate_latest

            from kubesched.metrics import METRICS_CONTENT_TYPE

            body = b"".join(generate_latest(r) for r in self.metrics_registries)
            return web.Response(body=body, headers={"Content-Type": METRICS_CONTENT_TYPE})
        if head == "openapi":
            return self._openapi(request, parts)
        if head == "api":
            if len(parts) == 1:
                return self._discovery_root(request, legacy=True)
            if parts[1] != "v1":
                raise NotFound("the server could not find the requested resource")
            if len(parts) == 2:
                return respond(discovery.resource_list("", "v1"))
            return await self._resource(request, "", "v1", parts[2:])
        if head == "apis":
            if len(parts) == 1:
                return self._discovery_root(request, legacy=False)
            group = parts[1]
            if len(parts) == 2:
                doc = discovery.api_group(group)
                if doc is None:
                    raise NotFound("the server could not find the requested resource")
                return respond(doc)
            if len(parts) == 3:
                doc = discovery.resource_list(group, parts[2])
                if doc is None:
                    raise NotFound("the server could not find the requested resource")
                return respond(doc)
            return await self._resource(request, group, parts[2], parts[3:])
        raise NotFound("the server could not find the requested resource")

    def _discovery_root(self, request: web.Request, *, legacy: bool) -> web.Response:
        accept = request.headers.get("Accept", "")
        for version in ("v2", "v2beta1"):
            if f"g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList" in accept.replace(" ", ""):
                return respond(
                    discovery.aggregated(legacy, version),
                    content_type=f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList",
                )
        if legacy:
            return respond(discovery.api_versions(self.address))
        return respond(discovery.api_group_list())

    def _openapi(self, request: web.Request, parts: list[str]) -> web.Response:
        if parts[1:] == ["v2"]:
            if "protobuf" in request.headers.get("Accept", ""):
                # an empty gnostic Document: kubectl's client-side validation then defers to the server
                resp = web.Response(body=b"", status=200)
                resp.headers["Content-Type"] = discovery.OPENAPI_V2_PROTOBUF
                return resp
            return respond(discovery.swagger_json())
        raise NotFound("the server could not find the requested resource")

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        """``[namespaces/{ns}/]{plural}[/{name}[/{sub}]]``."""
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
            namespace, rest = rest[1], rest[2:]
        plural = rest[0]
        if group == "" and plural == "bindings" and namespace is not None and len(rest) == 1:
            return Target(BY_PATH[("", "v1", "pods")], namespace, None, "bindings")
        resource = BY_PATH.get((group, version, plural))
        if resource is None or len(rest) > 3:
            raise NotFound("the server could not find the requested resource")
        if not resource.namespaced and namespace is not None:
            raise NotFound("the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in resource.subresources:
            raise NotFound("the server could not find the requested resource")
        return Target(resource, namespace, name, sub)

    async def _resource(self, request: web.Request, group: str, version: str, rest: list[str]) -> web.StreamResponse:
        t = self._target(group, version, rest)
        method = request.method
        q = request.query
        if t.subresource == "bindings":
            if method != "POST":
                raise MethodNotAllowed("the server does not allow this method on the requested resource")
            body = await read_object(request)
            return self._bind(t.namespace or "default", str((body.get("metadata") or {}).get("name") or ""), body)
        if t.name is None:
            if method in ("GET", "HEAD"):
                if parse_bool(q.get("watch")):
                    return await self._watch(request, t)
                return self._list(request, t)
            if method == "POST":
                return await self._create(request, t)
            if method == "DELETE":
                return await self._delete_collection(request, t)
            raise MethodNotAllowed("the server does not allow this method on the requested resource")
        if t.resource.namespaced and t.namespace is None:
            raise NotFound("the server could not find the requested resource")
        if t.subresource == "binding":
            if method != "POST":
                raise MethodNotAllowed("the server does not allow this method on the requested resource")
            return self._bind(t.namespace or "default", t.name, await read_object(request))
        if t.subresource == "eviction":
            if method != "POST":
                raise MethodNotAllowed("the server does not allow this method on the requested resource")
            return await self._evict(request, t)
        if method in ("GET", "HEAD"):
            obj = self._get(t)
            if wants_table(request.headers.get("Accept", "")):
                return respond(table(t.resource.stored, [obj], self.store.clock.now(), None))
            return respond(obj)
        if method == "PUT":
            return await self._update(request, t)
        if method == "PATCH":
            return await self._patch(request, t)
        if method == "DELETE":
            if t.subresource:
                raise MethodNotAllowed("the server does not allow this method on the requested resource")
            return await self._delete(request, t)
        raise MethodNotAllowed("the server does not allow this method on the requested resource")

    # -- conversions ------------------------------------------------------------------------------
    def _out(self, t: Target, obj: dict[str, Any]) -> dict[str, Any]:
        """The stored object as this endpoint's version presents it."""
        if t.resource.group == "events.k8s.io":
            return from_core(obj)
        return obj

    def _in(self, t: Target, obj: dict[str, Any]) -> dict[str, Any]:
        if t.resource.group == "events.k8s.io":
            return to_core(obj)
        return obj

    def _ns(self, t: Target) -> str:
        return (t.namespace or "default") if t.resource.namespaced else ""

    def _get(self, t: Target) -> dict[str, Any]:
        obj = self.store.try_get(t.resource.stored, self._ns(t), t.name or "")
        if obj is None:
            raise NotFound(
                f'{t.resource.qualified} "{t.name}" not found',
                details={"name": t.name, "group": t.resource.group, "kind": t.resource.plural},
            )
        return self._out(t, obj)

    def _check_kind(self, t: Target, body: dict[str, Any]) -> None:
        kind, api_version = body.get("kind"), body.get("apiVersion")
        r = t.resource
        if kind is not None and kind != r.kind:
            raise BadRequest(f'{kind} in version "{api_version or r.version}" cannot be handled as a {r.kind}')
        if api_version is not None and api_version != r.group_version:
            raise BadRequest(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({r.group_version})"
            )

    def _check_namespace(self, t: Target, body: dict[str, Any]) -> None:
        meta = body.get("metadata")
        if meta is None:
            body["metadata"] = meta = {}
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be an object")
        if t.resource.namespaced:
            ns = meta.get("namespace")
            if ns and ns != t.namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = t.namespace
        else:
            meta.pop("namespace", None)

    # -- list and watch -----------------------------------------------------------------------------
    def _selectors(self, request: web.Request, t: Target) -> tuple[Any, Any]:
        q = request.query
        return (
            parse_label_selector(q.get("labelSelector")),
            parse_field_selector(
                q.get("fieldSelector"), t.resource.stored, events_v1=t.resource.group == "events.k8s.io"
            ),
        )

    def _list(self, request: web.Request, t: Target) -> web.Response:
        labels, fields = self._selectors(request, t)
        q = request.query
        if q.get("resourceVersion"):
            asked = _resource_version(q["resourceVersion"])
            if asked > self.store.resource_version:  # storage.NewTooLargeResourceVersionError
                raise TooLargeResourceVersion(asked, self.store.resource_version)
        objs, rv = self.store.list(t.resource.stored, self._ns(t) if t.namespace is not None else None)
        matched = [o for o in objs if labels_match(labels, o) and fields_match(fields, o)]
        matched.sort(key=lambda o: ((o.get("metadata") or {}).get("namespace") or "", o["metadata"].get("name", "")))
        start, list_rv = 0, rv
        token = q.get("continue")
        if token:
            start, list_rv = _decode_continue(token, self.store.compacted_rev)
        limit_text = q.get("limit")
        limit = _int(limit_text, "limit") if limit_text else 0
        cont = None
        if limit and limit > 0 and start + limit < len(matched):
            cont = _encode_continue(list_rv, start + limit)
            page = matched[start : start + limit]
        else:
            page = matched[start:]
        items = [self._out(t, o) for o in page]
        if wants_table(request.headers.get("Accept", "")):
            return respond(table(t.resource.stored, items, self.store.clock.now(), str(list_rv), cont))
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if cont:
            meta["continue"] = cont
        return respond(
            {"kind": f"{t.resource.kind}List", "apiVersion": t.resource.group_version, "metadata": meta, "items": items}
        )

    async def _watch(self, request: web.Request, t: Target) -> web.StreamResponse:
        q = request.query
        labels, fields = self._selectors(request, t)
        as_table = wants_table(request.headers.get("Accept", ""))
        bookmarks = parse_bool(q.get("allowWatchBookmarks"))
        timeout = float(_int(q["timeoutSeconds"], "timeoutSeconds")) if q.get("timeoutSeconds") else MAX_WATCH_SECONDS
        rv_text = q.get("resourceVersion") or ""
        if q.get("sendInitialEvents"):
            raise BadRequest("sendInitialEvents is not supported by this server; list, then watch")
        namespace = self._ns(t) if t.namespace is not None else None
        kind = t.resource.stored
        wake = asyncio.Event()
        self._wakes.add(wake)
        initial: list[dict[str, Any]] = []
        expired: Expired | None = None
        watch = None
        try:
            if rv_text in ("", "0"):
                objs, _ = self.store.list(kind, namespace)
                initial = [o for o in objs if labels_match(labels, o) and fields_match(fields, o)]
                watch = self.store.watch([kind], self.store.resource_version, notify=wake.set)
            else:
                watch = self.store.watch([kind], _resource_version(rv_text), notify=wake.set)
        except Expired as exc:
            expired = exc
        resp = web.StreamResponse(status=200)
        resp.headers["Content-Type"] = JSON
        resp.enable_chunked_encoding()
        await resp.prepare(request)

        def line(type_: str, obj: dict[str, Any]) -> bytes:
            if as_table and type_ not in ("ERROR", "BOOKMARK"):
                obj = table(kind, [obj], self.store.clock.now(), None)
            return dumps({"type": type_, "object": obj}) + b"\n"

        async def send(type_: str, obj: dict[str, Any]) -> None:
            await resp.write(line(type_, obj))

        if expired is not None:
            self._wakes.discard(wake)
            await send("ERROR", expired.status())
            return resp
        assert watch is not None
        watch.limit = self.watch_queue_length
        transport = request.transport
        ended = asyncio.Event()

        def fell_behind() -> None:
            """The client reads slower than events come: end the watch (gracefully if the
            handler gets to run, else by closing the connection), as the cacher does."""
            log.info("closing a watch of %s that fell %d events behind", t.resource.plural, watch.limit)
            wake.set()
            if transport is not None:
                asyncio.get_running_loop().call_later(2.0, _abort_unless, ended, transport)

        watch.on_overflow = fell_behind
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        last_sent = self.store.resource_version
        try:
            try:
                await self.durable()  # the initial list holds only what is stored
            except StorageError as exc:
                await send("ERROR", exc.status())
                return resp
            for i in range(0, len(initial), 500):
                await resp.write(b"".join(line(ADDED, self._out(t, o)) for o in initial[i : i + 500]))
            while not self._closing.is_set() and not watch.overflowed:
                # the events that piled up since the last wake-up go out in one chunk: one TLS
                # record and one read on the other side instead of one per event
                batch = []
                for ev in watch.drain():
                    out = _filter(ev, namespace, labels, fields)
                    if out is not None:
                        batch.append(line(out[0], self._out(t, out[1])))
                    last_sent = ev.resource_version
                if watch.overflowed:
                    break
                if batch:  # the store hands watchers committed events only
                    await resp.write(b"".join(batch))
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                wake.clear()
                if watch:
                    continue
                try:
                    await asyncio.wait_for(wake.wait(), min(remaining, BOOKMARK_EVERY))
                except TimeoutError:
                    if bookmarks and not watch:
                        rv = max(last_sent, self.store.resource_version)
                        await send(
                            "BOOKMARK",
                            {
                                "kind": t.resource.kind,
                                "apiVersion": t.resource.group_version,
                                "metadata": {"resourceVersion": str(rv)},
                            },
                        )
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            ended.set()
            self.store.stop_watch(watch)
            self._wakes.discard(wake)
        with contextlib.suppress(ConnectionResetError):
            await resp.write_eof()
        return resp

    # -- writes ------------------------------------------------------------------------------------
    async def _create(self, request: web.Request, t: Target) -> web.Response:
        body = await read_object(request)
        self._check_kind(t, body)
        body, warnings = self._validate_fields(request, t, body)
        body = self._in(t, body)
        self._check_namespace(t, body)
        return _warn(self._store_create(request, t, body), warnings)

    @staticmethod
    def _validate_fields(request: web.Request, t: Target, body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        return decode(t.resource, body, field_validation_mode(request.query), t.resource.version)

    def _store_create(self, request: web.Request, t: Target, body: dict[str, Any]) -> web.Response:
        """A create (POST, or a PUT or apply of an object that does not exist yet): the Store's
        admission chain (``objects.ServerAdmission``, priority) defaults and validates it."""
        check_object_size(body)
        created = self.store.create(t.resource.stored, body, dry_run=_dry_run(request))
        return respond(self._out(t, created), 201)

    def _store_update(self, request: web.Request, t: Target, body: dict[str, Any], old: dict[str, Any]) -> web.Response:
        """Validation and the write of an update (PUT or PATCH, main resource or ``/status``)."""
        new = prepare_for_update(t.resource, body, old, t.subresource)
        check_meta(t.resource, new)
        validate(t.resource, new)
        check_object_size(new)
        if _dry_run(request):
            return respond(self._out(t, new))
        return respond(self._out(t, self.store.update(t.resource.stored, new)))

    async def _update(self, request: web.Request, t: Target) -> web.Response:
        body = await read_object(request)
        self._check_kind(t, body)
        body, warnings = self._validate_fields(request, t, body)
        return _warn(self._update_with(request, t, body), warnings)

    def _update_with(self, request: web.Request, t: Target, body: dict[str, Any]) -> web.Response:
        body = self._in(t, body)
        self._check_namespace(t, body)
        name = (body.get("metadata") or {}).get("name")
        if name != t.name:
            raise BadRequest(f"the name of the object ({name}) does not match the name on the URL ({t.name})")
        old = self.store.try_get(t.resource.stored, self._ns(t), t.name or "")
        if old is None:
            if t.subresource or t.resource.kind not in CREATE_ON_UPDATE:
                self._get(t)  # NotFound, as upstream for resources without AllowCreateOnUpdate
            return self._store_create(request, t, body)
        return self._store_update(request, t, body, old)

    async def _patch(self, request: web.Request, t: Target) -> web.Response:
        ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype not in PATCH_TYPES:
            raise UnsupportedMediaType(
                "the body of the request was in an unknown format - accepted media types include: "
                + ", ".join(PATCH_TYPES)
            )
        data = await read_body(request)
        patch = decode_yaml(data) if ctype == "application/apply-patch+yaml" else decode_json(data)
        warnings: list[str] = []
        if isinstance(patch, dict):  # a merge, strategic or apply patch has the object's shape
            patch, warnings = self._validate_fields(request, t, patch)
        return _warn(self._patch_with(request, t, ctype, patch), warnings)

    def _patch_with(self, request: web.Request, t: Target, ctype: str, patch: Any) -> web.Response:
        stored = self.store.try_get(t.resource.stored, self._ns(t), t.name or "")
        if stored is None:
            if ctype == "application/apply-patch+yaml" and not t.subresource:
                if not isinstance(patch, dict):
                    raise BadRequest("the apply body must be an object")
                self._check_kind(t, patch)
                body = self._in(t, patch)
                self._check_namespace(t, body)
                if (body.get("metadata") or {}).get("name") != t.name:
                    raise BadRequest("the name of the object does not match the name on the URL")
                return self._store_create(request, t, body)
            self._get(t)
        assert stored is not None
        current = self._out(t, stored)
        if ctype == "application/json-patch+json":
            patched = json_patch(current, patch)
        elif not isinstance(patch, dict):
            raise BadRequest("the patch must be a JSON object")
        elif ctype == "application/merge-patch+json":
            patched = merge_patch(current, patch)
        else:  # strategic merge; apply merges the applied configuration the same way
            if ctype == "application/apply-patch+yaml":
                self._check_kind(t, patch)
                patch = {k: v for k, v in patch.items() if k not in ("apiVersion", "kind")}
            patched = strategic_merge_patch(current, patch)
        if not isinstance(patched, dict):
            raise BadRequest("the patched object must be an object")
        patched = self._in(t, patched)
        patched.setdefault("metadata", {})
        meta = patched["metadata"]
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be an object")
        rv_in_patch = _patch_rv(patch)
        meta["resourceVersion"] = rv_in_patch if rv_in_patch else stored["metadata"].get("resourceVersion")
        _check_name(meta, t.name or "", self._ns(t) if t.resource.namespaced else "")
        if not t.resource.namespaced:
            meta.pop("namespace", None)
        return self._store_update(request, t, patched, stored)

    async def _delete_options(self, request: web.Request) -> dict[str, Any]:
        data = await read_body(request)
        opts = decode_json(data) if data.strip() else {}
        if not isinstance(opts, dict):
            raise BadRequest("DeleteOptions must be an object")
        q = request.query
        if q.get("gracePeriodSeconds"):
            opts["gracePeriodSeconds"] = _int(q["gracePeriodSeconds"], "gracePeriodSeconds")
        grace = opts.get("gracePeriodSeconds")
        if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
            raise BadRequest("gracePeriodSeconds must be an integer")
        pre = opts.get("preconditions") or {}
        if not isinstance(pre, dict):
            raise BadRequest("preconditions must be an object")
        return opts

    async def _delete(self, request: web.Request, t: Target) -> web.Response:
        opts = await self._delete_options(request)
        self._get(t)
        pre = opts.get("preconditions") or {}
        if _dry_run(request):
            return respond(self._get(t))
        kind = t.resource.stored
        if kind == "Namespace":
            self._delete_namespace_contents(t.name or "")
        gone = self.store.delete(
            kind,
            self._ns(t),
            t.name or "",
            opts.get("gracePeriodSeconds"),
            uid=pre.get("uid"),
            resource_version=pre.get("resourceVersion"),
        )
        return respond(self._out(t, gone))

    def _delete_namespace_contents(self, namespace: str) -> None:
        """The namespace controller's job, done at once: everything in the namespace goes with it."""
        for kind in list(self.store.kinds()):
            if kind == "Namespace":
                continue
            objs, _ = self.store.list(kind, namespace)
            for o in objs:
                with contextlib.suppress(ApiError):
                    self.store.delete(kind, namespace, o["metadata"]["name"], 0)

    async def _delete_collection(self, request: web.Request, t: Target) -> web.Response:
        opts = await self._delete_options(request)
        labels, fields = self._selectors(request, t)
        objs, _ = self.store.list(t.resource.stored, self._ns(t) if t.namespace is not None else None)
        gone = []
        for o in [o for o in objs if labels_match(labels, o) and fields_match(fields, o)]:
            if _dry_run(request):
                gone.append(o)
                continue
            with contextlib.suppress(NotFound):
                gone.append(
                    self.store.delete(
                        t.resource.stored,
                        o["metadata"].get("namespace") or "",
                        o["metadata"]["name"],
                        opts.get("gracePeriodSeconds"),
                    )
                )
        return respond(
            {
                "kind": f"{t.resource.kind}List",
                "apiVersion": t.resource.group_version,
                "metadata": {"resourceVersion": str(self.store.resource_version)},
                "items": [self._out(t, o) for o in gone],
            }
        )

    # -- subresources ------------------------------------------------------------------------------
    def _bind(self, namespace: str, name: str, body: dict[str, Any]) -> web.Response:
        """pods/binding (``pkg/registry/core/pod/storage`` BindingREST): 201 Status Success."""
        if body.get("kind") not in (None, "Binding"):
            raise BadRequest(f'{body.get("kind")} in version "v1" cannot be handled as a Binding')
        meta = body.get("metadata") or {}
        target = body.get("target") or {}
        if not isinstance(meta, dict) or not isinstance(target, dict):
            raise BadRequest("a Binding needs metadata and target objects")
        if meta.get("name") and meta.get("name") != name:
            raise BadRequest(f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})")
        node = target.get("name")
        if not node or not isinstance(node, str):
            r = BY_PATH[("", "v1", "pods")]
            raise invalid(r, name, "target.name", "Required value")
        uid = meta.get("uid") or ""
        self.store.bind(namespace, name, uid, node)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and annotations:
            self.store.mutate(
                "Pod",
                namespace,
                name,
                lambda o: {
                    **o,
                    "metadata": {
                        **o["metadata"],
                        "annotations": {**(o["metadata"].get("annotations") or {}), **annotations},
                    },
                },
            )
        return success()

    async def _evict(self, request: web.Request, t: Target) -> web.Response:
        body = await read_object(request)
        if body.get("kind") not in (None, "Eviction"):
            raise BadRequest(f'{body.get("kind")} in version "v1" cannot be handled as a Eviction')
        opts = body.get("deleteOptions") or {}
        if not isinstance(opts, dict):
            raise BadRequest("deleteOptions must be an object")
        self._get(t)
        if not _dry_run(request):
            evict(self.store, t.namespace or "default", t.name or "", opts.get("gracePeriodSeconds"))
        return success()


# -- helpers ------------------------------------------------------------------------------------
def _resource_version(text: str) -> int:
    """A resourceVersion is an unsigned revision (``storage.APIObjectVersioner.ParseResourceVersion``);
    anything else is the storage layer's InvalidError, which list and watch answer with 400."""
    if not (text.isascii() and text.isdigit()) or int(text) >= 1 << 64:
        why = "value out of range" if text.isascii() and text.isdigit() else "invalid syntax"
        raise BadRequest(
            f"resourceVersion: Invalid value: {json.dumps(text)}: strconv.ParseUint: parsing {json.dumps(text)}: {why}"
        )
    return int(text)


class TooLargeResourceVersion(ApiError):
    """A list at a revision the store has not reached: 504 Timeout, as the watch cache answers
    once its wait for that revision runs out (``storage.NewTooLargeResourceVersionError``)."""

    code = 504
    reason = "Timeout"

    def __init__(self, asked: int, current: int) -> None:
        super().__init__(
            f"Timeout: Too large resource version: {asked}, current: {current}",
            details={
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1,
            },
        )


def _check_name(meta: dict[str, Any], name: str, namespace: str) -> None:
    """patch.go's ``checkName``: a patch may not rename an object or move it to another namespace
    (nor drop either)."""
    if meta.get("name") != name:
        given = meta.get("name") or ""
        raise BadRequest(f"the name of the object ({given}) does not match the name on the URL ({name})")
    if namespace and meta.get("namespace") != namespace:
        raise BadRequest(
            f"the namespace of the object ({meta.get('namespace') or ''}) does not match the namespace on the URL "
            f"({namespace})"
        )


def _int(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BadRequest(f"invalid {name}: {text!r} is not an integer") from None


def _warn(resp: web.Response, warnings: list[str]) -> web.Response:
    """One ``Warning: 299 - "<text>"`` header per warning, as kube-apiserver sends them."""
    for w in warnings:
        resp.headers.add("Warning", f"299 - {json.dumps(w)}")
    return resp


def _dry_run(request: web.Request) -> bool:
    values = request.query.getall("dryRun", [])
    for v in values:
        if v != "All":
            raise Invalid(f'dryRun: Unsupported value: "{v}": supported values: "All"')
    return bool(values)


def _patch_rv(patch: Any) -> str | None:
    if isinstance(patch, dict):
        rv = (patch.get("metadata") or {}).get("resourceVersion") if isinstance(patch.get("metadata"), dict) else None
        return str(rv) if rv else None
    return None


def _encode_continue(rv: int, start: int) -> str:
    return base64.urlsafe_b64encode(dumps({"rv": rv, "start": start})).decode()


def _decode_continue(token: str, compacted: int) -> tuple[int, int]:
    try:
        value = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        rv, start = int(value["rv"]), int(value["start"])
    except (binascii.Error, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        raise BadRequest(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        ) from None
    if rv < compacted:
        raise Expired(
            "The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter."
        )
    return start, rv


def _filter(ev: WatchEvent, namespace: str | None, labels: Any, fields: Any) -> tuple[str, dict[str, Any]] | None:
    """The event a watcher with these selectors sees: objects entering the selection are ADDED,
    leaving it DELETED (``cacheWatcher.convertToWatchEvent``)."""
    obj = ev.obj
    if namespace is not None and ((obj.get("metadata") or {}).get("namespace") or "") != namespace:
        return None
    now = labels_match(labels, obj) and fields_match(fields, obj)
    if ev.type != MODIFIED or (not labels and not fields):
        return (ev.type, obj) if now else None
    before = ev.old is None or (labels_match(labels, ev.old) and fields_match(fields, ev.old))
    if now and before:
        return MODIFIED, obj
    if now:
        return ADDED, obj
    if before:
        return DELETED, obj
    return None


def _abort_unless(ended: asyncio.Event, transport: asyncio.BaseTransport) -> None:
    """Abort a watch's connection unless its handler ended the response meanwhile."""
    if not ended.is_set() and isinstance(transport, asyncio.WriteTransport):
        transport.abort()
