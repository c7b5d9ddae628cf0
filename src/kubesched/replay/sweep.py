"""``kubesched sweep``: a grid of replays (workloads × policies × seeds) run in parallel.

Runs go to a local process pool (``--jobs``, the machine's cores by default), or to a Ray cluster
(``--ray ADDRESS``, ``pip install 'kubesched[ray]'``) or a Dask cluster (``--dask ADDRESS``,
``pip install 'kubesched[dask]'``). Each run is independent and seeded, so the table is the same
wherever it ran.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesched.errors import InputError
from kubesched.replay import trace
from kubesched.replay.runner import point_at, replay

SUMMARY_KEYS = ("allocatedPctAt100", "allocatedPctAtLoad", "fragmentationPctAt100", "fragmentationPctAtLoad")


@dataclass(frozen=True, slots=True)
class Run:
    workload: str
    cluster: tuple[str, ...]
    policy: str
    seed: int
    mode: str
    load: float
    tie_break: str | None  # None: each policy's default (replay's)
    gangs: str = "none"  # replay's --gangs


def run_one(run: Run) -> dict[str, Any]:
    """One replay, reduced to a result row (with its curve, for reports)."""
    r = replay(
        run.workload,
        list(run.cluster),
        mode=run.mode,
        policy=run.policy,
        load=run.load,
        seed=run.seed,
        tie_break=run.tie_break,
        gangs=run.gangs,
    )
    load_pct = round(run.load * 100)
    gangs = r.summary.get("gangs") or {}
    return {
        "workload": Path(run.workload).stem,
        "policy": run.policy,
        "gangs": run.gangs,
        "seed": run.seed,
        "pods": r.summary["pods"],
        "failed": r.summary["failed"],
        "gangsAdmitted": gangs.get("admitted"),
        "gangsFailed": gangs.get("failed"),
        "allocatedPctAt100": point_at(r.curve, 100, "allocatedPct"),
        "allocatedPctAtLoad": point_at(r.curve, load_pct, "allocatedPct"),
        "fragmentationPctAt100": point_at(r.curve, 100, "fragmentationPct"),
        "fragmentationPctAtLoad": point_at(r.curve, load_pct, "fragmentationPct"),
        "wallSeconds": r.timing["wallSeconds"],
        "curve": [
            {k: pt[k] for k in ("arrivedPct", "allocatedPct", "fragmentationPct") if k in pt}
            if run.mode == "arrivals"
            else {k: pt[k] for k in ("time", "allocatedPct", "fragmentationPct")}
            for pt in r.curve
        ],
    }


def grid(
    workloads: list[str],
    cluster: list[str],
    policies: list[str],
    seeds: list[int],
    *,
    mode: str,
    load: float,
    tie_break: str | None,
    gangs: list[str] | None = None,
) -> list[Run]:
    """Every (workload, policy, gangs, seed) run; ``gangs``: replay's --gangs values (["none"])."""
    for w in workloads:
        if not Path(w).is_file():
            raise trace.unreadable(Path(w), FileNotFoundError(2, "No such file or directory"))
    return [
        Run(w, tuple(cluster), p, s, mode, load, tie_break, g)
        for w, p, g, s in itertools.product(workloads, policies, gangs or ["none"], seeds)
    ]


def execute(
    runs: list[Run],
    *,
    jobs: int | None = None,
    ray_address: str | None = None,
    dask_address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Every run's row, in grid order."""
    if ray_address is not None:
        rows = list(_ray(runs, ray_address, progress))
    elif dask_address is not None:
        rows = list(_dask(runs, dask_address, progress))
    else:
        rows = list(_local(runs, jobs or os.cpu_count() or 1, progress))
    order = {run: i for i, run in enumerate(runs)}
    return [row for _, row in sorted(rows, key=lambda kv: order[kv[0]])]


def _local(runs: list[Run], jobs: int, progress: Callable[[int, int], None] | None) -> Iterator[tuple[Run, Any]]:
    if jobs <= 1 or len(runs) == 1:
        for i, run in enumerate(runs):
            yield run, run_one(run)
            if progress:
                progress(i + 1, len(runs))
        return
    with ProcessPoolExecutor(max_workers=min(jobs, len(runs))) as pool:
        futures = {pool.submit(run_one, run): run for run in runs}
        for i, fut in enumerate(as_completed(futures)):
            yield futures[fut], fut.result()
            if progress:
                progress(i + 1, len(runs))


def _ray(runs: list[Run], address: str, progress: Callable[[int, int], None] | None) -> Iterator[tuple[Run, Any]]:
    try:
        import ray
    except ImportError:
        raise InputError("--ray needs Ray: pip install 'kubesched[ray]'") from None
    ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    remote = ray.remote(run_one)
    pending = {remote.remote(run): run for run in runs}
    done = 0
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            yield pending.pop(ref), ray.get(ref)
            done += 1
            if progress:
                progress(done, len(runs))


def _dask(runs: list[Run], address: str, progress: Callable[[int, int], None] | None) -> Iterator[tuple[Run, Any]]:
    try:
        from dask.distributed import Client
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise InputError("--dask needs Dask: pip install 'kubesched[dask]'") from None
    client = Client(address)
    try:
        futures = {client.submit(run_one, run, pure=False): run for run in runs}
        for i, fut in enumerate(dask_completed(list(futures))):
            yield futures[fut], fut.result()
            if progress:
                progress(i + 1, len(runs))
    finally:
        client.close()
