"""``kubesched scheduler``: the Scheduler against any API server through RemoteClient, run as
kube-scheduler runs (informers synced first, then the scheduling loop until SIGINT/SIGTERM)."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from typing import Any

from kubesched.app.driver import RealtimeDriver
from kubesched.clock import RealClock
from kubesched.errors import InputError
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.listers import KINDS as LISTED_KINDS

log = logging.getLogger("kubesched.scheduler")
INFORMER_KINDS = ("Node", "Pod", *LISTED_KINDS, "PodDisruptionBudget")
SYNC_TIMEOUT = 60.0


def run(kubeconfig: str, config: SchedulerConfig) -> None:
    from kubesched.client.remote import RemoteClient
    from kubesched.scheduler.scheduler import Scheduler

    if not Path(kubeconfig).is_file():
        raise InputError("kubeconfig not found", file=kubeconfig)
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
        sched = Scheduler(client, config, clock, seed=0)
        log.info("informers synced; scheduling for profiles %s", ", ".join(sched.profiles))
        RealtimeDriver(sched, clock).run_thread(stop, wake)
    finally:
        client.close()
