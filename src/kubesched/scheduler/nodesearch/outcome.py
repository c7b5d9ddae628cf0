"""What a node search found (``findNodesThatFitPod``'s feasible nodes and Diagnosis), as one
typed value, and what an attempt shows of itself to the results recorder and ``--explain``."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from kubesched.framework.diagnosis import Diagnosis
from kubesched.scheduler.framework.batch import PodSignature
from kubesched.scheduler.framework.shape_cache import ShapeEntry, Window

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


@dataclass(init=False, slots=True)
class SearchOutcome:
    """``findNodesThatFitPod``'s answer: the feasible rows in search order and the Diagnosis of
    the others. How they were found rides along for the steps after: Opportunistic Batching's
    signature and hint (``taken``: the hinted node, without a search), and the shape cache's
    entry and window (the scores then come from the entry). ``rejected``: the rows Filter
    rejected when no Diagnosis was built to count them (-1: count the Diagnosis);
    ``processed``: the nodes the rotation went through (0: it did not run), which moves
    ``nextStartNodeIndex``."""

    feasible: np.ndarray
    diagnosis: Diagnosis
    rejected: int = -1
    signature: PodSignature | None = None
    hint: str = ""
    taken: bool = False
    shape: ShapeEntry | None = None
    window: Window | None = None
    processed: int = 0

    def __init__(
        self,
        feasible: np.ndarray,
        diagnosis: Diagnosis,
        rejected: int = -1,
        signature: PodSignature | None = None,
        hint: str = "",
        taken: bool = False,
        shape: ShapeEntry | None = None,
        window: Window | None = None,
        processed: int = 0,
    ) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.feasible = feasible
        self.diagnosis = diagnosis
        self.rejected = rejected
        self.signature = signature
        self.hint = hint
        self.taken = taken
        self.shape = shape
        self.window = window
        self.processed = processed if window is None else window.processed

    def evaluated(self) -> int:
        """Nodes the search looked at: the feasible ones and those some plugin rejected."""
        if self.window is not None:
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
