"""``kubesched scheduler``: the Scheduler against any API server through RemoteClient, run as
kube-scheduler runs (``cmd/kube-scheduler/app/server.go``): informers synced first and kept
current, then, with leader election, pods are scheduled only while this replica holds the
Lease; a lost lease ends the process with exit 1, SIGINT/SIGTERM releases it and exits 0."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubesched.app import gc_settings
from kubesched.app.kubeconfig import check_kubeconfig
from kubesched.client.connection import check_in_cluster, in_cluster_token, service_account_dir
from kubesched.clock import RealClock
from kubesched.errors import InputError
from kubesched.leaderelection.config import LeaderElectionConfig, with_flags
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.driver import RealtimeDriver
from kubesched.scheduler.informers import FIELD_SELECTORS
from kubesched.scheduler.listers import KINDS as LISTED_KINDS
from kubesched.scheduler.resultstore import NODE_LIMIT

log = logging.getLogger("kubesched.scheduler")
INFORMER_KINDS = ("Node", "Pod", *LISTED_KINDS, "PodDisruptionBudget")
SYNC_TIMEOUT = 60.0


def leader_election_config(config: SchedulerConfig, flags: dict[str, Any] | None = None) -> LeaderElectionConfig:
    """The file's ``leaderElection`` section with the ``--leader-elect*`` flags over it, validated;
    errors name the configuration file and the field."""
    try:
        return with_flags(config.leader_election, flags or {}).validate()
    except InputError as exc:
        if config.source == "<default>":
            raise  # no file: the value came from a flag
        raise exc.located(file=config.source, obj="KubeSchedulerConfiguration") from None


def identity() -> str:
    """kube-scheduler's lock identity: the hostname and a unique suffix."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def kubeconfig_token(path: str) -> str | None:
    """The bearer token of the kubeconfig's current user, if it has one."""
    doc = yaml.safe_load(Path(path).read_text()) or {}
    contexts = {c.get("name"): c.get("context") or {} for c in doc.get("contexts") or []}
    user = (contexts.get(doc.get("current-context")) or {}).get("user")
    for u in doc.get("users") or []:
        if u.get("name") == user:
            token = (u.get("user") or {}).get("token")
            return str(token) if token else None
    return None


@dataclass(slots=True)
class Serving:
    """``--bind-address`` / ``--secure-port`` (0: no endpoint)."""

    host: str = "127.0.0.1"
    port: int = 10259


def run(
    kubeconfig: str | None,
    config: SchedulerConfig,
    leader_flags: dict[str, Any] | None = None,
    serving: Serving | None = None,
    *,
    write_results: bool = False,
    results_node_limit: int = NODE_LIMIT,
) -> int:
    """Run until SIGINT/SIGTERM (0) or, with leader election, until the lease is lost (the
    process exits 1 at once, as kube-scheduler's OnStoppedLeading does)."""
    from kubesched.app.delegated_auth import DelegatedAuth
    from kubesched.app.serving import WATCHDOG_TOLERANCE, SchedulerServer
    from kubesched.client.remote import RemoteClient
    from kubesched.leaderelection.elector import Callbacks, LeaderElector
    from kubesched.leaderelection.leader_metric import LEADER_ELECTION_MASTER_STATUS
    from kubesched.leaderelection.leaselock import LeaseLock
    from kubesched.scheduler.binding import ThreadedBinding
    from kubesched.scheduler.scheduler import Scheduler

    election = leader_election_config(config, leader_flags)
    if kubeconfig is None:
        check_in_cluster()  # the pod's service account, as rest.InClusterConfig
    else:
        check_kubeconfig(kubeconfig)
    source = kubeconfig or str(service_account_dir())
    stop, wake = threading.Event(), threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()
        wake.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        client = RemoteClient(
            kubeconfig,
            kinds=INFORMER_KINDS,
            reporting_controller=config.profiles[0].scheduler_name,
            qps=config.client_connection.qps,
            burst=config.client_connection.burst,
            field_selectors=FIELD_SELECTORS,
        )
    except Exception as exc:  # an unreadable kubeconfig or an unreachable server
        raise InputError(f"cannot use kubeconfig: {exc}", file=source) from None
    elector: LeaderElector | None = None
    stopped_leading = threading.Event()
    serving = serving if serving is not None else Serving()
    server: SchedulerServer | None = None
    try:
        if not client.wait_synced(SYNC_TIMEOUT):
            raise InputError(f"informers did not sync within {SYNC_TIMEOUT:.0f}s", file=source)
        clock = RealClock()
        binding = ThreadedBinding()
        sched = Scheduler(
            client,
            config,
            clock,
            seed=0,
            binding=binding,
            write_results=write_results,
            results_node_limit=results_node_limit,
        )
        gc_settings.freeze()  # the synced cluster and the scheduler built on it
        if election.leader_elect:
            me = identity()
            log.info("leader election identity %s", me)

            master = LEADER_ELECTION_MASTER_STATUS.labels(election.resource_name)
            master.set(0)

            def started() -> None:
                master.set(1)
                log.info("started leading as %s; scheduling for profiles %s", me, ", ".join(sched.profiles))
                wake.set()

            def lost() -> None:
                master.set(0)
                stopped_leading.set()
                if stop.is_set():
                    return  # asked to terminate: the main thread exits 0 once the lease is released
                # the lease is lost: exit at once, without another API write (upstream: FlushAndExit(1))
                log.error("Leaderelection lost")
                logging.shutdown()
                os._exit(1)

            lock = LeaseLock(client.api, election.resource_namespace, election.resource_name, me)
            elector = LeaderElector(lock, election, Callbacks(on_started_leading=started, on_stopped_leading=lost))
        # serving starts before the election (as kube-scheduler's): a port already taken is an error
        # before this replica can take the lease
        if serving.port:
            checks: dict[str, Any] = {"loop/scheduler": lambda: "stuck" if sched.health.stuck() else None}
            if elector is not None:
                checks["leaderElection"] = lambda: elector.check(WATCHDOG_TOLERANCE)
            server = SchedulerServer(
                serving.host,
                serving.port,
                kubeconfig_token(kubeconfig) if kubeconfig else in_cluster_token(),
                checks,
                [sched.metrics.registry],
                DelegatedAuth(client.api),
            )
            try:
                client.spawn(server.start()).result(10)
            except OSError as exc:
                raise InputError(f"cannot listen on {serving.host}:{serving.port}: {exc.strerror or exc}") from None
            log.info("serving /healthz, /livez, /readyz and /metrics on https://%s:%d", serving.host, serving.port)
        if elector is not None:
            client.spawn(elector.run())
            active = elector.is_leading
        else:
            log.info("informers synced; scheduling for profiles %s", ", ".join(sched.profiles))
            active = None
        try:
            RealtimeDriver(sched, clock).run_thread(stop, wake, active)
        finally:
            binding.close()
            if elector is not None:
                log.info("Requested to terminate, exiting")
                client.spawn(elector.stop())
                stopped_leading.wait(election.retry_period + 2)
    finally:
        if server is not None:
            with contextlib.suppress(Exception):
                client.spawn(server.stop()).result(5)
        client.close()
    return 0
