"""The score policies of "Beware of Fragmentation" (Weng et al., USENIX ATC'23), as Score plugins.

Each scores every feasible node in one vectorized pass over the GPU state (``state.py``) and the
node table's free CPU. The formulas follow the paper's simulator
(hkust-adsl/kubernetes-scheduler-simulator, ``pkg/simulator/plugin/*_score.go``), including its
integer truncations; the paper runs each alone in its profile, weight 1000, scoring all nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.framework import CycleState, InputError, NodeTableView, PodInfo, PreScorePlugin, ScorePlugin, Status
from kubesched.gpus.sharing import MAX_SPEC_CPU, MAX_SPEC_GPU, MILLI, Fragmentation, GpuRequest, TypicalPod
from kubesched_gpushare.gpushare import sigmoid
from kubesched_gpushare.state import AFFINITY_TAGS, GpuState, pod_request

MAX_NODE_SCORE = 100
# below this many rows to score afresh, FGDScore walks them one by one (``amounts_after``): the
# vectorized pass costs some forty numpy calls whatever the number of rows
FEW_ROWS = 8


class _GpuScore(ScorePlugin):
    """Shared set-up: the pod's request and, for the candidate rows, the node states."""

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        self.state = GpuState.of(handle)

    def inputs(self, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> tuple[GpuRequest, np.ndarray, np.ndarray]:
        """The request, the state rows of ``rows`` and their free CPU (millicores)."""
        srows = self.state.rows_for(nodes)[rows]
        cpu_left = nodes.alloc[0, rows] - nodes.requested[0, rows]
        return pod_request(pod), srows, cpu_left


class RandomScore(_GpuScore, PreScorePlugin):
    """Random: one feasible node, drawn uniformly in PreScore, scores 100 and the others 0."""

    name = "RandomScore"

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> Status | None:
        state.write(self.name, int(rows[self.state.rng.randrange(len(rows))]) if len(rows) else -1)
        return None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        chosen = state.get(self.name, -1)
        return np.where(rows == chosen, MAX_NODE_SCORE, 0).astype(np.int64)


class DotProductScore(_GpuScore):
    """DotProduct (Tetris-like alignment): the node's free (CPU, GPU) and the pod's request, each
    divided by the largest node's (128 CPUs, 8 GPUs), are multiplied; the score is
    100·(1 − product/2), so the node whose free resources align least with the request, the
    fullest fit, scores highest (dimensions merged, normalized by the maximum: the paper's
    setting)."""

    name = "DotProductScore"

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        req, srows, cpu_left = self.inputs(pod, nodes, rows)
        gpu_left = self.state.gpu_left[srows].sum(axis=1)
        dot = (cpu_left / MAX_SPEC_CPU) * (req.cpu_milli / MAX_SPEC_CPU) + (gpu_left / MAX_SPEC_GPU) * (
            req.total_milli / MAX_SPEC_GPU
        )
        score = np.trunc(MAX_NODE_SCORE * (1 - dot / 2)).astype(np.int64)
        return np.where(cpu_left < req.cpu_milli, 0, score)


class GpuClusteringScore(_GpuScore):
    """GPU clustering: pods of one GPU shape (share, 1, 2, 4 or 8 GPUs) are kept together. A node
    whose GPU pods all have the pod's shape scores in (75, 100], one that also runs other shapes
    in (50, 75], an idle node in (25, 50], a node of other shapes only in [0, 25]; within a band,
    fuller nodes score higher (25·(8000 − free GPU milli)/8000). Pods without GPUs score 0."""

    name = "GpuClusteringScore"

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        req, srows, _ = self.inputs(pod, nodes, rows)
        if not req.gpu_count:
            return np.zeros(len(rows), np.int64)
        g = self.state
        base = (MAX_NODE_SCORE // 4) * (MAX_SPEC_GPU - g.gpu_left[srows].sum(axis=1)) // MAX_SPEC_GPU
        aff = g.affinity[srows]
        col = AFFINITY_TAGS.index(req.affinity) if req.affinity in AFFINITY_TAGS else len(AFFINITY_TAGS)
        kinds = (aff > 0).sum(axis=1)
        mine = aff[:, col] > 0
        band = np.where(mine, np.where(kinds == 1, 75, 50), np.where(kinds == 0, 25, 0))
        return (base + band).astype(np.int64)


class GpuPackingScore(_GpuScore):
    """GPU packing: prefer sharing partly used GPUs, then wholly free GPUs of a partly used node,
    then an idle node. Using shared GPUs scores 100 − (their free % summed)/10, at least 50; using
    free GPUs of a used node 50 − their number, at least 33; an idle node 33 − its GPUs, at least
    that number. GPUs are taken fullest first. Pods without GPUs score 0."""

    name = "GpuPackingScore"

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        req, srows, _ = self.inputs(pod, nodes, rows)
        if not req.gpu_count:
            return np.zeros(len(rows), np.int64)
        g = self.state
        left = g.gpu_left[srows]
        count = g.gpu_count[srows]
        fully_free = (left == MILLI).sum(axis=1)
        ordered = np.sort(left, axis=1)  # fullest first (SortedMilliGpuLeftIndexList ascending)
        eligible = ordered >= req.gpu_milli
        chosen = eligible & (np.cumsum(eligible, axis=1) <= req.gpu_count)
        free_used = (chosen & (ordered == MILLI)).sum(axis=1)
        ratio = np.where(chosen, ordered * 100 // MILLI, 0).sum(axis=1)
        idle = np.maximum(MAX_NODE_SCORE // 3 - fully_free, fully_free)
        whole = np.maximum(MAX_NODE_SCORE // 2 - free_used, MAX_NODE_SCORE // 3)
        shared = np.maximum(MAX_NODE_SCORE - ratio // 10, MAX_NODE_SCORE // 2)
        return np.where(fully_free == count, idle, np.where(free_used > 0, whole, shared)).astype(np.int64)


class BestFitScore(_GpuScore):
    """Best fit: the node left with the least free resources once the pod is placed, measured as
    ½·(free CPU − request)/128 CPUs + ½·(free GPU − request)/8 GPUs and turned into 100·(1 − that);
    scores are then spread over [0, 100] by min-max normalization."""

    name = "BestFitScore"

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        req, srows, cpu_left = self.inputs(pod, nodes, rows)
        gpu_left = self.state.gpu_left[srows].sum(axis=1)
        waste = (cpu_left - req.cpu_milli) / MAX_SPEC_CPU * 0.5 + (gpu_left - req.total_milli) / MAX_SPEC_GPU * 0.5
        return np.trunc((1.0 - waste) * MAX_NODE_SCORE).astype(np.int64)

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray | None:
        if not len(scores):
            return None
        lo, hi = int(scores.min()), int(scores.max())
        if hi == lo:
            return np.zeros(len(scores), np.int64)
        return (scores - lo) * MAX_NODE_SCORE // (hi - lo)


@dataclass
class TypicalPodArg:
    cpu_milli: int
    gpu_milli: int = 0
    gpu_count: int = 0
    gpu_model: str = ""
    weight: float = 0.0


@dataclass
class FGDArgs:
    """pluginConfig args of FGDScore: the workload's typical pods (``kubesched replay`` computes
    them from the workload it replays) with their frequencies."""

    typical_pods: list[TypicalPodArg] = field(default_factory=list)

    def validate(self) -> None:
        if not self.typical_pods:
            raise InputError(
                "Required value: FGD measures fragmentation against the workload's typical pods", field="typicalPods"
            )
        for i, t in enumerate(self.typical_pods):
            if t.weight <= 0:
                raise InputError(f"Invalid value: {t.weight}: must be greater than 0", field=f"typicalPods[{i}].weight")
            if t.gpu_count < 0 or t.gpu_milli < 0 or t.cpu_milli < 0:
                raise InputError("Invalid value: must not be negative", field=f"typicalPods[{i}]")


class _NodeMemo:
    """A value per GPU-state row, computed again only for the rows whose devices (their version)
    or free CPU changed since: FGD's scores for one pod shape, or each node's fragmentation."""

    def __init__(self, frag: Fragmentation, size: int, dtype: Any) -> None:
        self.frag = frag
        self.values = np.zeros(size, dtype)
        self.versions = np.full(size, -1, np.int64)
        self.cpus = np.full(size, -1, np.int64)

    def serves(self, frag: Fragmentation, size: int) -> bool:
        """Made for this workload's fragmentation and large enough for every state row."""
        return self.frag is frag and len(self.values) >= size

    def stale(self, g: GpuState, srows: np.ndarray, cpu_left: np.ndarray) -> np.ndarray:
        """Which of ``srows`` (free CPU ``cpu_left``) changed since their values were kept."""
        return (self.versions[srows] != g.version[srows]) | (self.cpus[srows] != cpu_left)

    def put(self, g: GpuState, srows: np.ndarray, cpu_left: np.ndarray, values: np.ndarray) -> None:
        self.values[srows] = values
        self.versions[srows] = g.version[srows]
        self.cpus[srows] = cpu_left

    def get(
        self,
        g: GpuState,
        srows: np.ndarray,
        cpu_left: np.ndarray,
        compute: Callable[[np.ndarray, np.ndarray], np.ndarray],
    ) -> np.ndarray:
        """The values of ``srows`` (free CPU ``cpu_left``); ``compute(rows, their cpu_left)``
        for the stale ones."""
        stale = self.stale(g, srows, cpu_left)
        if np.count_nonzero(stale):
            todo = srows[stale]
            left = cpu_left[stale]
            self.put(g, todo, left, compute(todo, left))
        return self.values[srows]


class FGDScore(_GpuScore):
    """Fragmentation gradient descent. A node's fragmentation for a workload is the GPU milli it
    has free that a task drawn from the workload's typical tasks could not use: all of it when the
    task cannot run there (it wants no GPU, another model, more GPUs with room, more CPU), else the
    free share of the GPUs too full for the task; weighted by the tasks' frequencies. The score is
    sigmoid((before − after)/1000)·100 for the change placing the pod would make, so the node whose
    fragmentation grows least (or shrinks most) wins; a GPU share is tried on each GPU it fits and
    the best counts. Scores of a node are reused for pods of the same shape until its state changes."""

    name = "FGDScore"
    Args = FGDArgs
    args: FGDArgs

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        total = sum(t.weight for t in self.args.typical_pods) or 1.0
        typical = [
            TypicalPod(GpuRequest(t.cpu_milli, t.gpu_milli, t.gpu_count, t.gpu_model), t.weight / total)
            for t in self.args.typical_pods
        ]
        self.state.frag = Fragmentation(typical, self.state.models)
        self._cache: dict[GpuRequest, _NodeMemo] = {}  # scores, per pod shape
        self._now: _NodeMemo | None = None  # each node's fragmentation as it stands, whatever the pod

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        if not pod.requests:
            return np.full(len(rows), MAX_NODE_SCORE, np.int64)
        req, srows, cpu_left = self.inputs(pod, nodes, rows)
        g = self.state
        frag = g.frag
        assert frag is not None
        memo = self._cache.get(req)
        if memo is None or not memo.serves(frag, len(g.names)):
            memo = self._cache[req] = _NodeMemo(frag, len(g.names), np.int64)
        return memo.get(g, srows, cpu_left, lambda todo, left: self._compute(frag, req, todo, left))

    def _compute(self, frag: Fragmentation, req: GpuRequest, srows: np.ndarray, cpu_left: np.ndarray) -> np.ndarray:
        if len(srows) < FEW_ROWS:
            return self._compute_few(frag, req, srows, cpu_left)
        g = self.state
        left = g.gpu_left[srows]
        model = g.model[srows]
        k = len(srows)
        ordered = np.sort(left, axis=1)
        if req.shares_gpu:
            # every (node, GPU) the share fits, GPUs with equal free shares once (fragmentation does
            # not depend on which GPU is which): that GPU loses the share
            distinct = np.ones(ordered.shape, bool)
            distinct[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
            node_i, gpu_i = np.nonzero((ordered >= req.gpu_milli) & distinct)
            states = ordered[node_i]
            states[np.arange(len(node_i)), gpu_i] -= req.gpu_milli
            new = self._amounts(frag, srows, cpu_left, left, model, cpu_left[node_i] - req.cpu_milli, states, node_i)
            assert self._now is not None  # kept by _amounts
            old = self._now.values[srows[node_i]]
            each = np.trunc(sigmoid((old - new) / MILLI) * MAX_NODE_SCORE).astype(np.int64)
            best = np.zeros(k, np.int64)
            np.maximum.at(best, node_i, each)
            return best
        # NodeResource.Sub: the CPU, and the fullest GPUs with room for each whole GPU asked.
        # Fragmentation sums over a node's GPUs, so the new state is kept in sorted order
        if req.gpu_count:
            eligible = ordered >= req.gpu_milli
            chosen = eligible & (np.cumsum(eligible, axis=1) <= req.gpu_count)
            ordered = ordered - chosen * req.gpu_milli
        fits = cpu_left >= req.cpu_milli
        new = self._amounts(
            frag,
            srows,
            cpu_left,
            left,
            model,
            np.where(fits, cpu_left - req.cpu_milli, cpu_left),
            np.where(fits[:, None], ordered, left),
            None,
        )
        assert self._now is not None  # kept by _amounts
        return np.trunc(sigmoid((self._now.values[srows] - new) / MILLI) * MAX_NODE_SCORE).astype(np.int64)

    def _compute_few(self, frag: Fragmentation, req: GpuRequest, srows: np.ndarray, cpu_left: np.ndarray) -> np.ndarray:
        """``_compute`` for the few rows that changed since the pod's shape was last scored
        (usually the one or two a pod was bound to or left), node by node through
        ``Fragmentation.amounts_after``: the same amounts bit for bit, so the same scores, at a
        fraction of the numpy calls. The sigmoid is still numpy's, over all the candidates at once."""
        g = self.state
        if self._now is None or not self._now.serves(frag, len(g.names)):
            self._now = _NodeMemo(frag, len(g.names), np.float64)
        now = self._now
        gains: list[float] = []
        owner: list[int] = []
        for i, (r, cpu) in enumerate(zip(srows.tolist(), cpu_left.tolist(), strict=True)):
            left = g.gpu_left[r].tolist()
            model = int(g.model[r])
            version = int(g.version[r])
            if now.versions[r] == version and now.cpus[r] == cpu:
                before = float(now.values[r])
            else:
                before = frag.amount_of(cpu, left, model)
                now.values[r], now.versions[r], now.cpus[r] = before, version, cpu
            for after in frag.amounts_after(cpu, left, model, req):
                gains.append((before - after) / MILLI)
                owner.append(i)
        best = [0] * len(srows)
        if gains:
            each = np.trunc(sigmoid(np.array(gains)) * MAX_NODE_SCORE).astype(np.int64).tolist()
            for i, score in zip(owner, each, strict=True):
                if score > best[i]:
                    best[i] = score
        return np.array(best, np.int64)

    def _amounts(
        self,
        frag: Fragmentation,
        srows: np.ndarray,
        cpu_left: np.ndarray,
        left: np.ndarray,
        model: np.ndarray,
        new_cpu: np.ndarray,
        new_left: np.ndarray,
        of: np.ndarray | None,
    ) -> np.ndarray:
        """The fragmentation of the new states (node ``of[i]``'s model, or each node's when None);
        in the same pass, that of the nodes as they stand where it is not kept already (it does
        not depend on the pod's shape: one memo for every shape)."""
        g = self.state
        if self._now is None or not self._now.serves(frag, len(g.names)):
            self._now = _NodeMemo(frag, len(g.names), np.float64)
        new_model = model if of is None else model[of]
        stale = self._now.stale(g, srows, cpu_left)
        n = int(np.count_nonzero(stale))
        if not n:
            return frag.amount(new_cpu, new_left, new_model)
        both = frag.amount(
            np.concatenate([cpu_left[stale], new_cpu]),
            np.concatenate([left[stale], new_left]),
            np.concatenate([model[stale], new_model]),
        )
        self._now.put(g, srows[stale], cpu_left[stale], both[:n])
        return both[n:]
