"""The scheduler inside ``kubesched up``, restartable with a new configuration: as
kube-scheduler-simulator's scheduler service (``simulator/scheduler``: RestartScheduler), the
running Scheduler is stopped and a new one, built from the new KubeSchedulerConfiguration,
lists the cluster again and takes over the pending pods."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from kubesched.client import InProcessClient
from kubesched.clock import RealClock
from kubesched.health import LoopHealth
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.driver import RealtimeDriver
from kubesched.scheduler.profile import build_profiles
from kubesched.scheduler.scheduler import Scheduler

log = logging.getLogger("kubesched")


class SchedulerService:
    """One Scheduler at a time on the server's event loop."""

    def __init__(
        self,
        client: InProcessClient,
        config: SchedulerConfig,
        *,
        write_results: bool,
        results_node_limit: int,
        on_metrics: Callable[[Any, Any], None] | None = None,
        health: LoopHealth | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.write_results = write_results
        self.results_node_limit = results_node_limit
        self.on_metrics = on_metrics  # (old registry or None, new registry): the API server's /metrics
        self.health = health or LoopHealth()
        self.scheduler: Scheduler | None = None
        self.restarts = 0
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None

    def start(self) -> None:
        sched = Scheduler(
            self.client,
            self.config,
            RealClock(),
            seed=0,
            write_results=self.write_results,
            results_node_limit=self.results_node_limit,
            health=self.health,
        )
        self.health.register("scheduler")
        old = self.scheduler.metrics.registry if self.scheduler is not None else None
        self.scheduler = sched
        if self.on_metrics is not None:
            self.on_metrics(old, sched.metrics.registry)
        self._stop = asyncio.Event()
        driver = RealtimeDriver(sched, sched.clock)  # type: ignore[arg-type]
        self._task = asyncio.create_task(driver.run_async(self._stop))

    async def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        sched = self.scheduler
        if sched is not None:
            sched.stop_watching(self.client.store.stop_watch)

    async def restart(self, config: SchedulerConfig) -> None:
        """Apply a new configuration: it is checked first (an invalid one raises InputError and
        the running scheduler goes on), then the scheduler is replaced."""
        build_profiles(config)
        await self.stop()
        self.config = config
        self.restarts += 1
        self.start()
        log.info("scheduler restarted with a new configuration (%d profile(s))", len(config.profiles))
