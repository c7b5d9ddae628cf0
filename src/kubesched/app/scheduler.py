"""``kubesched scheduler``: the Scheduler against any API server through RemoteClient, run as
kube-scheduler runs (informers synced first, then the scheduling loop until SIGINT/SIGTERM)."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from typing import Any

import yaml

from kubesched.app.driver import RealtimeDriver
from kubesched.clock import RealClock
from kubesched.errors import InputError
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.listers import KINDS as LISTED_KINDS

log = logging.getLogger("kubesched.scheduler")
INFORMER_KINDS = ("Node", "Pod", *LISTED_KINDS, "PodDisruptionBudget")
SYNC_TIMEOUT = 60.0


def _check_kubeconfig(path: str) -> None:
    """One clear line for a kubeconfig that is missing or is not one, before the client reads it."""
    if not Path(path).is_file():
        raise InputError("kubeconfig not found", file=path)
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"not a kubeconfig: {str(exc).splitlines()[0]}", file=path) from None
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise InputError("not a kubeconfig: expected a mapping with clusters, users and contexts", file=path)


def run(kubeconfig: str, config: SchedulerConfig) -> None:
    from kubesched.client.remote import RemoteClient
    from kubesched.scheduler.binding import ThreadedBinding
    from kubesched.scheduler.scheduler import Scheduler

    _check_kubeconfig(kubeconfig)
    stop, wake = threading.Event(), threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()
        wake.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        client = RemoteClient(kubeconfig, kinds=INFORMER_KINDS, reporting_controller=config.profiles[0].scheduler_name)
    except Exception as exc:  # an unreadable kubeconfig or an unreachable server
        raise InputError(f"cannot use kubeconfig: {exc}", file=kubeconfig) from None
    try:
        if not client.wait_synced(SYNC_TIMEOUT):
            raise InputError(f"informers did not sync within {SYNC_TIMEOUT:.0f}s", file=kubeconfig)
        clock = RealClock()
        binding = ThreadedBinding()
        sched = Scheduler(client, config, clock, seed=0, binding=binding)
        log.info("informers synced; scheduling for profiles %s", ", ".join(sched.profiles))
        try:
            RealtimeDriver(sched, clock).run_thread(stop, wake)
        finally:
            binding.close()
    finally:
        client.close()
