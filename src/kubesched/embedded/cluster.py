"""``EmbeddedCluster``: the store with the cluster's admission (and, with ``workloads``, the API
server's defaulting and validation before it), the claim, volume and disruption loops, the
controller manager's workload controllers, the hollow kubelet and the scheduler, driven on a virtual
clock: ``settle`` handles every event until nothing changes, ``advance`` lets time pass timer by
timer, ``run_to_quiescence`` runs until nothing more can happen. ``simulate``, ``replay``,
``size``, ``drain`` and ``kubesched.testing.Cluster`` are built on it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesched.api.kinds import BUILTIN_KINDS
from kubesched.apiextensions.registry import store_kind
from kubesched.apiserver.objects import ServerAdmission
from kubesched.client import InProcessClient
from kubesched.client.objects import StoreObjects
from kubesched.clock import VirtualClock
from kubesched.cluster import admission
from kubesched.cluster.loader import Manifest
from kubesched.cluster.store import KNOWN_KINDS, Store
from kubesched.controllers.disruption import DisruptionController
from kubesched.controllers.manager import WORKLOAD_CONTROLLERS, ControllerManager
from kubesched.controllers.resourceclaim import ResourceClaimController
from kubesched.controllers.volume import VolumeController
from kubesched.embedded.objects import create_as_given, create_objects
from kubesched.embedded.virtual import MAX_VIRTUAL_SECONDS, Progress, run_to_quiescence
from kubesched.errors import InputError
from kubesched.framework.registry import Registry
from kubesched.kubelet.agent import HollowKubelet
from kubesched.scheduler.binding import Binding
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.scheduler import Scheduler

_BUILTIN_GROUPS = frozenset(g for g, _ in BUILTIN_KINDS)


def _lenient_kind(obj: dict[str, Any]) -> str | None:
    """A built-in kind given with a version its group does not serve (tests' shorthand), kept
    as before; a group no built-in resource has is a custom resource's, never a built-in kind."""
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    kind = obj.get("kind")
    return kind if group in _BUILTIN_GROUPS and kind in KNOWN_KINDS else None


class EmbeddedCluster:
    """The cluster and its driver on a virtual clock. ``workloads``: run what ``kubesched up`` runs
    around the scheduler too (the API server's admission, the hollow kubelet with pods done after
    ``run_seconds``, the workload controllers with the garbage collector and the namespace
    controller); without it a bound pod simply runs (the store starts it). ``manifests`` are
    created as ``simulate`` creates its input (``rejected`` lists what admission refused, ``pods``
    the pods made); ``explain`` names the pods whose attempts are kept; ``start``: list and watch
    at once (else ``run_to_quiescence`` starts the scheduler); ``loops``: run the claim, volume and
    disruption loops beside the scheduler (replay's arrivals, as the FGD paper's simulator, runs
    none)."""

    def __init__(
        self,
        *objects: dict[str, Any],
        config: SchedulerConfig,
        manifests: Sequence[Manifest] = (),
        explain: set[str] | None = None,
        start: bool = True,
        loops: bool = True,
        registry: Registry | None = None,
        binding: Binding | None = None,
        workloads: bool = False,
        run_seconds: float = 1.0,
        results: bool = False,
        results_node_limit: int = 10,
        seed: int = 0,
        attach_limit: int = 0,
    ) -> None:
        self.clock = VirtualClock()
        self.store = Store(self.clock, seed=seed, start_on_bind=not workloads)
        self.kubelet: HollowKubelet | None = None
        self.controllers: ControllerManager | None = None
        self.store.admission.append(ServerAdmission(self.store))
        admission.install(self.store)
        self.create(*objects)
        self.rejected, self.pods = create_objects(self.store, list(manifests)) if manifests else ([], [])
        if workloads:
            self.kubelet = HollowKubelet(
                self.store, termination_delay=0.0, run_seconds=run_seconds, attach_limit=attach_limit
            )
            self.controllers = ControllerManager(StoreObjects(self.store), list(WORKLOAD_CONTROLLERS))
        self.client = InProcessClient(self.store)
        self.loops: list[Any] = []
        if loops:
            self.disruption = DisruptionController(StoreObjects(self.store))
            self.claims = ResourceClaimController(StoreObjects(self.store))
            self.volumes = VolumeController(StoreObjects(self.store))
            self.loops = [self.disruption, self.claims, self.volumes]
            self.client.settlers.append(self.volumes.sync)  # VolumeBinding's PreBind waits for the PV controller
        self.sched = Scheduler(
            self.client,
            config,
            self.clock,
            seed=seed,
            registry=registry,
            binding=binding,
            write_results=results,
            results_node_limit=results_node_limit,
            explain=explain,
        )
        if start:
            self.sched.start()

    def create(self, *objects: dict[str, Any]) -> None:
        """Create objects of the cluster's state by apiVersion and kind (a custom resource once its
        CRD is created), each keeping its uid, creation time and status; a namespace they name
        that does not exist yet is made first."""
        for obj in objects:
            ns = (obj.get("metadata") or {}).get("namespace")
            if ns and obj.get("kind") != "Namespace" and self.store.try_get("Namespace", "", ns) is None:
                self.store.create("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            kind = store_kind(self.store, obj) or _lenient_kind(obj)
            if kind is None:
                raise InputError(f'no matches for kind "{obj.get("kind")}" in version "{obj.get("apiVersion") or ""}"')
            create_as_given(self.store, kind, obj)

    def settle(self) -> None:
        """Handle every watch event and schedule until activeQ is empty and the controllers
        have nothing left to do; no time passes."""
        while True:
            before = self.store.resource_version
            self._settle_scheduler()
            if self.kubelet is not None:
                self.kubelet.sync()
            if self.controllers is not None:
                self.controllers.sync()
            if self.store.resource_version == before:
                return

    def _settle_scheduler(self) -> None:
        while True:
            for loop in self.loops:
                loop.sync()
            self.sched.process_events()
            if not self.sched.schedule_one():
                self.sched.process_events()
                if not self.sched.queue.has_active():
                    return

    def advance(self, seconds: float) -> None:
        """Let virtual time pass (firing timers, completing backoffs, the unschedulable flush),
        then settle. With ``workloads``, the cluster settles after each timer, as the real
        controllers act as soon as they are woken (a taint is added when its node fails, not
        when the test's time step ends)."""
        target = self.clock.now() + seconds
        if self.controllers is not None:
            while (due := self.clock.next_timer()) is not None and due <= target:
                self.clock.advance_to(due)
                self.settle()
        self.clock.advance_to(target)
        self.sched.process_events()
        self.sched.queue.flush_backoff_completed()
        self.sched.queue.flush_unschedulable_leftover()  # pods unschedulable for over 5 minutes
        self.settle()

    def run_to_quiescence(
        self, progress: Progress | None = None, limit: float = MAX_VIRTUAL_SECONDS, also: Sequence[Any] = ()
    ) -> None:
        """Schedule until nothing more can happen (``embedded.virtual``), the loops beside the
        scheduler (and ``also``: anything with a ``sync``) synced before each step."""
        run_to_quiescence(self.sched, self.clock, limit=limit, controllers=[*self.loops, *also], progress=progress)
