"""Creating a cluster's objects from manifests, as ``kubectl create`` of many files would: in
dependency order (namespaces, classes, nodes, budgets, the rest, pods last), missing namespaces made
with a warning, an unknown kind refused as kubectl's "no matches for kind", objects admission refuses
returned as rejected; a pod the input places on a node runs there."""

from __future__ import annotations

from typing import Any

from kubesched.api.errors import AlreadyExists, ApiError
from kubesched.apiextensions.registry import store_kind
from kubesched.clock import rfc3339
from kubesched.cluster import admission
from kubesched.cluster.loader import Manifest, warn
from kubesched.cluster.store import KNOWN_KINDS, Store, is_namespaced
from kubesched.controllers.cronjob import next_job
from kubesched.errors import InputError

CREATE_ORDER = {
    "Namespace": 0,
    "CustomResourceDefinition": 0,
    "PriorityClass": 1,
    "RuntimeClass": 1,
    "Node": 2,
    "PodDisruptionBudget": 3,
    "DeviceClass": 4,
    "ResourceSlice": 4,
    "ResourceClaimTemplate": 4,
    "ResourceClaim": 4,
    "StorageClass": 4,
    "CSIDriver": 4,
    "CSINode": 4,
    "CSIStorageCapacity": 4,
    "PersistentVolume": 4,
    "Pod": 9,
}
NAMESPACE_LABEL = "kubernetes.io/metadata.name"  # set on every namespace by NamespaceLifecycle admission
# kinds only the workload controllers act on: simulate and size run none
CONTROLLER_ONLY = frozenset({"Deployment", "DaemonSet", "Job", "CronJob"})
# the workload kinds whose pods a controller makes, and the controllers that make them (a CronJob's
# next run is made here as its controller would make it: see ``create_objects``)
POD_MAKERS: dict[str, tuple[str, ...]] = {
    "Deployment": ("deployment-controller", "replicaset-controller"),
    "ReplicaSet": ("replicaset-controller",),
    "StatefulSet": ("statefulset-controller",),
    "DaemonSet": ("daemonset-controller",),
    "Job": ("job-controller",),
    "CronJob": ("job-controller",),
}


def pod_makers(manifests: list[Manifest]) -> list[str]:
    """The controllers that make the pods of the workloads among ``manifests``, in their order."""
    out: list[str] = []
    for m in manifests:
        for name in POD_MAKERS.get(m.kind, ()):
            if name not in out:
                out.append(name)
    return out


def create_as_given(store: Store, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Create one object of a cluster's state: defaulted and checked as any create, keeping the
    uid, creation time, status and priority it is given (``Store.as_given``: owner references
    and a snapshot's nominations stay true); a pod the input places on a node, with no phase given,
    runs there when no kubelet runs (the store's ``on_bind``, ``kubelet.instant``): Running and
    scheduled, so that budgets count it healthy."""
    store.as_given = True
    try:
        created = store.create(kind, obj)
    finally:
        store.as_given = False
    given: dict[str, Any] = obj["status"] if isinstance(obj.get("status"), dict) else {}
    start = store.on_bind
    if start is None or kind != "Pod" or not (created.get("spec") or {}).get("nodeName") or given.get("phase"):
        return created
    now = rfc3339(store.clock.now())
    meta = created["metadata"]
    return store.mutate(
        kind, meta.get("namespace") or "", meta["name"], lambda o: {**o, "status": start(o.get("status") or {}, now)}
    )


def create_objects(
    store: Store, manifests: list[Manifest], *, keep_existing: bool = False, expand: bool = False
) -> tuple[list[dict[str, Any]], list[Manifest]]:
    """Create manifests in dependency order (namespaces, priority classes, nodes, budgets, the
    rest, pods last), creating missing namespaces with a warning. Objects refused by admission are
    returned as rejected; with ``keep_existing`` an object already stored is left as it is (a
    server restarted with the same PATHs). ``expand``: the workloads' controllers run beside (so
    no warning that their pods are not made), and each CronJob's next run is created as its Job."""
    rejected: list[dict[str, Any]] = []
    warned: set[str] = set()
    namespaces = {m.obj["metadata"]["name"] for m in manifests if m.kind == "Namespace"}
    needed = {
        (m.obj.get("metadata") or {}).get("namespace") or "default"
        for m in manifests
        if m.kind in KNOWN_KINDS and KNOWN_KINDS[m.kind][1]
    }
    for ns in sorted(needed - namespaces):
        if store.try_get("Namespace", "", ns) is None:
            warn(f"namespace {ns!r} is not in the input; creating it")
            store.create(
                "Namespace",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {NAMESPACE_LABEL: ns}}},
            )
    ordered = sorted(manifests, key=lambda m: CREATE_ORDER.get(m.kind, 5))
    pods: list[Manifest] = []
    for m in ordered:
        if m.kind in CONTROLLER_ONLY and not keep_existing and not expand and m.kind not in warned:
            warned.add(m.kind)
            warn(
                f"kind {m.kind!r}: simulate runs no workload controllers, so its pods are not created "
                "(list the pods, or run it under kubesched up)"
            )
        kind = store_kind(store, m.obj)
        if kind is None:
            # kubectl's "no matches for kind": nothing here would read it, and a typo'd kind
            # (``Pdo``) must not pass for an empty cluster
            raise InputError(
                f'no matches for kind "{m.kind}" in version "{m.obj.get("apiVersion") or ""}"',
                file=m.file,
                obj=f"document {m.index}",
            )
        meta = m.obj.get("metadata") or {}
        try:
            if m.kind == "Namespace" and store.try_get("Namespace", "", meta.get("name", "")) is not None:
                continue
            if m.kind == "PriorityClass" and meta.get("name") in admission.SYSTEM_PRIORITY_CLASSES:
                continue
            created = create_as_given(store, kind, m.obj)
            if m.kind == "Pod":
                pods.append(m)
            # a CronJob given with its uid is a cluster's state (a snapshot): its next run comes on
            # its schedule; one written to ask about it is run once now
            if expand and m.kind == "CronJob" and not meta.get("uid") and (job := next_job(created, store.clock.now())):
                store.create("Job", job)
        except ApiError as exc:
            if keep_existing and isinstance(exc, AlreadyExists):
                continue
            namespace = (meta.get("namespace") or "default") if is_namespaced(kind) else None
            rejected.append({"kind": m.kind, "namespace": namespace, "name": meta.get("name"), "message": exc.message})
    return rejected, pods
