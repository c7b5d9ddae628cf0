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
import json
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from kubesched.api.errors import (
    ApiError,
    Forbidden,
    MethodNotAllowed,
    NotFound,
    RequestEntityTooLarge,
    Unauthorized,
)
from kubesched.api.watch import WatchEvent
from kubesched.apiextensions.definitions import CustomResource
from kubesched.apiextensions.registry import CustomResources
from kubesched.apiserver.auth.authn import ADMIN, Authenticator, token_matches
from kubesched.apiserver.auth.escalation import EscalationCheck
from kubesched.apiserver.auth.impersonation import impersonate
from kubesched.apiserver.auth.rbac import PRIVILEGED_GROUP, Authorizer, UserInfo, forbidden_message
from kubesched.apiserver.auth.requestinfo import request_attributes
from kubesched.apiserver.commit import GroupCommit
from kubesched.apiserver.context import ServerContext
from kubesched.apiserver.filters import faults as faults_api
from kubesched.apiserver.filters.fairness import CLASSIFIED, WATCH_INITIALIZED, Fairness, FairnessSettings, Pool
from kubesched.apiserver.filters.faults import Faults
from kubesched.apiserver.filters.limits import RETRY_AFTER, Inflight, Limits, too_many_requests
from kubesched.apiserver.flowcontrol import metrics as flowcontrol_metrics
from kubesched.apiserver.flowcontrol.classify import Classification, FlowControl
from kubesched.apiserver.handlers import discovery, openapi
from kubesched.apiserver.handlers.bodies import read_object
from kubesched.apiserver.handlers.listwatch import WATCH_QUEUE_LENGTH, ListWatch
from kubesched.apiserver.handlers.request import (
    Target,
    parse_bool,
    respond,
    respond_encoded,
    status_response,
    wants_table,
)
from kubesched.apiserver.handlers.subresources import Subresources
from kubesched.apiserver.handlers.tables import table
from kubesched.apiserver.handlers.virtual import Virtual
from kubesched.apiserver.handlers.writes import Writes
from kubesched.apiserver.resources import BY_PATH, OFF_BY_DEFAULT
from kubesched.cluster.store import Store
from kubesched.health import LoopHealth

log = logging.getLogger("kubesched.apiserver")

PUBLIC_PATHS = {"/version", "/version/", "/healthz", "/livez", "/readyz"}
ANONYMOUS_USER = UserInfo("system:anonymous", groups=("system:unauthenticated",))
LOOPS_PATH = "/debug/kubesched/loops"  # each loop's last good sync and errors, as JSON


# the subresources kube-apiserver's BasicLongRunningRequestCheck counts as long-running (with watches)
LONG_RUNNING = frozenset({"attach", "exec", "proxy", "log", "portforward"})


def _long_running(path: str) -> bool:
    """A stream held open (``kubectl logs -f``, ``exec``): it takes no seat, or four would stop
    every other tenant. The subresource is read as authorization reads it (a pod may be named ``log``)."""
    return request_attributes(UserInfo(""), "GET", path, {}).subresource in LONG_RUNNING


