"""``RemoteClient``: the ClusterClient over HTTP to any Kubernetes API server, through
kubernetes_asyncio on an asyncio loop of its own thread.

Reads follow client-go's shared informers (``tools/cache``): each kind is listed, then watched
from the list's resourceVersion with bookmarks; a 410 Expired (an ERROR event or an HTTP 410)
relists and replays the difference as ADDED / MODIFIED / DELETED, as a reflector's Replace does.
The scheduler's ``get`` and ``list`` read those caches (upstream's listers). Writes are
kube-scheduler's: pods/binding, the pod status patch (strategic merge), deletes with a UID
precondition, pods/eviction, and events.k8s.io/v1 Events sent without waiting (the event
broadcaster is asynchronous upstream too). Objects stay plain dicts (raw responses, orjson):
the library's generated models are not built on the hot path.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.client.exceptions import ApiException

from kubesched import eventloop
from kubesched.api import errors
from kubesched.api.watch import ADDED, DELETED, MODIFIED, Watch, WatchEvent
from kubesched.client.connection import api_client
from kubesched.client.eventwriter import EventWriter
from kubesched.client.keepalive import KeepAliveWriter, write_json
from kubesched.client.ratelimit import TokenBucket
from kubesched.client.rest import api_error, checked, http_error, no_env_lookups, path_segment
from kubesched.clock import EPOCH_UNIX, rfc3339
from kubesched.cluster.event_conversion import EventRecorder
from kubesched.cluster.store import is_namespaced, not_found

log = logging.getLogger("kubesched.client")

WATCH_TIMEOUT = 300  # seconds a watch request lasts before the informer re-issues it (client-go: 5-10 min)
RETRY = 1.0
CALL_TIMEOUT = 30.0
SEND_GRACE = 3.0  # seconds close() waits for queued events


def _trimmed(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The pod informer's transform (``newPodInformer`` in pkg/scheduler/scheduler.go): a pod's
    ``metadata.managedFields`` are dropped as it enters the cache, which nothing the scheduler
    reads needs; they are most of a pod's nested maps, so the cache holds far fewer objects for
    the collector to walk."""
    if kind == "Pod":
        meta = obj.get("metadata")
        if meta is not None:
            meta.pop("managedFields", None)
    return obj


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


