"""The controller manager (kube-controller-manager): the controllers ``--controllers`` selects,
sharing one watch (the shared informers) and one owner index, run in rounds until the cluster
settles. Names follow kube-controller-manager's, with its short aliases."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kubesched.api.watch import Watch, WatchEvent
from kubesched.client.object_client import ObjectClient
from kubesched.cluster.store import KNOWN_KINDS
from kubesched.controllers.base import Controller, OwnerIndex
from kubesched.controllers.clusterroleaggregation import ClusterRoleAggregationController
from kubesched.controllers.crdfinalizer import CRDFinalizer
from kubesched.controllers.cronjob import CronJobController
from kubesched.controllers.daemonset import DaemonSetController
from kubesched.controllers.deployment import DeploymentController
from kubesched.controllers.devicetainteviction import DeviceTaintEvictionController
from kubesched.controllers.disruption import DisruptionController
from kubesched.controllers.endpoints import EndpointsController
from kubesched.controllers.endpointslice import EndpointSliceController
from kubesched.controllers.garbagecollector import GarbageCollector
from kubesched.controllers.job import JobController
from kubesched.controllers.namespace import NamespaceController
from kubesched.controllers.nodelifecycle import MONITOR_GRACE_PERIOD, NodeLifecycleController
from kubesched.controllers.podautoscaler import PodAutoscaler
from kubesched.controllers.podgc import TERMINATED_POD_THRESHOLD, PodGarbageCollector
from kubesched.controllers.replicaset import ReplicaSetController
from kubesched.controllers.resourceclaim import ResourceClaimController
from kubesched.controllers.resourcequota import ResourceQuotaController
from kubesched.controllers.rootcapublisher import RootCAPublisher
from kubesched.controllers.serviceaccount import ServiceAccountsController
from kubesched.controllers.statefulset import StatefulSetController
from kubesched.controllers.volume import VolumeController
from kubesched.errors import InputError
from kubesched.health import LoopHealth, describe

WORKLOADS: dict[str, type[Controller]] = {
    "deployment-controller": DeploymentController,
    "replicaset-controller": ReplicaSetController,
    "statefulset-controller": StatefulSetController,
    "daemonset-controller": DaemonSetController,
    "job-controller": JobController,
    "cronjob-controller": CronJobController,
}
# the controllers kube-controller-manager runs that the embedded cluster has, and those the
# API server process ran before (their own loops: PodDisruptionBudgets, volumes, DRA claims)
ALL = (
    *WORKLOADS,
    "garbage-collector-controller",
    "namespace-controller",
    "node-lifecycle-controller",
    "pod-garbage-collector-controller",
    "clusterrole-aggregation-controller",
    "disruption-controller",
    "persistentvolume-binder-controller",
    "resourceclaim-controller",
    "device-taint-eviction-controller",
    "crd-finalizer",
    "resourcequota-controller",
    "serviceaccount-controller",
    "root-ca-certificate-publisher-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "horizontal-pod-autoscaler-controller",
)
# what ``kubesched.embedded.EmbeddedCluster(workloads=True)`` runs: the workload controllers, the
# garbage collector, the namespace and node lifecycle controllers and the autoscaler (the cluster's
# own loops run there already)
# the loops the scheduler waits on (budgets preemption reads, claims and volumes a pod needs):
# simulations run them beside the scheduler, synced before each scheduling step
SCHEDULING_LOOPS = ("disruption-controller", "resourceclaim-controller", "persistentvolume-binder-controller")
WORKLOAD_CONTROLLERS = (
    *WORKLOADS,
    "garbage-collector-controller",
    "namespace-controller",
    "node-lifecycle-controller",
    "horizontal-pod-autoscaler-controller",
)
ALIASES = {name.removesuffix("-controller"): name for name in ALL} | {
    "garbagecollector": "garbage-collector-controller",
    "podgc": "pod-garbage-collector-controller",
    "persistentvolume-binder": "persistentvolume-binder-controller",
    "ephemeral-volume": "persistentvolume-binder-controller",
    "ephemeral-volume-controller": "persistentvolume-binder-controller",
}


def select(spec: str) -> list[str]:
    """``--controllers``: a comma-separated list where ``*`` is every controller, ``name``
    enables one and ``-name`` disables one (kube-controller-manager's syntax)."""
    items = [s.strip() for s in spec.split(",") if s.strip()] or ["*"]
    enabled: set[str] = set()
    disabled: set[str] = set()
    star = False
    for item in items:
        if item == "*":
            star = True
            continue
        off = item.startswith("-")
        name = ALIASES.get(item.lstrip("-"), item.lstrip("-"))
        if name not in ALL:
            raise InputError(f"unknown controller {item.lstrip('-')!r}; known: {', '.join(ALL)}", field="--controllers")
        (disabled if off else enabled).add(name)
    return [n for n in ALL if (star or n in enabled) and n not in disabled]


class Loop(Protocol):
    """A controller fed every event, with work of its own kind (not keys of one kind)."""

    def on_event(self, ev: WatchEvent) -> None: ...

    def run(self) -> None: ...


class Syncer(Protocol):
    """A controller with a loop of its own (``sync`` acts on what changed since the last call)."""

    def sync(self) -> Any: ...


class ControllerManager:
    """Runs the selected controllers against an ObjectClient. ``sync`` drains the shared watch,
    hands every event to the index and the controllers, and reconciles until nothing more
    changes (bounded); ``wake`` is called when a timer or the watch has work."""

    ROUNDS = 50

    def __init__(
        self,
        client: ObjectClient,
        names: Sequence[str],
        wake: Callable[[], None] | None = None,
        node_monitor_grace: float = MONITOR_GRACE_PERIOD,
        health: LoopHealth | None = None,
        terminated_pod_gc_threshold: int = TERMINATED_POD_THRESHOLD,
        root_ca: str | None = None,
    ) -> None:
        self.client = client
        self.names = list(names)
        self.wake = wake or (lambda: None)
        self.health = health or LoopHealth()
        kinds = list(KNOWN_KINDS)
        self.index = OwnerIndex(client, ("Pod", "ReplicaSet", "PersistentVolumeClaim", "ControllerRevision", "Job"))
        self.controllers: list[Controller] = [
            WORKLOADS[n](client, self.index, self.wake, self.health) for n in names if n in WORKLOADS
        ]
        self.loops: list[Loop] = []
        if "garbage-collector-controller" in names:
            self.loops.append(GarbageCollector(client, kinds, self.wake, self.health))
        if "namespace-controller" in names:
            self.loops.append(NamespaceController(client, kinds, self.wake, health=self.health))
        if "pod-garbage-collector-controller" in names:
            self.loops.append(
                PodGarbageCollector(client, self.wake, threshold=terminated_pod_gc_threshold, health=self.health)
            )
        if "clusterrole-aggregation-controller" in names:
            self.loops.append(ClusterRoleAggregationController(client))
        if "node-lifecycle-controller" in names:
            self.loops.append(NodeLifecycleController(client, self.wake, grace=node_monitor_grace, health=self.health))
        if "resourcequota-controller" in names:
            self.loops.append(ResourceQuotaController(client, self.wake, self.health))
        if "horizontal-pod-autoscaler-controller" in names:
            self.loops.append(PodAutoscaler(client, self.wake, self.health))
        if "endpoints-controller" in names:
            self.loops.append(EndpointsController(client, self.wake, self.health))
        if "endpointslice-controller" in names:
            self.loops.append(EndpointSliceController(client, self.wake, self.health))
        if "serviceaccount-controller" in names:
            self.loops.append(ServiceAccountsController(client, self.wake, self.health))
        if "root-ca-certificate-publisher-controller" in names and root_ca is not None:
            self.loops.append(RootCAPublisher(client, root_ca, self.wake, self.health))
        if "device-taint-eviction-controller" in names:
            self.loops.append(DeviceTaintEvictionController(client, self.wake, self.health))
        if "crd-finalizer" in names:
            self.loops.append(CRDFinalizer(client, self.wake, self.health))
        # the scheduling loops: each with a watch of its own kinds, synced on its own
        self.volumes = VolumeController(client, notify=self.wake) if SCHEDULING_LOOPS[2] in names else None
        self.syncers: list[Syncer] = []
        if SCHEDULING_LOOPS[0] in names:
            self.syncers.append(DisruptionController(client, notify=self.wake))
        if SCHEDULING_LOOPS[1] in names:
            self.syncers.append(ResourceClaimController(client, notify=self.wake))
        if self.volumes is not None:
            self.syncers.append(self.volumes)
        # every event for the others (none to keep when only the scheduling loops run)
        self.watch: Watch | None = client.watch(kinds, notify=self.wake) if self.controllers or self.loops else None

    def sync(self) -> bool:
        """One pass to quiescence; True when any controller had work. Nothing one object or one
        controller raises stops the others: it is logged with the object and counted in
        ``health`` (the workqueue controllers retry the key with backoff themselves)."""
        worked = False
        for _ in range(self.ROUNDS):
            events = self.watch.drain() if self.watch is not None else []
            for ev in events:
                try:
                    self.index.apply(ev)
                    for c in self.controllers:
                        if ev.kind == c.kind or ev.kind in c.watches:
                            c.on_event(ev)
                except Exception as exc:
                    self.health.error("controller-manager", _event_object(ev), exc)
                for loop in self.loops:
                    try:
                        loop.on_event(ev)
                    except Exception as exc:
                        self.health.error(_loop_name(loop), _event_object(ev), exc)
            busy = bool(events) or any(c.dirty for c in self.controllers)
            for c in self.controllers:
                c.run()
            for loop in self.loops:
                try:
                    loop.run()
                except Exception as exc:
                    self.health.error(_loop_name(loop), "its sync", exc)
            for s in self.syncers:
                try:
                    s.sync()
                except Exception as exc:
                    self.health.error(_loop_name(s), "its sync", exc)
            if not busy and not self.watch:  # (None or an empty watch)
                break
            worked = True
        self.health.ok("controller-manager")
        return worked


def _event_object(ev: WatchEvent) -> str:
    meta = (ev.obj.get("metadata") or {}) if isinstance(ev.obj, dict) else {}
    return describe(ev.kind, (meta.get("namespace") or "", meta.get("name") or ""))


def _loop_name(part: object) -> str:
    return str(getattr(part, "name", "") or type(part).__name__)
