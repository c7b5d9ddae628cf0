"""``kubesched apiserver`` and ``kubesched up``: the embedded cluster (``embedded.cluster``) in real
time on its SQLite store, served over HTTPS by the API server, and (``up``) the scheduler service
and the web UI beside it on the same event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from kubesched import eventloop
from kubesched.api.errors import AlreadyExists
from kubesched.apiserver.auth import bootstrap_policy
from kubesched.apiserver.auth.authn import Authenticator, load_token_file
from kubesched.apiserver.filters.faults import Faults
from kubesched.apiserver.filters.limits import Limits, limited_factory
from kubesched.apiserver.flowcontrol import ensurer as flowcontrol_ensurer
from kubesched.apiserver.handlers.listwatch import WATCH_QUEUE_LENGTH
from kubesched.apiserver.registry.services import kubernetes_service
from kubesched.apiserver.resources import disabled_versions
from kubesched.apiserver.server import ApiServer
from kubesched.app import datadir
from kubesched.app.certs import ensure_certs, server_context
from kubesched.app.datadir import DataDirLock
from kubesched.app.kubeconfig import load_or_create_signing_key, load_or_create_token, write_kubeconfig
from kubesched.client import InProcessClient
from kubesched.clock import WallClock
from kubesched.cluster.loader import load_paths
from kubesched.cluster.sqlite import SQLiteBackend
from kubesched.cluster.store import Store
from kubesched.controllers.manager import ALL as ALL_CONTROLLERS
from kubesched.controllers.nodelifecycle import MONITOR_GRACE_PERIOD
from kubesched.controllers.podgc import TERMINATED_POD_THRESHOLD
from kubesched.embedded.cluster import EmbeddedCluster
from kubesched.embedded.populate import create_objects
from kubesched.embedded.service import SchedulerService
from kubesched.errors import InputError
from kubesched.features import FeatureGates
from kubesched.health import LoopHealth
from kubesched.kubelet.agent import POD_RUN_SECONDS, TERMINATION_DELAY
from kubesched.kubelet.node import ATTACH_LIMIT, default_storage_class, fake_node
from kubesched.loading.manifests import validate_manifest
from kubesched.scheduler.config import KIND, SchedulerConfig
from kubesched.scheduler.resultstore import NODE_LIMIT

log = logging.getLogger("kubesched")


@dataclass(slots=True)
class ServerOptions:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 6443
    nodes: int | None = None  # None: default_nodes when the cluster has no node
    default_nodes: int = 0
    history: int = Store.HISTORY
    kubelet: bool = True  # the hollow kubelet; scheduler_perf-style benchmarks run without
    pod_termination_delay: float = TERMINATION_DELAY
    pod_run_seconds: float = POD_RUN_SECONDS  # a run-to-completion pod's run time on a hollow node
    controllers: list[str] = field(default_factory=lambda: list(ALL_CONTROLLERS))
    node_monitor_grace: float = MONITOR_GRACE_PERIOD  # kube-controller-manager's --node-monitor-grace-period
    terminated_pod_gc_threshold: int = TERMINATED_POD_THRESHOLD  # and its --terminated-pod-gc-threshold
    attach_limit: int = ATTACH_LIMIT  # the hollow CSI driver's volumes per node (0: no CSINodes)
    fault_injection: bool = False  # tests: /debug/kubesched/faults
    limits: Limits = field(default_factory=Limits)
    watch_queue_length: int = WATCH_QUEUE_LENGTH
    paths: list[str] = field(default_factory=list)
    token_auth_file: str | None = None  # --token-auth-file: static users
    scheduler: SchedulerConfig | None = None  # ``up``: run the scheduler too
    # the feature gates (``up``: the scheduler's too); off gates leave their group versions unserved
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    config_path: str | None = None  # where ``scheduler`` came from (the UI shows it)
    write_results: bool = False  # the scheduling results on each pod (scheduler/resultstore.py)
    results_node_limit: int = NODE_LIMIT
    ui_port: int = 0  # ``up``: the web UI's port (0: none)


def load_manifests(store: Store, paths: list[str]) -> list[str]:
    """Create the objects of PATHs as ``simulate`` reads them; existing ones are kept as they are.
    Returns one line per object refused by admission."""
    loaded = load_paths(paths)
    for m in loaded.manifests:
        validate_manifest(m)
    objects = [m for m in loaded.manifests if m.kind != KIND]
    rejected, _ = create_objects(store, objects, keep_existing=True)
    return [f"{r['kind']} {r['namespace'] or ''}/{r['name']}: {r['message']}" for r in rejected]


async def serve(opts: ServerOptions) -> None:
    """Run until SIGINT/SIGTERM; every acknowledged write is in ``DATA_DIR/state.db``. The data
    directory is this process's alone while it runs (a second server on it is refused)."""
    datadir.prepare(opts.data_dir)
    lock = DataDirLock(opts.data_dir).acquire()
    try:
        await _serve(opts)
    finally:
        lock.release()


