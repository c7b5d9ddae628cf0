"""``selectHost`` and the sorted rest of the feasible nodes Opportunistic Batching keeps
(``pkg/scheduler/schedule_one.go``): the top-scored node, uniformly at random among equals."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from kubesched.scheduler.framework.batch import PodSignature, SortedNodes
from kubesched.scheduler.nodetable import NodeTable


class HostPicker:
    """The tie-break of ``selectHost``. ``tie_break``: "random" (upstream's reservoir sampling
    among the best); "name", the smallest node name among the best, as the FGD paper's simulator
    patched its kube-scheduler v1.20 fork (github.com/mental2008/kubernetes,
    generic_scheduler.go) "for reproducibility" (replay offers it to reproduce that paper,
    nothing else uses it); "permutation", names compared as ``tie_names`` renames them
    (replay/tiebreak.py)."""

    rng: random.Random
    tie_break: str
    tie_names: dict[str, str] | None
    _rank_key: tuple[Any, int] | None
    _rank: np.ndarray

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.tie_break = "random"
        self.tie_names = None
        self._rank_key = None
        self._rank = np.zeros(0, np.int64)

    def break_ties_by(self, names: dict[str, str]) -> None:
        """The "permutation" tie-break: among the best, the node whose ``names`` entry is smallest."""
        self.tie_break, self.tie_names, self._rank_key = "permutation", names, None

    def select(self, nodes: NodeTable, feasible: np.ndarray, total: np.ndarray) -> int:
        """The position in ``feasible`` of a top-scored node."""
        if len(feasible) == 1:
            return 0
        top = (total == np.maximum.reduce(total)).nonzero()[0]  # the ufunc: no method wrapper
        if len(top) == 1:
            return int(top[0])
        if self.tie_break != "random":
            return int(top[int(np.argmin(self._name_rank(nodes)[feasible[top]]))])
        return int(top[self.rng.randrange(len(top))])

    def sorted_rest(
        self, nodes: NodeTable, feasible: np.ndarray, total: np.ndarray, pick: int, signature: PodSignature | None
    ) -> SortedNodes:
        """The feasible nodes the pod did not take, best first: ``sortedNodeScores`` after its
        first Pop (score, then a random number per node among equals; by name with a name
        tie-break). Built only for a signed pod: the others keep no list."""
        k = len(feasible) - 1
        if signature is None or k <= 0:
            return SortedNodes.unlisted(max(k, 0))
        rest = np.delete(np.arange(len(feasible)), pick)
        if self.tie_break != "random":
            second = self._name_rank(nodes)[feasible[rest]]
        else:
            second = -np.frombuffer(self.rng.randbytes(4 * k), np.uint32).astype(np.int64)
        order = rest[np.lexsort((second, -total[rest]))]
        return SortedNodes(nodes.names, feasible[order])  # names looked up as they are popped

    def _name_rank(self, nodes: NodeTable) -> np.ndarray:
        """Each row's position in node-name order, or in the order of ``tie_names`` with the
        "permutation" tie-break (cached while the table's layout holds)."""
        key = (nodes.index, len(nodes.index))
        if self._rank_key is None or self._rank_key[0] is not key[0] or self._rank_key[1] != key[1]:
            names = nodes.names
            if self.tie_break == "permutation" and self.tie_names is not None:
                names = [self.tie_names.get(n, n) for n in names]
            rank = np.empty(len(names), np.int64)
            rank[np.argsort(np.array(names))] = np.arange(len(names))
            self._rank_key, self._rank = key, rank
        return self._rank
