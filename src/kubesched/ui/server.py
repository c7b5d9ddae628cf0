"""The web UI of ``kubesched up`` (kube-scheduler-simulator's web UI, on a live scheduler): static
files from the package, a server-sent event stream of nodes, pods and the scheduling queue,
a pod's scheduling results, YAML create/edit/delete and the scheduler configuration.

Reads come from the Store and the running Scheduler in process; writes go to the API server
over HTTPS as any client's would (server-side apply with strict field validation, delete), so
they get its validation, admission and Status errors; a body is read and decoded under the API
server's own limits (size, UTF-8, nesting and alias expansion), and every name in a path is a
checked, escaped path segment. A browser logs in with the one-time code ``kubesched up`` prints
(or by posting the cluster's token) and then holds a session cookie of the UI's own; tools may
send the cluster's token as a bearer token. Every answer carries a Content-Security-Policy and
no-framing headers, and a request whose Host is not the UI's is refused (DNS rebinding). Every
route but the static files and the login needs a session or the cluster's token."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import re
import ssl
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import httpx
import yaml
from aiohttp import web

from kubesched.api.errors import ApiError, BadRequest
from kubesched.api.validation import path_segment_errors
from kubesched.api.watch import DELETED
from kubesched.apiserver.handlers.bodies import read_body
from kubesched.apiserver.resources import BY_KIND, Resource
from kubesched.cluster.loader import YAML_LOADER, check_yaml_structure
from kubesched.cluster.store import Store
from kubesched.errors import InputError
from kubesched.scheduler.config import SchedulerConfig, parse_config
from kubesched.scheduler.config_defaults import to_document
from kubesched.scheduler.plugins import in_tree_registry
from kubesched.scheduler.scheduler import Scheduler
from kubesched.ui.session import Sessions, allowed_hosts, security_headers
from kubesched.ui.views import node_view, pod_view, queue_view, results_view

log = logging.getLogger("kubesched.ui")
STATIC = Path(__file__).parent / "static"
# kubectl's YAMLReader: a line starting with --- (then nothing but blanks or a comment) ends a document
DOCUMENT_SEPARATOR = re.compile(rb"^---[ \t]*(?:#[^\n]*)?\r?$", re.MULTILINE)
COOKIE = "kubesched-ui"
WRITE_HEADER = "X-Kubesched-UI"  # a cross-site form cannot set it: writes need it (CSRF)
FIELD_MANAGER = "kubesched-ui"
QUEUE_PERIOD = 0.25  # seconds between two looks at the queue while a stream is open
KEEPALIVE = 15.0
EDITABLE = (
    "Pod",
    "Node",
    "Namespace",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "PriorityClass",
    "PodDisruptionBudget",
    "ConfigMap",
)


MAX_NAME = 253  # a DNS subdomain, the longest name any kind takes


class SchedulerService(Protocol):
    """What the UI needs of the scheduler it shows (``embedded/service.py`` in ``up``): the
    running Scheduler, its configuration, how often it restarted, and a restart with a new one."""

    scheduler: Scheduler | None
    config: SchedulerConfig
    restarts: int

    async def restart(self, config: SchedulerConfig) -> None: ...


class UiServer:
    def __init__(
        self,
        store: Store,
        service: SchedulerService,
        token: str,
        api_url: str,
        ca: Path,
        *,
        config_path: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        secure: bool = False,
    ) -> None:
        self.store = store
        self.service = service
        self.token = token
        self.sessions = Sessions(token)
        self.hosts = allowed_hosts(host, port)
        self.secure = secure  # served over TLS: the session cookie is Secure
        self.headers = security_headers(STATIC / "index.html")
        self.api_url = api_url
        self.ca = ca
        self.config_path = config_path
        self._http: httpx.AsyncClient | None = None
        self._streams: set[asyncio.Event] = set()
        app = web.Application(middlewares=[self._auth], client_max_size=4 * 1024 * 1024)
        app.on_response_prepare.append(self._secure_headers)
        app.router.add_get("/", self._index)
        app.router.add_get("/login", self._login)
        app.router.add_post("/login", self._login)
        app.router.add_static("/static", STATIC, follow_symlinks=False)
        app.router.add_get("/api/state", self._state)
        app.router.add_get("/api/stream", self._stream)
        app.router.add_get("/api/pods/{namespace}/{name}", self._pod)
        app.router.add_get("/api/kinds", self._kinds)
        app.router.add_get("/api/objects/{kind}", self._objects)
        app.router.add_get("/api/yaml/{kind}/{namespace}/{name}", self._yaml)
        app.router.add_post("/api/apply", self._apply)
        app.router.add_delete("/api/objects/{kind}/{namespace}/{name}", self._delete)
        app.router.add_get("/api/config", self._config)
        app.router.add_put("/api/config", self._put_config)
        app.on_cleanup.append(self._close)
        self.app = app

    # -- authentication ------------------------------------------------------------------------
    def login_url(self, base: str) -> str:
        """A one-time login address (a new code each call) for ``base`` (``http://host:port``)."""
        return f"{base}/login?code={self.sessions.new_code()}"

    def _authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            return hmac.compare_digest(header[7:].encode(), self.token.encode())
        return self.sessions.valid(request.cookies.get(COOKIE, ""))

    async def _secure_headers(self, request: web.Request, response: web.StreamResponse) -> None:
        for name, value in self.headers.items():
            response.headers.setdefault(name, value)

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.host not in self.hosts:  # a rebound name pointing at this address
            return _status(403, "Forbidden", f"the web UI answers only for {', '.join(sorted(self.hosts))}")
        if request.path.startswith("/static/") or request.path == "/login":
            return await handler(request)
        if "token" in request.query:
            return _status(
                401,
                "Unauthorized",
                "the web UI no longer takes the cluster's token in its address: open the login address "
                "kubesched up printed, or log in at /login",
            )
        if not self._authorized(request):
            if request.path == "/":
                raise web.HTTPFound("/login")
            return _status(401, "Unauthorized", "log in first: open the login address kubesched up printed")
        if request.method not in ("GET", "HEAD") and request.headers.get(WRITE_HEADER) != "1":
            return _status(403, "Forbidden", f"writes need the {WRITE_HEADER} header")
        try:
            return await handler(request)
        except InputError as exc:
            return _status(400, "BadRequest", str(exc))
        except ApiError as exc:
            return _status(exc.code, exc.reason, exc.message)
        except (asyncio.CancelledError, ConnectionResetError, web.HTTPException):
            raise
        except Exception:  # a bug of ours: logged, answered without a traceback
            log.exception("internal error serving %s %s", request.method, request.path)
            return _status(500, "InternalError", "Internal error occurred: the web UI could not handle the request")

    async def _login(self, request: web.Request) -> web.StreamResponse:
        """``GET /login?code=`` spends a printed code; ``POST /login`` takes the cluster's token from a
        form (never the address). Either sets the session cookie and goes to the page."""
        session = None
        if request.method == "POST":
            form = await request.post()
            session = self.sessions.login(str(form.get("token") or ""))
            failed = "that is not this cluster's token"
        elif "code" in request.query:
            session = self.sessions.redeem(request.query["code"])
            failed = "this login address has been used or has expired; log in with the cluster's token"
        else:
            return web.Response(text=_LOGIN.format(note=""), content_type="text/html")
        if session is None:
            return web.Response(status=401, text=_LOGIN.format(note=f"<p>{failed}.</p>"), content_type="text/html")
        resp = web.HTTPFound("/")
        resp.set_cookie(COOKIE, session, httponly=True, samesite="Strict", path="/", secure=self.secure)
        return resp

    # -- pages and reads -----------------------------------------------------------------------
    async def _index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    def snapshot(self) -> dict[str, Any]:
        nodes = sorted((node_view(n) for n in self.store.list("Node")[0]), key=lambda n: n["name"])
        pods = sorted((pod_view(p) for p in self.store.list("Pod")[0]), key=lambda p: (p["namespace"], p["name"]))
        return {
            "nodes": nodes,
            "pods": pods,
            "queue": queue_view(self.service.scheduler),
            "scheduler": {"restarts": self.service.restarts, "config": self.config_path or "(defaults)"},
        }

    async def _state(self, request: web.Request) -> web.Response:
        return _json(self.snapshot())

    async def _pod(self, request: web.Request) -> web.Response:
        ns, name = request.match_info["namespace"], request.match_info["name"]
        try:
            obj = self.store.get("Pod", ns, name)
        except ApiError:
            return _status(404, "NotFound", f'pods "{name}" not found')
        events = [
            {
                "type": e.get("type"),
                "reason": e.get("reason"),
                "message": e.get("message") or e.get("note"),
                "count": e.get("count") or 1,
            }
            for e in self.store.list("Event", ns)[0]
            if (e.get("involvedObject") or e.get("regarding") or {}).get("uid") == obj["metadata"].get("uid")
        ]
        return _json(
            {"pod": pod_view(obj), "object": obj, "events": events, **results_view(obj, self.service.scheduler)}
        )

    async def _kinds(self, request: web.Request) -> web.Response:
        """Every kind the API server stores, the everyday ones first."""
        first = [k for k in EDITABLE if k in BY_KIND]
        rest = sorted(k for k, r in BY_KIND.items() if k not in first and "create" in r.verbs)
        return _json([*first, *rest])

    async def _objects(self, request: web.Request) -> web.Response:
        kind = self._kind(request.match_info["kind"])
        objs = self.store.list(kind.stored)[0]
        names = sorted((o["metadata"].get("namespace") or "", o["metadata"]["name"]) for o in objs)
        return _json([{"namespace": ns, "name": n} for ns, n in names])

    async def _yaml(self, request: web.Request) -> web.Response:
        kind = self._kind(request.match_info["kind"])
        ns = request.match_info["namespace"]
        path = self._path(kind, "" if ns == "-" else ns, request.match_info["name"])
        resp = await self._client().get(path)
        if resp.status_code != 200:
            return web.Response(status=resp.status_code, body=resp.content, content_type="application/json")
        obj = resp.json()
        (obj.get("metadata") or {}).pop("managedFields", None)
        return web.Response(text=yaml.safe_dump(obj, sort_keys=False), content_type="text/plain")

    # -- writes, through the API server --------------------------------------------------------
    async def _apply(self, request: web.Request) -> web.Response:
        """Each YAML document server-side applied (created or updated, as ``kubectl apply
        --server-side --force-conflicts``, with kubectl's strict field validation); the first
        failure is returned as the API server's Status, with the document's position. Each
        document is sent as written, for the API server to decode and check."""
        text = await _text(request, "the YAML")
        docs = [d for d in DOCUMENT_SEPARATOR.split(text) if d is not None and d.strip() and not _comment_only(d)]
        if not docs:
            return _status(400, "BadRequest", "no object in the YAML")
        applied = []
        for i, raw in enumerate(docs):
            try:
                doc = _decode_yaml(raw, f"document {i + 1}")
            except ApiError as exc:
                return _status(exc.code, exc.reason, exc.message)
            if doc is None:
                continue
            if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
                return _status(400, "BadRequest", f"document {i + 1}: not an object with metadata")
            kind = BY_KIND.get(str(doc.get("kind")))
            if kind is None or doc.get("apiVersion") != kind.group_version:
                return _status(
                    400,
                    "BadRequest",
                    f'document {i + 1}: no matches for kind "{doc.get("kind")}" in version "{doc.get("apiVersion")}"',
                )
            name = doc["metadata"].get("name")
            if not name or not isinstance(name, str):
                return _status(400, "BadRequest", f"document {i + 1}: metadata.name: Required value")
            ns = (doc["metadata"].get("namespace") or "default") if kind.namespaced else ""
            if not isinstance(ns, str):
                return _status(400, "BadRequest", f"document {i + 1}: metadata.namespace: must be a string")
            path = self._path(kind, ns, name, what=f"document {i + 1}: metadata")
            if doc["metadata"].get("resourceVersion") or doc["metadata"].get("managedFields"):
                doc["metadata"].pop("resourceVersion", None)
                doc["metadata"].pop("managedFields", None)
                body = json.dumps(doc, default=str).encode()  # a YAML timestamp is a string to the API
            else:
                body = raw
            resp = await self._client().patch(
                path,
                params={"fieldManager": FIELD_MANAGER, "force": "true", "fieldValidation": "Strict"},
                content=body,
                headers={"Content-Type": "application/apply-patch+yaml"},
            )
            if resp.status_code >= 300:
                return web.Response(status=resp.status_code, body=resp.content, content_type="application/json")
            applied.append({"kind": kind.kind, "namespace": ns, "name": name})
        return _json({"applied": applied})

    async def _delete(self, request: web.Request) -> web.Response:
        kind = self._kind(request.match_info["kind"])
        ns = request.match_info["namespace"]
        path = self._path(kind, "" if ns == "-" else ns, request.match_info["name"])
        resp = await self._client().delete(path)
        return web.Response(status=resp.status_code, body=resp.content, content_type="application/json")

    async def _config(self, request: web.Request) -> web.Response:
        doc = to_document(self.service.config, set(in_tree_registry()))
        return _json(
            {
                "yaml": yaml.safe_dump(doc, sort_keys=False),
                "restarts": self.service.restarts,
                "source": self.config_path or "(defaults)",
            }
        )

    async def _put_config(self, request: web.Request) -> web.Response:
        """A new KubeSchedulerConfiguration: validated as ``kubesched config validate``, then
        the scheduler restarts with it (an invalid one leaves the running scheduler alone)."""
        raw = _decode_yaml(await _text(request, "the configuration"), "the configuration")
        if not isinstance(raw, dict):
            return _status(400, "BadRequest", "the configuration must be a KubeSchedulerConfiguration object")
        cfg = parse_config(raw, "the web UI's configuration")
        cfg.feature_gates = self.service.config.feature_gates.merged(cfg.feature_gates)
        await self.service.restart(cfg)
        self._wake_all()
        return _json({"restarts": self.service.restarts})

    # -- the live stream -----------------------------------------------------------------------
    async def _stream(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: ``snapshot`` first, then ``node`` / ``pod`` (an object's view, or
        ``{"deleted": …}``) as the Store changes, and ``queue`` whenever the queue's view does."""
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        await resp.prepare(request)
        wake = asyncio.Event()
        self._streams.add(wake)
        watch = self.store.watch(["Node", "Pod"], notify=wake.set)
        try:
            snap = self.snapshot()
            last_queue = json.dumps(snap["queue"], sort_keys=True)
            await _send(resp, "snapshot", snap)
            loop = asyncio.get_running_loop()
            last_beat = loop.time()
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), QUEUE_PERIOD)
                wake.clear()
                for ev in watch.drain():
                    meta = ev.obj.get("metadata") or {}
                    if ev.type == DELETED:
                        body: dict[str, Any] = {
                            "deleted": True,
                            "namespace": meta.get("namespace"),
                            "name": meta["name"],
                        }
                    else:
                        body = node_view(ev.obj) if ev.kind == "Node" else pod_view(ev.obj)
                    await _send(resp, ev.kind.lower(), body)
                queue = queue_view(self.service.scheduler)
                text = json.dumps(queue, sort_keys=True)
                if text != last_queue:
                    last_queue = text
                    await _send(resp, "queue", queue)
                if loop.time() - last_beat > KEEPALIVE:
                    await resp.write(b": keepalive\n\n")
                    last_beat = loop.time()
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.store.stop_watch(watch)
            self._streams.discard(wake)
        return resp

    def _wake_all(self) -> None:
        for wake in self._streams:
            wake.set()

    # -- helpers -------------------------------------------------------------------------------
    def _kind(self, name: str) -> Resource:
        kind = BY_KIND.get(name)
        if kind is None:
            raise InputError(f"unknown kind {name!r}")
        return kind

    @staticmethod
    def _path(kind: Resource, namespace: str, name: str, what: str = "the path") -> str:
        """The object's API path; its namespace and name must each be one path segment (no ``/``,
        ``%``, ``.`` or ``..``, as ``path.IsValidPathSegmentName``), and are escaped (``?``, ``#``)."""
        for field, value in (("namespace", namespace), ("name", name)):
            if len(value) > MAX_NAME:  # no kind's name is longer; the URL would be past any server's line
                shown = json.dumps(value[:40])[:-1] + '..."'
                raise BadRequest(f"{what}: {field}: Invalid value: {shown}: must be no more than {MAX_NAME} characters")
            errors = path_segment_errors(value) if value or field == "name" else []
            if field == "name" and not value:
                errors = ["Required value"]
            if errors:
                raise BadRequest(f"{what}: {field}: Invalid value: {json.dumps(value)}: {errors[0]}")
        root = f"/api/{kind.version}" if not kind.group else f"/apis/{kind.group}/{kind.version}"
        scope = f"/namespaces/{quote(namespace, safe='')}" if kind.namespaced else ""
        return f"{root}{scope}/{kind.plural}/{quote(name, safe='')}"

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            ctx = ssl.create_default_context(cafile=str(self.ca))
            self._http = httpx.AsyncClient(
                base_url=self.api_url,
                verify=ctx,
                headers={"Authorization": f"Bearer {self.token}", "Accept": "application/json"},
                timeout=30.0,
                trust_env=False,
            )
        return self._http

    async def _close(self, app: web.Application) -> None:
        if self._http is not None:
            await self._http.aclose()


