"""Progress of a long ``simulate`` on a terminal (rich's progress bar on standard error): pods
bound out of those in the queue, attempts and the rate. Never shown in JSON output or when
standard error is not a terminal."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress


class Progress:
    """A context manager; ``update(scheduler)`` is the runner's progress hook."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: RichProgress | None = None
        self._task: Any = None
        self._started = time.perf_counter()

    def __enter__(self) -> Progress:
        if self.enabled:
            self._bar = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[detail]}"),
                TimeElapsedColumn(),
                console=Console(stderr=True, highlight=False),
                transient=True,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task("loading", total=None, detail="")
        return self

    def update(self, sched: Any) -> None:
        if self._bar is None:
            return
        stats = sched.stats
        pods = stats.scheduled + sched.pending()
        elapsed = max(time.perf_counter() - self._started, 1e-9)
        detail = f"attempts {stats.attempts:,}, {stats.attempts / elapsed:,.0f}/s"
        self._bar.update(self._task, description="scheduling", completed=stats.scheduled, total=pods, detail=detail)

    def step(self, done: int, total: int, description: str = "replaying") -> None:
        """A plain count of ``total`` (replay's pods, sweep's runs)."""
        if self._bar is None:
            return
        elapsed = max(time.perf_counter() - self._started, 1e-9)
        self._bar.update(
            self._task, description=description, completed=done, total=total, detail=f"{done / elapsed:,.1f}/s"
        )

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(typ, exc, tb)