class RemoteClient:
    """A ClusterClient for a kubeconfig (None: in-cluster); ``close()`` stops its loop thread."""

    def __init__(
        self,
        kubeconfig: str | None,
        *,
        kinds: Iterable[str],
        reporting_controller: str = "default-scheduler",
        reporting_instance: str | None = None,
        qps: float = -1,
        burst: int = 0,
        field_selectors: Mapping[str, str] | None = None,
    ) -> None:
        """``field_selectors``: kinds whose informers list and watch with a selector, which the
        API server applies (the scheduler's pod informer). ``qps`` / ``burst``:
        ``clientConnection``'s client-side rate limit (< 0: none), for this client's requests and,
        separately, for the events' (kube-scheduler's event client is a clientset of its own)."""
        self.kubeconfig = kubeconfig
        # client-go's events broadcaster names the instance "<controller>-<hostname>" (NewRecorder)
        instance = reporting_instance or f"{reporting_controller}-{socket.gethostname()}"
        self.recorder = EventRecorder(reporting_controller, instance)
        self.kinds = list(dict.fromkeys(kinds))
        self._lock = threading.RLock()
        self._cache: dict[str, dict[tuple[str, str], dict[str, Any]]] = {k: {} for k in self.kinds}
        self._watches: list[Watch] = []
        self._synced = {k: threading.Event() for k in self.kinds}
        self._loop = eventloop.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kubesched-client", daemon=True)
        self._thread.start()
        self._tasks: list[asyncio.Future[Any]] = []
        self._outbox: deque[dict[str, Any]] = deque()  # events for the in-process writer
        self._outbox_scheduled = False
        # bindings sent without waiting: the scheduler's thread queues them, the loop starts them
        self._bindings: deque[tuple[concurrent.futures.Future[None], str, str, str, str]] = deque()
        self._bindings_scheduled = False
        self._limiter = TokenBucket(qps, burst)  # used on the loop's thread only
        self._api: k8s.ApiClient = self._call(api_client(kubeconfig), CALL_TIMEOUT)
        no_env_lookups(self._api)
        self._writer = KeepAliveWriter.for_api(self._api)
        self.core = k8s.CoreV1Api(self._api)
        # the events broadcaster: its writes share the client's loop, as client-go's run on goroutines
        # of the scheduler's process
        self._events: EventWriter = self._call(self._event_writer(qps, burst), CALL_TIMEOUT)
        self._listers: dict[str, Callable[..., Any]] = {
            "Pod": self.core.list_pod_for_all_namespaces,
            "Node": self.core.list_node,
            "Namespace": self.core.list_namespace,
            "Service": self.core.list_service_for_all_namespaces,
            "ReplicationController": self.core.list_replication_controller_for_all_namespaces,
            "ReplicaSet": k8s.AppsV1Api(self._api).list_replica_set_for_all_namespaces,
            "StatefulSet": k8s.AppsV1Api(self._api).list_stateful_set_for_all_namespaces,
            "PodDisruptionBudget": k8s.PolicyV1Api(self._api).list_pod_disruption_budget_for_all_namespaces,
            "PriorityClass": k8s.SchedulingV1Api(self._api).list_priority_class,
            "ResourceClaim": k8s.ResourceV1Api(self._api).list_resource_claim_for_all_namespaces,
            "DeviceClass": k8s.ResourceV1Api(self._api).list_device_class,
            "ResourceSlice": k8s.ResourceV1Api(self._api).list_resource_slice,
            # (newer than the client library's typed API: listed through the generic one)
            "DeviceTaintRule": functools.partial(
                k8s.CustomObjectsApi(self._api).list_cluster_custom_object, "resource.k8s.io", "v1", "devicetaintrules"
            ),
            "PodGroup": functools.partial(
                k8s.CustomObjectsApi(self._api).list_cluster_custom_object, "scheduling.k8s.io", "v1beta1", "podgroups"
            ),
            "PersistentVolume": self.core.list_persistent_volume,
            "PersistentVolumeClaim": self.core.list_persistent_volume_claim_for_all_namespaces,
            "StorageClass": k8s.StorageV1Api(self._api).list_storage_class,
            "CSINode": k8s.StorageV1Api(self._api).list_csi_node,
            "CSIDriver": k8s.StorageV1Api(self._api).list_csi_driver,
            "CSIStorageCapacity": k8s.StorageV1Api(self._api).list_csi_storage_capacity_for_all_namespaces,
            "VolumeAttachment": k8s.StorageV1Api(self._api).list_volume_attachment,
        }
        self.field_selectors = dict(field_selectors or {})
        for kind, selector in self.field_selectors.items():
            self._listers[kind] = functools.partial(self._listers[kind], field_selector=selector)
        for kind in self.kinds:
            self._tasks.append(asyncio.run_coroutine_threadsafe(self._informer(kind), self._loop))  # type: ignore[arg-type]

    # -- plumbing ----------------------------------------------------------------------------------
    def _call(self, coro: Coroutine[Any, Any, Any], timeout: float = CALL_TIMEOUT) -> Any:
        """Run a request on the client's loop and wait for it (from the scheduler's thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _flush_outbox(self) -> None:
        """On the loop: hand the events queued since the last wake-up to the writer (events
        queued while the loop is busy share one wake-up of it)."""
        self._outbox_scheduled = False
        while self._outbox:
            self._events.record(self._outbox.popleft())

    async def _event_writer(self, qps: float, burst: int) -> EventWriter:
        writer = EventWriter(self._api, qps, burst)
        self._tasks.append(asyncio.ensure_future(writer.run_rounds()))
        return writer

    async def _drain_sends(self, timeout: float) -> None:
        self._flush_outbox()
        await self._events.drain(timeout)

    @property
    def api(self) -> k8s.ApiClient:
        """The library's client, for callers that run on ``spawn``'s loop (the Lease lock)."""
        return self._api

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        """Run a coroutine on the client's loop (the leader elector) and return its future."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def _write(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """A write through the library (a raw call) and its decoded answer, as ``_request``."""
        return self._request(checked(coro))

    def _json(
        self, method: str, path: str, body: Any, content_type: str = "application/json", decode: bool = True
    ) -> Coroutine[Any, Any, Any]:
        """A JSON write of the kind sent for every pod (binding, status, results): on the
        keep-alive writer where there is one, else through the library's session."""
        return write_json(self._api, self._writer, method, path, body, content_type, decode)

    def _request(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """A write and its answer; an HTTP error is its ApiError, and so is a request that got
        no answer (refused, reset, timed out), as client-go returns both as errors."""
        try:
            return self._call(self._throttled(coro))
        except Exception as exc:
            raise _as_api_error(exc) from None

    async def _throttled(self, request: Coroutine[Any, Any, Any]) -> Any:
        """A request sent once the rate limiter allows it (client-go's ``tryThrottle``)."""
        await self._limiter.wait()
        return await request

    async def _answered(self, request: Coroutine[Any, Any, Any]) -> Any:
        """``_throttled``, its failure an ApiError as ``_request`` raises it."""
        try:
            return await self._throttled(request)
        except Exception as exc:
            raise _as_api_error(exc) from None

    def close(self) -> None:
        """Send what is queued (up to a few seconds), stop the informers and the loop."""
        with contextlib.suppress(Exception):
            self._call(self._drain_sends(SEND_GRACE), SEND_GRACE + 1)
        for t in self._tasks:
            t.cancel()
        with contextlib.suppress(Exception):
            self._call(self._api.close(), 5)
        if self._writer is not None:
            self._loop.call_soon_threadsafe(self._writer.close)
        self._loop.call_soon_threadsafe(self._events.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    # -- informers ---------------------------------------------------------------------------------
    async def _informer(self, kind: str) -> None:
        lister = self._listers[kind]
        rv = ""
        while True:
            try:
                if not rv:
                    rv = await self._relist(kind, lister)
                rv = await self._watch(kind, lister, rv)
            except asyncio.CancelledError:
                raise
            except ApiException as exc:
                if exc.status == 410:
                    rv = ""
                    continue
                log.warning("watch %s: %s", kind, api_error(exc).message)
                await asyncio.sleep(RETRY)
            except Exception as exc:  # connection refused, reset, timeouts: retry as a reflector does
                log.warning("watch %s: %s", kind, exc)
                await asyncio.sleep(RETRY)

    async def _relist(self, kind: str, lister: Callable[..., Any]) -> str:
        await self._limiter.wait()
        body = await checked(lister(_preload_content=False))
        items = body.get("items") or []
        rv = (body.get("metadata") or {}).get("resourceVersion") or ""
        api_version = body.get("apiVersion", "v1")
        with self._lock:
            cache = self._cache[kind]
            fresh: dict[tuple[str, str], dict[str, Any]] = {}
            for obj in items:
                _trimmed(kind, obj)
                obj.setdefault("apiVersion", api_version)
                obj.setdefault("kind", kind)
                fresh[_key(obj)] = obj
            if self._synced[kind].is_set():  # Replace: tell subscribers what changed while we were away
                for key, old in cache.items():
                    if key not in fresh:
                        self._publish(DELETED, kind, old, old)
                for key, obj in fresh.items():
                    prev = cache.get(key)
                    if prev is None:
                        self._publish(ADDED, kind, obj, None)
                    elif (prev.get("metadata") or {}).get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                        self._publish(MODIFIED, kind, obj, prev)
            self._cache[kind] = fresh
        self._synced[kind].set()
        return str(rv)

    async def _watch(self, kind: str, lister: Callable[..., Any], rv: str) -> str:
        await self._limiter.wait()
        resp = await lister(
            watch=True,
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=WATCH_TIMEOUT,
            _preload_content=False,
            _request_timeout=WATCH_TIMEOUT + 30,
        )
        if resp.status >= 400:
            body = await resp.read()
            resp.release()
            raise http_error(resp.status, resp.reason, body)
        pending = bytearray()  # the part of a line not yet received
        try:
            # read as the bytes arrive and split into lines here: aiohttp's line iterator costs
            # more than the decoding when thousands of pods change each second
            async for chunk in resp.content.iter_any():
                pending += chunk
                end = pending.rfind(b"\n")
                if end < 0:
                    continue
                lines = bytes(pending[:end]).split(b"\n")
                del pending[: end + 1]
                for line in lines:
                    if not line.strip():
                        continue
                    ev = orjson.loads(line)
                    type_, obj = ev.get("type"), ev.get("object") or {}
                    if type_ == "ERROR":
                        raise ApiException(status=obj.get("code", 500), reason=obj.get("message", ""))
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if type_ == "BOOKMARK":
                        continue
                    self._apply(kind, type_, _trimmed(kind, obj))
        finally:
            resp.release()
        return rv

    def _apply(self, kind: str, type_: str, obj: dict[str, Any]) -> None:
        key = _key(obj)
        with self._lock:
            cache = self._cache[kind]
            old = cache.get(key)
            if type_ == DELETED:
                cache.pop(key, None)
            else:
                cache[key] = obj
                if old is None:
                    type_ = ADDED
            self._publish(type_, kind, obj, old)

    def _publish(self, type_: str, kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        rv = (obj.get("metadata") or {}).get("resourceVersion") or "0"
        ev = WatchEvent(type_, kind, obj, old, int(rv) if str(rv).isdigit() else 0)
        for w in self._watches:
            w._offer(ev)

    def wait_synced(self, timeout: float | None = None) -> bool:
        return all(e.wait(timeout) for e in self._synced.values())

    # -- ClusterClient: reads ------------------------------------------------------------------------
    def watch_custom(self, kind: str, group: str, version: str, plural: str) -> None:
        """An informer of a custom resource through the generic API (its cluster-wide list)."""
        with self._lock:
            if kind in self._cache:
                return
            self.kinds.append(kind)
            self._cache[kind] = {}
            self._synced[kind] = threading.Event()
            self._listers[kind] = functools.partial(
                k8s.CustomObjectsApi(self._api).list_cluster_custom_object, group, version, plural
            )
        self._tasks.append(asyncio.run_coroutine_threadsafe(self._informer(kind), self._loop))  # type: ignore[arg-type]

    def list_and_watch(
        self, kinds: Iterable[str], field_selectors: Mapping[str, str] | None = None
    ) -> tuple[dict[str, list[dict[str, Any]]], Watch]:
        """From the informers' caches; ``field_selectors`` must be those the informers were
        started with (a shared informer's list options are its own, fixed when it starts)."""
        kinds = list(kinds)
        missing = [k for k in kinds if k not in self._cache]
        if missing:
            raise ValueError(f"no informer for {missing}")
        asked = {k: v for k, v in (field_selectors or {}).items() if k in kinds}
        started = {k: v for k, v in self.field_selectors.items() if k in kinds}
        if asked != started:
            raise ValueError(f"informers list with field selectors {started}, not {asked}")
        self.wait_synced()
        with self._lock:
            current = {k: list(self._cache[k].values()) for k in kinds}
            w = Watch(frozenset(kinds))
            self._watches.append(w)
        return current, w

    def list(self, kind: str, namespace: str | None = None) -> tuple[list[dict[str, Any]], int]:
        with self._lock:
            objs = list(self._cache.get(kind, {}).values())
        if namespace is not None:
            objs = [o for o in objs if (o.get("metadata") or {}).get("namespace") == namespace]
        return objs, 0

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        with self._lock:
            obj = self._cache.get(kind, {}).get((namespace if is_namespaced(kind) else "", name))
        if obj is None:
            raise not_found(kind, name)
        return obj

    # -- ClusterClient: writes -----------------------------------------------------------------------
    def bind(
        self, namespace: str, name: str, uid: str, node_name: str, annotations: dict[str, str] | None = None
    ) -> None:
        # the response is a Status, which the generated V1Binding model cannot hold: read it raw
        self._request(self._post_binding(namespace, name, uid, node_name, annotations))

    def bind_later(self, namespace: str, name: str, uid: str, node_name: str) -> concurrent.futures.Future[None] | None:
        """The binding queued for the client's loop; its future is settled by the answer. The
        bindings of one scheduling burst share a wake-up of the loop (as events do), instead of
        a thread-safe hand-off each."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._bindings.append((future, namespace, name, uid, node_name))
        if not self._bindings_scheduled:
            self._bindings_scheduled = True
            self._loop.call_soon_threadsafe(self._start_bindings)
        return future

    def _start_bindings(self) -> None:
        """On the loop: a task for each binding queued since the last wake-up (the flag is cleared
        first, so a binding queued while they start brings a wake-up of its own)."""
        self._bindings_scheduled = False
        while self._bindings:
            future, namespace, name, uid, node_name = self._bindings.popleft()
            if future.set_running_or_notify_cancel():
                task = self._loop.create_task(self._send_binding(namespace, name, uid, node_name))
                task.add_done_callback(functools.partial(_settle, future))

    async def _send_binding(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        await self._answered(self._post_binding(namespace, name, uid, node_name))  # its Status: Success

    def _post_binding(
        self, namespace: str, name: str, uid: str, node_name: str, annotations: dict[str, str] | None = None
    ) -> Coroutine[Any, Any, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid}
        if annotations:
            meta["annotations"] = annotations
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        path = f"/api/v1/namespaces/{path_segment(namespace)}/pods/{path_segment(name)}/binding"
        return self._json("POST", path, body, decode=False)  # its Status: Success, read by nobody

    def patch_pod_status(
        self, namespace: str, name: str, condition: dict[str, Any] | None, nominated_node_name: str | None
    ) -> None:
        """``util.PatchPodStatus``: a strategic merge patch of the condition (merged by type) and
        status.nominatedNodeName ("" clears it)."""
        status: dict[str, Any] = {}
        if condition is not None:
            stamped = condition.get("lastTransitionTime") or rfc3339(_now())
            status["conditions"] = [{**condition, "lastProbeTime": None, "lastTransitionTime": stamped}]
        if nominated_node_name is not None:
            status["nominatedNodeName"] = nominated_node_name or None
        if status:  # conditions merge by type: a strategic merge patch
            self._patch_status(namespace, name, status, "application/strategic-merge-patch+json")

    def _patch_status(self, namespace: str, name: str, status: dict[str, Any], content_type: str) -> None:
        path = f"/api/v1/namespaces/{path_segment(namespace)}/pods/{path_segment(name)}/status"
        self._request(self._json("PATCH", path, {"status": status}, content_type))

    def annotate_pod(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        path = f"/api/v1/namespaces/{path_segment(namespace)}/pods/{path_segment(name)}"
        patch = {"metadata": {"annotations": annotations}}
        self._request(self._json("PATCH", path, patch, "application/merge-patch+json"))

    def delete(
        self, kind: str, namespace: str, name: str, grace_period_seconds: int | None = None, *, uid: str | None = None
    ) -> None:
        if kind != "Pod":
            raise ValueError(f"the scheduler deletes pods only, not {kind}")
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        self._write(self.core.delete_namespaced_pod(name, namespace, body=body, _preload_content=False))

    def evict(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> None:
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if grace_period_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
        self._write(self.core.create_namespaced_pod_eviction(name, namespace, body, _preload_content=False))

    def update_claim_status(self, claim: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        meta = claim.get("metadata") or {}
        body = {**claim, "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "status": status}
        api = k8s.ResourceV1Api(self._api)
        return self._write(
            api.replace_namespaced_resource_claim_status(
                meta.get("name"), meta.get("namespace"), body, _preload_content=False
            )
        )

    def update_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        meta = claim.get("metadata") or {}
        body = {**claim, "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim"}
        api = k8s.ResourceV1Api(self._api)
        return self._write(
            api.replace_namespaced_resource_claim(meta.get("name"), meta.get("namespace"), body, _preload_content=False)
        )

    def settle(self, seconds: float) -> bool:
        time.sleep(seconds)
        return True

    def update_volume(self, pv: dict[str, Any]) -> dict[str, Any]:
        body = {**pv, "apiVersion": "v1", "kind": "PersistentVolume"}
        name = (pv.get("metadata") or {}).get("name")
        return self._write(self.core.replace_persistent_volume(name, body, _preload_content=False))

    def update_volume_claim(self, pvc: dict[str, Any]) -> dict[str, Any]:
        meta = pvc.get("metadata") or {}
        body = {**pvc, "apiVersion": "v1", "kind": "PersistentVolumeClaim"}
        return self._write(
            self.core.replace_namespaced_persistent_volume_claim(
                meta.get("name"), meta.get("namespace"), body, _preload_content=False
            )
        )

    def create_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        meta = claim.get("metadata") or {}
        api = k8s.ResourceV1Api(self._api)
        return self._write(api.create_namespaced_resource_claim(meta.get("namespace"), claim, _preload_content=False))

    def delete_claim(self, namespace: str, name: str) -> None:
        api = k8s.ResourceV1Api(self._api)
        self._write(api.delete_namespaced_resource_claim(name, namespace, _preload_content=False))

    def patch_pod_group_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        api = k8s.CustomObjectsApi(self._api)
        self._write(
            api.patch_namespaced_custom_object_status(
                "scheduling.k8s.io", "v1beta1", namespace, "podgroups", name, {"status": status}, _preload_content=False
            )
        )

    def patch_pod_status_fields(self, namespace: str, name: str, fields: dict[str, Any]) -> None:
        self._patch_status(namespace, name, fields, "application/merge-patch+json")

    def record_event(
        self,
        type_: str,
        reason: str,
        action: str,
        regarding: dict[str, Any],
        message: str,
        related: dict[str, Any] | None = None,
    ) -> None:
        ev = self.recorder.event(_now(), type_, reason, action, regarding, message, related)
        self._outbox.append(ev)
        if not self._outbox_scheduled:
            self._outbox_scheduled = True
            self._loop.call_soon_threadsafe(self._flush_outbox)


def _settle(future: concurrent.futures.Future[None], task: asyncio.Task[None]) -> None:
    """A binding's task done: its outcome given to the future the scheduler holds."""
    if task.cancelled():
        future.set_exception(errors.ApiError("request failed: the client was closed"))
        return
    exc = task.exception()
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(None)


def _as_api_error(exc: Exception) -> Exception:
    """An HTTP error as its ApiError, and a request that got no answer (refused, reset, timed out)
    as a 503 one, as client-go returns both as errors; anything else as it is."""
    if isinstance(exc, ApiException):
        return api_error(exc)
    if isinstance(exc, (aiohttp.ClientError, OSError, TimeoutError, concurrent.futures.TimeoutError)):
        err = errors.ApiError(f"request failed: {exc or type(exc).__name__}")
        err.code = 503
        return err
    return exc


def _now() -> float:
    return time.time() - EPOCH_UNIX