async def _text(request: web.Request, what: str) -> bytes:
    """A body under the API server's size limit (413), which must be UTF-8 (400)."""
    data = await read_body(request)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"{what} is not UTF-8: invalid byte at offset {exc.start}") from None
    return data


def _decode_yaml(data: bytes, what: str) -> Any:
    """One YAML document, refused with 400 when nested too deep, when its aliases expand past the
    limit (the scan runs before the parser composes anything), or when it does not parse."""
    try:
        check_yaml_structure(data.decode("utf-8"), what)
        return yaml.load(data, Loader=YAML_LOADER)
    except InputError as exc:
        raise BadRequest(str(exc)) from None
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise BadRequest(f"{what}: the YAML does not parse: {str(exc).splitlines()[0]}") from None


def _comment_only(doc: bytes) -> bool:
    return all(not line.strip() or line.lstrip().startswith(b"#") for line in doc.splitlines())


async def _send(resp: web.StreamResponse, event: str, data: Any) -> None:
    await resp.write(f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode())


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(
        status=status, text=json.dumps(data), content_type="application/json", headers={"Cache-Control": "no-store"}
    )


def _status(code: int, reason: str, message: str) -> web.Response:
    """A metav1.Status, as the API server answers errors."""
    return _json(
        {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "reason": reason, "code": code},
        code,
    )


_LOGIN = """<!doctype html><meta charset="utf-8"><title>kubesched</title>
<link rel="stylesheet" href="/static/style.css"><link rel="icon" href="data:,">
<body class="login"><h1>kubesched</h1>{note}
<p>Open the login address <code>kubesched up</code> printed, or paste the cluster's token (the
<code>token</code> of the kubeconfig in the data directory):</p>
<form method="post" action="/login"><input type="password" name="token" autocomplete="off" autofocus>
<button type="submit">Log in</button></form></body>"""
