"""``EmbeddedCluster``, the composition root (as kube-scheduler-simulator's ``server/di``): the
store with the one admission chain, the controller manager, the hollow kubelet and the scheduler,
built in one place. On a virtual clock ``settle`` handles every event until nothing changes,
``advance`` lets time pass timer by timer, ``run_to_quiescence`` runs until nothing more can
happen (``simulate``, ``replay``, ``size``, ``drain``, ``kubesched.testing.Cluster``); in real
time ``run`` drives the kubelet and the controllers on the event loop (``kubesched up`` and
``kubesched apiserver``, with ``embedded.service`` for the scheduler)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kubesched.apiextensions.registry import store_kind
from kubesched.apiserver.registry.strategy import ServerAdmission, ServerValidation
from kubesched.client import InProcessClient
from kubesched.client.object_client import StoreObjects
from kubesched.clock import Clock, VirtualClock
from kubesched.cluster import admission
from kubesched.cluster.loader import Manifest
from kubesched.cluster.store import Backend, Store
from kubesched.controllers.manager import SCHEDULING_LOOPS, WORKLOAD_CONTROLLERS, ControllerManager
from kubesched.controllers.nodelifecycle import MONITOR_GRACE_PERIOD
from kubesched.controllers.podgc import TERMINATED_POD_THRESHOLD
from kubesched.embedded.populate import create_as_given, create_objects, pod_makers
from kubesched.embedded.service import SchedulerService
from kubesched.embedded.virtual import MAX_VIRTUAL_SECONDS, Progress, run_to_quiescence
from kubesched.errors import InputError
from kubesched.framework.registry import Registry
from kubesched.health import LoopHealth
from kubesched.kubelet import instant
from kubesched.kubelet.agent import HollowKubelet
from kubesched.scheduler.binding import Binding
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.resultstore import NODE_LIMIT
from kubesched.scheduler.scheduler import Scheduler

log = logging.getLogger("kubesched")


class EmbeddedCluster:
    """The embedded cluster, built in one place: the store with the one admission chain (the API
    server's defaulting and validation, then the cluster's admission plugins), the controller
    manager (workload controllers and the loops the scheduler waits on), the hollow kubelet, and
    the scheduler, with two drivers: virtual time (``settle``, ``advance``, ``run_to_quiescence``;
    simulate, replay, size, drain, ``kubesched.testing``) and real time on the event loop
    (``run``: ``kubesched up`` and ``apiserver``, whose scheduler is ``embedded.service``).

    ``workloads``: run what ``kubesched up`` runs around the scheduler (the hollow kubelet with
    pods done after ``run_seconds``, the workload controllers with the garbage collector, the
    namespace controller and the autoscaler); without it a bound pod simply runs (the store starts
    it). ``loops``: the claim, volume and disruption loops (replay's arrivals, as the FGD paper's
    simulator, runs none). ``controllers`` names the controllers instead (``--controllers``).
    ``manifests`` are created as ``simulate`` creates its input (``rejected`` lists what admission
    refused, ``pods`` the pods made); ``prepare`` is called with the store before anything else
    runs (the server's own objects). ``config`` None: no scheduler here. ``start``: list and watch
    at once (else ``run_to_quiescence`` starts the scheduler). ``clock``, ``backend``, ``history``,
    ``seed`` None, ``wake``: a real-time cluster's store (``kubesched up``). ``bound_pods_run``
    False: a bound pod stays as the binding left it, as in upstream's scheduler_perf, whose
    cluster runs no kubelet (the benchmarks). ``expand_workloads``: the workloads among
    ``manifests`` (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, a CronJob's next run)
    get their pods from their controllers, run beside the scheduler (``simulate``)."""

    def __init__(
        self,
        *objects: dict[str, Any],
        config: SchedulerConfig | None,
        manifests: Sequence[Manifest] = (),
        explain: set[str] | None = None,
        start: bool = True,
        loops: bool = True,
        registry: Registry | None = None,
        binding: Binding | None = None,
        workloads: bool = False,
        run_seconds: float = 1.0,
        results: bool = False,
        results_node_limit: int = NODE_LIMIT,
        seed: int | None = 0,
        attach_limit: int = 0,
        clock: Clock | None = None,
        backend: Backend | None = None,
        history: int = Store.HISTORY,
        controllers: Sequence[str] | None = None,
        kubelet: bool | None = None,
        termination_delay: float = 0.0,
        root_ca: str | None = None,
        node_monitor_grace: float = MONITOR_GRACE_PERIOD,
        terminated_pod_gc_threshold: int = TERMINATED_POD_THRESHOLD,
        health: LoopHealth | None = None,
        wake: Callable[[], None] | None = None,
        prepare: Callable[[Store], None] | None = None,
        bound_pods_run: bool = True,
        expand_workloads: bool = False,
    ) -> None:
        self.clock: Clock = clock if clock is not None else VirtualClock()
        self.health = health or LoopHealth()
        self.store = Store(self.clock, seed=seed, backend=backend, history=history)
        makers = pod_makers(list(manifests)) if expand_workloads and not workloads else []
        self.expanded = bool(makers)
        if not workloads and bound_pods_run:
            # no kubelet starts a bound pod: the binding does (the input's bound pods too), Ready
            # where controllers wait for it
            self.store.on_bind = instant.started_ready if makers else instant.started
        else:  # a kubelet ends a graceful deletion (the hollow one, unless told not to run), never the store
            self.store.ends_graceful_deletions = False
        # kube-apiserver's order: defaults, the mutating plugins, the object's validation, ResourceQuota
        self.store.admission.append(ServerAdmission(self.store))
        admission.install(self.store, ServerValidation())
        if prepare is not None:
            prepare(self.store)
        self.create(*objects)
        self.rejected, self.pods = (
            create_objects(self.store, list(manifests), expand=bool(makers)) if manifests else ([], [])
        )
        self.kubelet: HollowKubelet | None = None
        if kubelet if kubelet is not None else workloads:
            self.kubelet = HollowKubelet(
                self.store,
                notify=wake,
                termination_delay=termination_delay,
                run_seconds=run_seconds,
                attach_limit=attach_limit,
                health=self.health,
            )
        if controllers is None:
            controllers = [
                *(WORKLOAD_CONTROLLERS if workloads else makers),
                *(SCHEDULING_LOOPS if loops else ()),
            ]
        self.controllers = ControllerManager(
            StoreObjects(self.store),
            controllers,
            wake=wake,
            root_ca=root_ca,
            node_monitor_grace=node_monitor_grace,
            terminated_pod_gc_threshold=terminated_pod_gc_threshold,
            health=self.health,
        )
        # the loops the scheduler waits on, synced before each virtual scheduling step
        self.loops: list[Any] = list(self.controllers.syncers)
        self.client = InProcessClient(self.store)
        if self.controllers.volumes is not None:  # VolumeBinding's PreBind waits for the PV controller
            self.client.settlers.append(self.controllers.volumes.sync)
        self._sched: Scheduler | None = None
        self._started = False
        if config is not None:
            self._sched = Scheduler(
                self.client,
                config,
                self.clock,
                seed=seed or 0,
                registry=registry,
                binding=binding,
                write_results=results,
                results_node_limit=results_node_limit,
                explain=explain,
            )
            if start:
                self.start()

    @property
    def sched(self) -> Scheduler:
        """The scheduler of a virtual-time cluster."""
        assert self._sched is not None, "this cluster was built without a scheduler (config None)"
        return self._sched

    def start(self) -> None:
        """The scheduler's informers list and watch (once)."""
        if not self._started:
            self.sched.start()
            self._started = True

    def create(self, *objects: dict[str, Any]) -> None:
        """Create objects of the cluster's state by apiVersion and kind (a custom resource once its
        CRD is created), each keeping its uid, creation time and status; a namespace they name
        that does not exist yet is made first."""
        for obj in objects:
            ns = (obj.get("metadata") or {}).get("namespace")
            if ns and obj.get("kind") != "Namespace" and self.store.try_get("Namespace", "", ns) is None:
                self.store.create("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            kind = store_kind(self.store, obj)
            if kind is None:
                raise InputError(f'no matches for kind "{obj.get("kind")}" in version "{obj.get("apiVersion") or ""}"')
            create_as_given(self.store, kind, obj)

    def settle(self) -> None:
        """Handle every watch event and schedule until activeQ is empty and the controllers
        have nothing left to do; no time passes, but what is due now is done (a preemption's
        last eviction, which follows its cycle)."""
        while True:
            before = self.store.resource_version
            self._settle_scheduler()
            if isinstance(self.clock, VirtualClock):
                self.clock.advance_to(self.clock.now())
            if self.kubelet is not None:
                self.kubelet.sync()
            self.controllers.sync()
            if self.store.resource_version == before:
                return

    def _settle_scheduler(self) -> None:
        def sync_loops() -> None:
            for loop in self.loops:
                loop.sync()

        self.sched.drain(sync_loops)

    def advance(self, seconds: float) -> None:
        """Let virtual time pass (firing timers, completing backoffs, the unschedulable flush),
        then settle. With ``workloads``, the cluster settles after each timer, as the real
        controllers act as soon as they are woken (a taint is added when its node fails, not
        when the test's time step ends)."""
        assert isinstance(self.clock, VirtualClock)
        target = self.clock.now() + seconds
        if self.kubelet is not None or self.controllers.loops or self.controllers.controllers:
            while (due := self.clock.next_timer()) is not None and due <= target:
                self.clock.advance_to(due)
                self.settle()
        self.clock.advance_to(target)
        self.sched.process_events()
        self.sched.flush(unschedulable=True)  # and pods unschedulable for over 5 minutes
        self.settle()

    def run_to_quiescence(
        self, progress: Progress | None = None, limit: float = MAX_VIRTUAL_SECONDS, also: Sequence[Any] = ()
    ) -> None:
        """Schedule until nothing more can happen (``embedded.virtual``), the loops beside the
        scheduler (and ``also``: anything with a ``sync``) synced before each step."""
        assert isinstance(self.clock, VirtualClock)
        self.start()
        # the workloads' controllers (``expand_workloads``) sync beside the scheduling loops
        workload = [self.controllers] if self.expanded else []
        run_to_quiescence(
            self.sched, self.clock, limit=limit, controllers=[*self.loops, *workload, *also], progress=progress
        )

    def scheduler_service(
        self,
        config: SchedulerConfig,
        *,
        write_results: bool = False,
        results_node_limit: int = NODE_LIMIT,
        on_metrics: Callable[[Any, Any], None] | None = None,
    ) -> SchedulerService:
        """The real-time scheduler beside the store (``kubesched up``), restartable with a new
        configuration; its client runs the PV controller when PreBind waits for it."""
        client = InProcessClient(self.store, reporting_instance="kubesched-up")
        if self.controllers.volumes is not None:
            client.settlers.append(self.controllers.volumes.sync)
        return SchedulerService(
            client,
            config,
            write_results=write_results,
            results_node_limit=results_node_limit,
            on_metrics=on_metrics,
            health=self.health,
        )

    async def run(self, stop: asyncio.Event, changed: asyncio.Event) -> None:
        """The real-time driver of the kubelet and the controller manager, until ``stop``: each
        round syncs them, then waits for ``changed`` (their ``wake``) or a second. One object's
        error is handled where it is synced; what escapes is a bug of a whole loop: logged with
        its traceback and counted in ``health``, and the loop goes on after a pause. (The
        scheduler runs beside it: ``embedded.service``.)"""
        self.health.register("controller-manager")
        if self.kubelet is not None:
            self.health.register("kubelet")
        parts: list[tuple[str, Callable[[], Any]]] = [("controller-manager", self.controllers.sync)]
        if self.kubelet is not None:
            parts.insert(0, ("kubelet", self.kubelet.sync))
        while not stop.is_set():
            changed.clear()
            for name, sync in parts:
                try:
                    sync()
                except Exception as exc:
                    log.exception("the %s loop failed a sync; it goes on", name)
                    self.health.error(name, "its sync", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), 1.0)