class ApiServer(ListWatch, Writes, Subresources, Virtual, ServerContext):
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
        authenticator: Authenticator | None = None,
        health: LoopHealth | None = None,
        off: frozenset[tuple[str, str]] = OFF_BY_DEFAULT,
    ) -> None:
        """``off``: the built-in group versions not served (their feature gate is off;
        ``resources.disabled_versions``)."""
        self.off = off
        self.authenticator = authenticator  # None: the admin token alone
        self.health = health or LoopHealth()  # the loops beside the server (controllers, kubelet, scheduler)
        self.authorizer = Authorizer(store)
        self.escalation = EscalationCheck(self.authorizer)
        self.faults = faults  # None: fault injection is off
        self.limits = limits or Limits()
        self.inflight = Inflight(self.limits)
        self.fairness = Fairness(FairnessSettings(enabled=self.limits.priority_and_fairness))
        self.flow_control = FlowControl(store, self.fairness.settings.seats)
        self.flow_control.start()
        self.watch_queue_length = watch_queue_length
        self.commit = GroupCommit(store)
        self.store = store
        self.custom = CustomResources(store)
        self.token = token
        self.address = address
        self.app = web.Application(middlewares=[self._middleware])
        self.app.on_response_prepare.append(_matched_on_prepare)
        self.app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._closing = asyncio.Event()
        self._wakes: set[asyncio.Event] = set()
        self._encoded: deque[WatchEvent] = deque()
        self._paged: OrderedDict[tuple[Any, ...], list[dict[str, Any]]] = OrderedDict()
        # Prometheus registries /metrics serves (APF's; the in-process scheduler's, under `kubesched up`)
        self.metrics_registries: list[Any] = [flowcontrol_metrics.registry(self.fairness, self.flow_control)]

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
        user = self._authenticate(request)
        if user is None:
            if request.path not in PUBLIC_PATHS:
                return status_response(Unauthorized("Unauthorized"))
            user = ANONYMOUS_USER  # anyone may ask these; who asks still decides the flow
        else:
            try:
                user = impersonate(request.headers, user, self.authorizer)
            except ApiError as err:
                return status_response(err)
        request["user"] = user
        method = request.method
        # watches are long-running requests: maxinflight does not count them
        watching = parse_bool(request.query.get("watch"))
        counted = not watching
        if counted and not self.inflight.enter(method):
            resp = status_response(too_many_requests())
            resp.headers["Retry-After"] = RETRY_AFTER
            return resp
        try:
            user = request.get("user")
            # API Priority and Fairness: the FlowSchemas say the request's priority level and flow;
            # an exempt level's requests go straight in, the others wait their turn for its seats
            classified: Classification | None = None
            held: _Held | None = None
            # a watch is classified too and holds its seat until its initial events are out
            # (``WatchInitialized``); other long-running requests (logs, exec) bypass APF
            if (
                user is not None
                and self.fairness.settings.enabled
                and (watching or (counted and not _long_running(request.path)))
            ):
                classified = self.flow_control.classify(request_attributes(user, method, request.path, request.query))
                request[CLASSIFIED] = classified
                level = classified.level
                if level.exempt:
                    self.fairness.exempt(level.name, classified.schema)
                else:
                    seat = self.fairness.pool(level.name, level.seats, level.queue_length)
                    if not await self.fairness.acquire(classified.flow, seat):
                        refused = status_response(too_many_requests())
                        refused.headers["Retry-After"] = RETRY_AFTER
                        return refused
                    held = _Held(self.fairness, seat, classified.flow)
                    if watching:
                        request[WATCH_INITIALIZED] = held.release
            try:  # authorization comes after APF, as in kube-apiserver's handler chain
                public = request.path in PUBLIC_PATHS
                denied = self._authorize(request, user) if user is not None and not public else None
                return status_response(denied) if denied is not None else await self._serve(request, handler)
            finally:
                if held is not None:
                    held.release()
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
            await self.commit.durable()  # nothing is answered before what it saw is committed
            return resp
        except ApiError as err:
            resp = status_response(err)
            for w in err.warnings:
                resp.headers.add("Warning", f"299 - {json.dumps(w)}")
            if isinstance(err, RequestEntityTooLarge):
                resp.force_close()  # the rest of the body is never read
            return resp
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception:  # a bug of ours: logged, answered without a traceback, nothing half-written
            log.exception("internal error serving %s %s", request.method, request.path_qs)
            return status_response(ApiError("Internal error occurred: the server could not handle the request"))

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

    def _authenticate(self, request: web.Request) -> UserInfo | None:
        header = request.headers.get("Authorization")
        if self.authenticator is not None:
            return self.authenticator.authenticate(header)
        return ADMIN if token_matches(header, self.token) else None

    def _authorize(self, request: web.Request, user: UserInfo) -> Forbidden | None:
        """RBAC on every verb, subresource and namespace; ``system:masters`` needs no lookup."""
        if PRIVILEGED_GROUP in user.groups:
            return None
        attrs = request_attributes(user, request.method, request.path, request.query)
        if self.authorizer.allowed(attrs):
            return None
        if not attrs.resource_request:
            return Forbidden(forbidden_message(attrs, ""), details={})
        qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
        details: dict[str, Any] = {"kind": attrs.resource}
        if attrs.name:
            details["name"] = attrs.name
        if attrs.api_group:
            details["group"] = attrs.api_group
        return Forbidden(forbidden_message(attrs, qualified), details=details)

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
                {
                    "paths": [
                        "/api",
                        "/api/v1",
                        "/apis",
                        "/healthz",
                        "/livez",
                        "/openapi/v2",
                        "/openapi/v3",
                        "/readyz",
                        "/version",
                    ]
                }
            )
        head = parts[0]
        if head in ("healthz", "livez", "readyz") and len(parts) <= 3:
            return self._health_check(head, parts[1:], request.query)
        if path == LOOPS_PATH and request.method in ("GET", "HEAD"):
            return respond({"loops": self.health.report()})
        if head == "version" and len(parts) == 1:
            return respond(discovery.VERSION)
        if head == "metrics" and len(parts) == 1 and request.method in ("GET", "HEAD"):
            from prometheus_client import generate_latest

            from kubesched.leaderelection.leader_metric import METRICS_CONTENT_TYPE

            body = b"".join(generate_latest(r) for r in self.metrics_registries)
            return web.Response(body=body, headers={"Content-Type": METRICS_CONTENT_TYPE})
        if head == "openapi":
            return await self._openapi(request, parts)
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
                doc = discovery.api_group(group, self._custom_resources(), self.off)
                if doc is None:
                    raise NotFound("the server could not find the requested resource")
                return respond(doc)
            if len(parts) == 3:
                doc = discovery.resource_list(group, parts[2], self._custom_resources(), self.off)
                if doc is None:
                    raise NotFound("the server could not find the requested resource")
                return respond(doc)
            return await self._resource(request, group, parts[2], parts[3:])
        raise NotFound("the server could not find the requested resource")

    def _health_check(self, endpoint: str, only: list[str], query: Any) -> web.Response:
        """kube-apiserver's ``/healthz``, ``/livez`` and ``/readyz`` (``pkg/server/healthz``): ``ping``
        and, for ``/readyz`` and ``/healthz``, one ``loop/NAME`` check per loop beside the server, failed
        when the loop has not finished a sync for ``health.stall`` seconds; ``/readyz/NAME`` runs one
        check; ``?verbose`` lists each as ``[+]name ok`` or ``[-]name failed: reason withheld``."""
        checks: dict[str, bool] = {"ping": True}
        if endpoint != "livez":
            stuck = set(self.health.stuck())
            checks |= {f"loop/{name}": name not in stuck for name in sorted(self.health.loops)}
        if only:
            name = "/".join(only)
            if name not in checks:
                raise NotFound("the server could not find the requested resource")
            ok = checks[name]
            return web.Response(text="ok" if ok else f"internal server error: {name} failed", status=200 if ok else 500)
        failed = [n for n, ok in checks.items() if not ok]
        if not failed and "verbose" not in query:
            return web.Response(text="ok", content_type="text/plain")
        lines = [f"[+]{n} ok" if ok else f"[-]{n} failed: reason withheld" for n, ok in checks.items()]
        lines.append(f"{endpoint} check failed" if failed else f"{endpoint} check passed")
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain", status=500 if failed else 200)

    def _discovery_root(self, request: web.Request, *, legacy: bool) -> web.Response:
        accept = request.headers.get("Accept", "")
        for version in ("v2", "v2beta1"):
            if f"g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList" in accept.replace(" ", ""):
                return respond(
                    discovery.aggregated(legacy, version, self._custom_resources(), self.off),
                    content_type=f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList",
                )
        if legacy:
            return respond(discovery.api_versions(self.address))
        return respond(discovery.api_group_list(self._custom_resources(), self.off))

    def _custom_resources(self) -> list[CustomResource]:
        return list(self.custom.all())

    async def _openapi(self, request: web.Request, parts: list[str]) -> web.Response:
        """The documents are built once per feature-gate set and CRD set; the first build (reading
        the recorded documents, ~0.5 s) runs off the event loop so no other request waits on it."""
        if parts[1:] == ["v2"]:
            if "protobuf" in request.headers.get("Accept", ""):
                # an empty gnostic Document (the protobuf form is not served): kubectl reads v3
                resp = web.Response(body=b"", status=200)
                resp.headers["Content-Type"] = discovery.OPENAPI_V2_PROTOBUF
                return resp
            custom = tuple(self.custom.all())
            return respond_encoded(await asyncio.to_thread(openapi.v2_document, custom, self.off))
        if parts[1:] == ["v3"]:
            index = await asyncio.to_thread(openapi.v3_index, tuple(self.custom.all()), self.off)
            return respond(index)
        if parts[1:2] == ["v3"]:
            doc = await asyncio.to_thread(openapi.v3_lookup, parts[2:], tuple(self.custom.all()), self.off)
            if doc is not None:
                return respond_encoded(doc)
        raise NotFound("the server could not find the requested resource")

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        """``[namespaces/{ns}/]{plural}[/{name}[/{sub}]]``."""
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
            namespace, rest = rest[1], rest[2:]
        plural = rest[0]
        if group == "" and plural == "bindings" and namespace is not None and len(rest) == 1:
            return Target(BY_PATH[("", "v1", "pods")], namespace, None, "bindings")
        resource = BY_PATH.get((group, version, plural)) if (group, version) not in self.off else None
        if resource is None:
            cr = self.custom.by_path(group, version, plural)
            resource = cr.resource if cr is not None else None
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
        if t.resource.virtual:
            return await self._virtual(request, t)
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
                return await self._list(request, t)
            if method == "POST":
                return await self._create(request, t)
            if method == "DELETE" and "deletecollection" in t.resource.verbs:
                return await self._delete_collection(request, t)
            raise MethodNotAllowed("the server does not allow this method on the requested resource")
        if t.resource.namespaced and t.namespace is None:
            raise NotFound("the server could not find the requested resource")
        if t.subresource == "binding":
            if method != "POST":
                raise MethodNotAllowed("the server does not allow this method on the requested resource")
            return self._bind(t.namespace or "default", t.name, await read_object(request))
        if t.subresource == "log":
            if method not in ("GET", "HEAD"):
                raise MethodNotAllowed("the server does not allow this method on the requested resource")
            return self._log(t, request.query.get("container"))
        if t.subresource in ("exec", "attach", "portforward"):
            if method not in ("GET", "POST"):
                raise MethodNotAllowed("the server does not allow this method on the requested resource")
            return self._stream(t, request.query.get("container"))
        if t.subresource == "token":
            if self.authenticator is None:
                raise NotFound("the server could not find the requested resource")
            return await self._token_request(request, t)
        if t.subresource == "scale":
            return await self._scale(request, t)
        if t.subresource == "finalize":
            return await self._finalize(request, t)
        if t.subresource == "eviction":
            if method != "POST":
                raise MethodNotAllowed("the server does not allow this method on the requested resource")
            return await self._evict(request, t)
        if method in ("GET", "HEAD"):
            obj = self._get(t)
            if wants_table(request.headers.get("Accept", "")):
                return respond(
                    table(
                        t.resource.stored,
                        [obj],
                        self.store.clock.now(),
                        None,
                        include=request.query.get("includeObject"),
                        printer=self._printer(t),
                    )
                )
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


def _matched(resp: web.StreamResponse, classified: Classification) -> None:
    """The response headers that name the FlowSchema and priority level a request matched."""
    resp.headers["X-Kubernetes-PF-FlowSchema-UID"] = classified.schema_uid
    resp.headers["X-Kubernetes-PF-PriorityLevel-UID"] = classified.level.uid


async def _matched_on_prepare(request: web.Request, resp: web.StreamResponse) -> None:
    """Every answer to a classified request names its FlowSchema and level, a streamed one (a
    watch) included, as the APF filter sets them before the handler writes."""
    classified = request.get(CLASSIFIED)
    if classified is not None:
        _matched(resp, classified)


class _Held:
    """A request's seat, given back once: when its watch is initialized or when it ends."""

    __slots__ = ("_fairness", "_flow", "_seat")

    def __init__(self, fairness: Fairness, seat: Pool, flow: str) -> None:
        self._fairness: Fairness | None = fairness
        self._seat = seat
        self._flow = flow

    def release(self) -> None:
        if self._fairness is not None:
            self._fairness.release(self._seat, self._flow)
            self._fairness = None
