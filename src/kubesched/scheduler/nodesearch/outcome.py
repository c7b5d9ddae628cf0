"""What a node search found (``findNodesThatFitPod``'s feasible nodes and Diagnosis), as one
typed value, and what an attempt shows of itself to the results recorder and ``--explain``."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.scheduler.framework.batch import PodSignature
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.nodetable import NodeTable

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


@functools.lru_cache(maxsize=256)
def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """``numFeasibleNodesToFind``: adaptive 50 − n/125 percent (floor 5%), at least 100 nodes."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


# no rows, and the Diagnosis of a search that built none (nothing reads it: nodes were found)
NO_ROWS = np.zeros(0, np.int64)
NO_DIAGNOSIS = Diagnosis.empty(())


class StoredAnswer:
    """A search answered from verdicts and raw scores a way of searching stored before (the shape
    cache's): the steps after the search ask it for the feasible nodes' scores and the attempt's
    report instead of running PreScore and Score. ``processed``: the nodes its rotation went
    through."""

    processed: int

    def scores(self, fwk: Framework, pod: PodInfo) -> np.ndarray:
        """``RunScorePlugins``' totals of the feasible nodes, in their order."""
        raise NotImplementedError

    def report(self, fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable) -> AttemptReport:
        """What ``explain`` and the results keep of the attempt."""
        raise NotImplementedError


@dataclass(init=False, slots=True)
class SearchOutcome:
    """``findNodesThatFitPod``'s answer: the feasible rows in search order and the Diagnosis of
    the others. How they were found rides along for the steps after: Opportunistic Batching's
    signature and hint (``taken``: the hinted node, without a search), and the stored answer of
    a search over stored verdicts (the scores then come from it). ``rejected``: the rows Filter
    rejected when no Diagnosis was built to count them (-1: count the Diagnosis);
    ``processed``: the nodes the rotation went through (0: it did not run), which moves
    ``nextStartNodeIndex``."""

    feasible: np.ndarray
    diagnosis: Diagnosis
    rejected: int = -1
    signature: PodSignature | None = None
    hint: str = ""
    taken: bool = False
    stored: StoredAnswer | None = None
    processed: int = 0

    def __init__(
        self,
        feasible: np.ndarray,
        diagnosis: Diagnosis,
        rejected: int = -1,
        signature: PodSignature | None = None,
        hint: str = "",
        taken: bool = False,
        stored: StoredAnswer | None = None,
        processed: int = 0,
    ) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.feasible = feasible
        self.diagnosis = diagnosis
        self.rejected = rejected
        self.signature = signature
        self.hint = hint
        self.taken = taken
        self.stored = stored
        self.processed = processed if stored is None else stored.processed

    def evaluated(self) -> int:
        """Nodes the search looked at: the feasible ones and those some plugin rejected."""
        if self.stored is not None:
            return self.processed
        rejected = self.rejected if self.rejected >= 0 else int(np.count_nonzero(self.diagnosis.codes))
        return len(self.feasible) + rejected


class AttemptReport:
    """What an attempt shows of itself to the results recorder and ``--explain`` (as
    kube-scheduler-simulator's wrapped plugins record it; upstream keeps none): the Filter
    verdicts, and either the feasible rows (nothing scored: one node fit, or the batch's hinted
    node, ``hint``) or the scored rows with each plugin's raw and normalized scores and the total."""

    diagnosis: Diagnosis | None
    feasible: np.ndarray | None
    hint: str | None
    rows: np.ndarray | None
    raw: dict[str, np.ndarray]
    scores: dict[str, np.ndarray]
    total: np.ndarray | None

    def __init__(self, diagnosis: Diagnosis | None) -> None:
        self.diagnosis = diagnosis
        self.feasible = None
        self.hint = None
        self.rows = None
        self.raw = {}
        self.scores = {}
        self.total = None

    def scored(
        self, rows: np.ndarray, raw: dict[str, np.ndarray], scores: dict[str, np.ndarray], total: np.ndarray
    ) -> AttemptReport:
        self.rows, self.raw, self.scores, self.total = rows, raw, scores, total
        return self