async def _serve(opts: ServerOptions) -> None:
    """kube-apiserver's Run, with the cluster around it: the embedded cluster (store, controllers,
    kubelet), the API server listening, the restartable scheduler and the UI, announced once
    every port is bound; then, on SIGINT/SIGTERM, everything stopped in reverse."""
    loop = asyncio.get_running_loop()
    changed = asyncio.Event()  # the kubelet's and the controllers' wake-up
    health = LoopHealth()
    ca, crt, key = ensure_certs(opts.data_dir, opts.host)
    kept = (opts.data_dir / "state.db").exists()  # a cluster from an earlier run, restarted
    cluster, made_default = _cluster(opts, WallClock(loop), health, changed, ca.read_text())
    store = cluster.store
    token = load_or_create_token(opts.data_dir)
    server = _api_server(opts, store, token, health)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    runner, listener = await _listen(opts, server, crt, key)
    address = f"{opts.host}:{opts.port}"
    kubeconfig = opts.data_dir / "kubeconfig"
    write_kubeconfig(kubeconfig, f"https://{address}", token, ca.read_bytes())
    tasks = [asyncio.create_task(cluster.run(stop, changed))]
    tasks.append(asyncio.create_task(server.flow_control.run(stop, health)))
    service: SchedulerService | None = None
    ui_runner: web.AppRunner | None = None
    ui_line = ""
    if opts.scheduler is not None:
        service = _scheduler_service(opts, cluster, server)
        service.start()
        tasks.append(asyncio.create_task(event_rounds(service.client, stop)))
        if opts.ui_port:
            ui_runner, ui_line = await _serve_ui(opts, store, service, token, address, ca, crt, key, kubeconfig)
    # announced once every port is bound
    first = f"kubesched: API server on https://{address}; run: export KUBECONFIG={kubeconfig.resolve()}"
    if made_default:
        first += (
            f"; {made_default} hollow nodes of 4 CPU, 32Gi (node-0 to node-{made_default - 1}), "
            "`kubesched node add` makes more"
        )
    print(first, flush=True)
    if kept:
        again = ""
        if opts.paths:
            again = f"; {' '.join(opts.paths)} applied again (objects that exist were left as they are)"
        print(
            f"kubesched: the cluster kept in {opts.data_dir} from its last run{again}; "
            f"`kubesched down --data-dir {opts.data_dir} --delete` starts afresh",
            flush=True,
        )
    if ui_line:
        print(ui_line, flush=True)
    await stop.wait()
    if service is not None:
        await service.stop()
    server.close_watches()
    for t in tasks:
        t.cancel()
    for t in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await t
    listener.close()
    if ui_runner is not None:
        await ui_runner.cleanup()
    await runner.cleanup()
    store.close()


def _cluster(
    opts: ServerOptions, clock: WallClock, health: LoopHealth, changed: asyncio.Event, root_ca: str
) -> tuple[EmbeddedCluster, int]:
    """The embedded cluster of ``up`` (its scheduler is the restartable service), with the
    server's own objects made before any loop runs; and how many default nodes were made."""
    made_default = [0]

    def prepare(store: Store) -> None:
        """The server's own objects: its nodes, the hollow CSI driver's class, the PATHs'
        objects, the ``kubernetes`` Service, RBAC's bootstrap policy."""
        for i in range(opts.nodes or 0):
            with contextlib.suppress(AlreadyExists):
                store.create("Node", fake_node(f"node-{i}"))
        if opts.kubelet and opts.attach_limit and not store.list("StorageClass")[0]:
            store.create("StorageClass", default_storage_class())  # as kind's "standard": the hollow driver's
        for line in load_manifests(store, opts.paths):
            log.warning("refused: %s", line)
        if store.try_get("Service", "default", "kubernetes") is None:  # kube-apiserver's own Service
            store.create("Service", kubernetes_service(opts.port))
        if opts.nodes is None and not store.list("Node")[0]:  # an empty cluster schedules nothing: say so
            for i in range(opts.default_nodes):
                store.create("Node", fake_node(f"node-{i}"))
            made_default[0] = opts.default_nodes
        bootstrap_policy.install(store)
        flowcontrol_ensurer.ensure(store)  # the priority-and-fairness-config-producer hook's first round

    cluster = EmbeddedCluster(
        config=None,  # the scheduler of ``up`` is the restartable service
        clock=clock,
        seed=None,
        backend=SQLiteBackend(opts.data_dir / "state.db"),
        history=opts.history,
        workloads=True,
        kubelet=opts.kubelet,
        controllers=opts.controllers,
        termination_delay=opts.pod_termination_delay,
        run_seconds=opts.pod_run_seconds,
        attach_limit=opts.attach_limit,
        root_ca=root_ca,
        node_monitor_grace=opts.node_monitor_grace,
        terminated_pod_gc_threshold=opts.terminated_pod_gc_threshold,
        health=health,
        wake=changed.set,
        prepare=prepare,
    )
    return cluster, made_default[0]


