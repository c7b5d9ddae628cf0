"""Preemption candidates and the choice among them (``pickOneNodeForPreemption`` in
``framework/preemption/preemption.go``), held as columns: one entry per candidate node."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

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


@dataclass(slots=True)
class CandidateColumns:
    """Per candidate: PDB violations, number of victims, highest victim priority, the sum of
    (priority + MaxInt32 + 1) over victims, and the earliest start among the victims of the
    highest priority (not started: now)."""

    violations: np.ndarray
    count: np.ndarray
    top_priority: np.ndarray
    offset_sum: np.ndarray
    top_earliest_start: np.ndarray

    def __len__(self) -> int:
        return len(self.count)

    def take(self, index: np.ndarray | slice) -> CandidateColumns:
        """The candidates at ``index`` (an index array or a slice), in that order."""
        return CandidateColumns(*(getattr(self, f)[index] for f in CandidateColumns.__slots__))


def columns_of(candidates: Sequence[Candidate], now: float) -> CandidateColumns:
    def top_start(c: Candidate) -> float:
        if not c.victims:
            return -math.inf
        top = max(p.priority for p in c.victims)
        return min(
            now if math.isnan(t) else t for p, t in zip(c.victims, c.start_times, strict=True) if p.priority == top
        )

    return CandidateColumns(
        np.array([c.num_pdb_violations for c in candidates], np.int64),
        np.array([len(c.victims) for c in candidates], np.int64),
        np.array([max((p.priority for p in c.victims), default=0) for c in candidates], np.int64),
        np.array([sum(p.priority + MAX_INT32 + 1 for p in c.victims) for c in candidates], np.int64),
        np.array([top_start(c) for c in candidates], np.float64),
    )


def pick_index(cols: CandidateColumns) -> int:
    """Each criterion keeps only the best candidates, in this order: fewest PDB violations;
    lowest highest-priority victim; lowest offset sum of victim priorities (so negative
    priorities count right); fewest victims; latest start of the highest-priority victims;
    then the first one left. A candidate with nothing to evict wins at once."""
    if len(cols) == 0:
        return -1
    empty = np.flatnonzero(cols.count == 0)
    if len(empty):
        return int(empty[0])
    alive = np.ones(len(cols), bool)
    for key in (cols.violations, cols.top_priority, cols.offset_sum, cols.count, -cols.top_earliest_start):
        if alive.sum() == 1:
            break
        best = key[alive].min()
        alive &= key == best
    return int(np.flatnonzero(alive)[0])


def pick_one_node(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    i = pick_index(columns_of(candidates, now))
    return None if i < 0 else candidates[i]
