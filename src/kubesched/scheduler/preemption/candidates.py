"""Choosing among preemption candidates (``pickOneNodeForPreemption`` in
``framework/preemption/preemption.go``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kubesched.api.pod import PodInfo

MAX_INT32 = 2**31 - 1


@dataclass(slots=True)
class Candidate:
    """A node and the pods to evict there, most important first (``MoreImportantPod``)."""

    node: str
    row: int
    victims: list[PodInfo]
    start_times: list[float]  # status.startTime of each victim; NaN when not started
    num_pdb_violations: int


def _earliest_start_of_top_priority(c: Candidate, now: float) -> float:
    """``GetEarliestPodStartTime``: among the highest-priority victims, the earliest start;
    a pod not started yet counts as starting now."""
    top = max(p.priority for p in c.victims)
    times = [now if math.isnan(t) else t for p, t in zip(c.victims, c.start_times, strict=True) if p.priority == top]
    return min(times)


def pick_one_node(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    """Each criterion keeps only the best-scoring candidates, in this order: fewest PDB
    violations; lowest highest-priority victim; lowest sum of victim priorities (each offset by
    MaxInt32 + 1 so negative priorities count right); fewest victims; latest start of the
    highest-priority victims; then the first one left."""
    if not candidates:
        return None
    for c in candidates:
        if not c.victims:  # nothing to evict any more: take it
            return c
    criteria: list[Callable[[Candidate], float]] = [
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(p.priority + MAX_INT32 + 1 for p in c.victims),
        lambda c: -len(c.victims),
        lambda c: _earliest_start_of_top_priority(c, now),
    ]
    remaining = list(candidates)
    for score in criteria:
        if len(remaining) == 1:
            break
        scores = [score(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
    return remaining[0]