def _api_server(opts: ServerOptions, store: Store, token: str, health: LoopHealth) -> ApiServer:
    """The API server over the store, with its authenticators (the server's token, service
    account tokens, ``--token-auth-file``)."""
    static = load_token_file(opts.token_auth_file) if opts.token_auth_file else {}
    authenticator = Authenticator(token, load_or_create_signing_key(opts.data_dir), store, static)
    return ApiServer(
        store,
        token,
        authenticator=authenticator,
        address=f"{opts.host}:{opts.port}",
        faults=Faults() if opts.fault_injection else None,
        limits=opts.limits,
        watch_queue_length=opts.watch_queue_length,
        health=health,
        off=disabled_versions(opts.feature_gates.enabled),
    )


async def _listen(
    opts: ServerOptions, server: ApiServer, crt: Path, key: Path
) -> tuple[web.AppRunner, asyncio.AbstractServer]:
    """The API server on ``--host``:``--port`` over TLS, with its connection limits."""
    loop = asyncio.get_running_loop()
    runner = web.AppRunner(
        server.app,
        access_log=None,
        handle_signals=False,
        shutdown_timeout=2.0,
        keepalive_timeout=opts.limits.idle_timeout,  # after a request; limited_factory times the first one
    )
    await runner.setup()
    handlers = runner.server
    assert handlers is not None
    listener = await loop.create_server(
        limited_factory(
            handlers, lambda: len(handlers.connections), opts.limits.max_connections, opts.limits.idle_timeout
        ),
        opts.host,
        opts.port,
        ssl=server_context(crt, key),
        reuse_address=True,
        ssl_handshake_timeout=10.0,
        ssl_shutdown_timeout=5.0,  # a closed connection whose peer never answers TLS close_notify
    )
    return runner, listener


def _scheduler_service(opts: ServerOptions, cluster: EmbeddedCluster, server: ApiServer) -> SchedulerService:
    """``up``'s restartable scheduler, its metrics served by the API server's /metrics."""
    assert opts.scheduler is not None

    def swap_metrics(old: Any, new: Any) -> None:
        if old is not None and old in server.metrics_registries:
            server.metrics_registries.remove(old)
        server.metrics_registries.append(new)

    return cluster.scheduler_service(
        opts.scheduler,
        write_results=opts.write_results,
        results_node_limit=opts.results_node_limit,
        on_metrics=swap_metrics,
    )


async def _serve_ui(
    opts: ServerOptions,
    store: Store,
    service: SchedulerService,
    token: str,
    address: str,
    ca: Path,
    crt: Path,
    key: Path,
    kubeconfig: Path,
) -> tuple[web.AppRunner, str]:
    """The web UI on ``--ui-port`` (over TLS beyond loopback), and the line announcing it."""
    from kubesched.ui.server import UiServer
    from kubesched.ui.session import is_loopback

    tls = not is_loopback(opts.host)  # beyond loopback the UI is served over TLS, as the API is
    ui = UiServer(
        store,
        service,
        token,
        f"https://{address}",
        ca,
        config_path=opts.config_path,
        host=opts.host,
        port=opts.ui_port,
        secure=tls,
    )
    ui_runner = web.AppRunner(ui.app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await ui_runner.setup()
    try:
        site = web.TCPSite(
            ui_runner,
            opts.host,
            opts.ui_port,
            reuse_address=True,
            ssl_context=server_context(crt, key) if tls else None,
        )
        await site.start()
    except OSError as exc:
        kubeconfig.unlink(missing_ok=True)  # nothing was announced: leave no kubeconfig behind
        raise InputError(
            f"cannot listen on {opts.host}:{opts.ui_port} (--ui-port): {os.strerror(exc.errno) if exc.errno else exc}"
        ) from None
    base = f"{'https' if tls else 'http'}://{opts.host}:{opts.ui_port}"
    return ui_runner, f"kubesched: web UI on {base}; log in once at {ui.login_url(base)}"


async def event_rounds(client: InProcessClient, stop: asyncio.Event) -> None:
    """The events broadcaster's timers for the scheduler beside the store: series are refreshed
    and finished when due, whether or not the scheduler records another event."""
    while not stop.is_set():
        wait = max(0.0, client.event_series.next_due() - client.store.clock.now())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), wait)
        if not stop.is_set():
            client.flush_events()


def run(opts: ServerOptions) -> None:
    try:
        eventloop.run(serve(opts))
    except OSError as exc:
        raise InputError(f"cannot listen on {opts.host}:{opts.port}: {exc.strerror or exc}") from None
