"""Resource scoring strategies, vectorized over nodes (``noderesources/{least,most}_allocated.go``,
``requested_to_capacity_ratio.go``, ``balanced_allocation.go``, ``resource_allocation.go``).

Matrices are resources × rows (int64), as gathered by ``ResourceRows``; every function
reproduces upstream's integer (or float, for BalancedAllocation) arithmetic exactly. The
number of numpy calls is kept small on purpose: with a few hundred scored nodes their fixed
cost, not the arithmetic, is what a cycle pays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.api.resources import CPU, MEMORY, is_scalar_resource
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import MAX_NODE_SCORE
from kubesched.framework.nodes import NodeTableView

_ROWS_KEY = "noderesources/rows"


def _weighted_mean(per: np.ndarray, alloc: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ w·score / Σ w (integer division) over the resources with allocatable > 0."""
    if np.count_nonzero(alloc) == alloc.size:  # all(), at a third of its cost on small arrays
        return (weights @ per) // max(int(weights.sum()), 1)
    w = (alloc != 0) * weights[:, None]
    weight_sum = w.sum(axis=0)
    return np.where(weight_sum > 0, (per * w).sum(axis=0) // np.maximum(weight_sum, 1), 0)


def least_allocated(req: np.ndarray, alloc: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ w·((alloc − req)·100 / alloc) / Σ w; 0 for a resource over capacity; alloc 0 skipped."""
    if np.count_nonzero(alloc) == alloc.size:  # the common case, in place on one new array
        per = alloc - req
        np.maximum(per, 0, out=per)
        per *= MAX_NODE_SCORE
        per //= alloc
        return (weights @ per) // max(int(weights.sum()), 1)
    per = np.maximum(alloc - req, 0) * MAX_NODE_SCORE // np.maximum(alloc, 1)
    return _weighted_mean(per, alloc, weights)


def most_allocated(req: np.ndarray, alloc: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ w·(min(req, alloc)·100 / alloc) / Σ w."""
    per = np.minimum(req, alloc) * MAX_NODE_SCORE // np.maximum(alloc, 1)
    return _weighted_mean(per, alloc, weights)


def broken_linear(shape: tuple[tuple[int, int], ...], util: np.ndarray) -> np.ndarray:
    """``helper.BuildBrokenLinearFunction`` over scaled shape points, integer arithmetic."""
    us = np.array([u for u, _ in shape], np.int64)
    ss = np.array([s * (MAX_NODE_SCORE // 10) for _, s in shape], np.int64)
    i = np.searchsorted(us, util, side="left")
    out = np.where(i >= len(us), ss[-1], ss[0])
    mid = (i > 0) & (i < len(us))
    if mid.any():
        j = i[mid]
        du = us[j] - us[j - 1]
        num = (ss[j] - ss[j - 1]) * (util[mid] - us[j - 1])
        q = np.abs(num) // du  # Go's division truncates toward zero
        out[mid] = ss[j - 1] + np.where(num < 0, -q, q)
    return out


def requested_to_capacity_ratio(
    req: np.ndarray, alloc: np.ndarray, weights: np.ndarray, shape: tuple[tuple[int, int], ...]
) -> np.ndarray:
    """Σ w·f(util) / Σ w over resources scoring > 0, rounded; f from the configured shape."""
    util = np.where(req > alloc, 100, req * 100 // np.maximum(alloc, 1))
    per = broken_linear(shape, util)
    w = ((alloc != 0) & (per > 0)) * weights[:, None]
    weight_sum = w.sum(axis=0)
    ratio = (per * w).sum(axis=0) / np.maximum(weight_sum, 1)
    return np.where(weight_sum > 0, np.floor(ratio + 0.5).astype(np.int64), 0)


def balanced_scores(base: np.ndarray, pod_req: np.ndarray, alloc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int((1 − std(fractions))·100) without and with the pod (``balancedResourceScorer``):
    fractions min(req/alloc, 1) over resources with allocatable > 0; std is |f1 − f2|/2 for two
    of them, the population std for more, 0 otherwise."""
    # without / with the pod × resources × rows; the sums are exact in float64 (below 2**53)
    pair = np.zeros((2, len(pod_req), 1))
    pair[1, :, 0] = pod_req
    stacked = base + pair
    if alloc.shape[0] == 2 and np.count_nonzero(alloc) == alloc.size:
        frac = np.divide(stacked, alloc, out=stacked)
        np.minimum(frac, 1.0, out=frac)
        std = np.subtract(frac[:, 0], frac[:, 1])
        np.abs(std, out=std)
        std /= 2
    else:
        valid = alloc > 0
        frac = np.minimum(stacked / np.maximum(alloc, 1), 1.0) * valid
        k = valid.sum(axis=0)
        mean = frac.sum(axis=1) / np.maximum(k, 1)
        var = (((frac - mean[:, None, :]) ** 2) * valid).sum(axis=1) / np.maximum(k, 1)
        std = np.where(k > 2, np.sqrt(var), 0.0)
        if alloc.shape[0] >= 2 and (k == 2).any():
            first_two = np.argsort(~valid, axis=0, kind="stable")[:2]
            pair = np.take_along_axis(frac, np.broadcast_to(first_two, (2, *first_two.shape)), axis=1)
            std = np.where(k == 2, np.abs(pair[:, 0] - pair[:, 1]) / 2, std)
    np.subtract(1, std, out=std)
    std *= MAX_NODE_SCORE
    scores = std.astype(np.int64)
    return scores[0], scores[1]


@dataclass(slots=True)
class ResourceRows:
    """Allocatable, requested and non-zero requested of the scored rows (resources × rows),
    gathered once per cycle and shared by the resource score plugins."""

    rows: np.ndarray
    alloc: np.ndarray
    requested: np.ndarray
    nonzero: np.ndarray
    _positive: bool | None = None

    def cpu_memory_positive(self) -> bool:
        """Every row has some CPU and memory allocatable (asked once per cycle)."""
        if self._positive is None:
            alloc = self.alloc[:2]
            self._positive = int(np.count_nonzero(alloc)) == alloc.size
        return self._positive

    @classmethod
    def of(cls, state: CycleState, nodes: NodeTableView, rows: np.ndarray) -> ResourceRows:
        cached: ResourceRows | None = state.get(_ROWS_KEY)
        if cached is not None and cached.rows is rows:
            return cached
        out = cls(rows, *nodes.gather_resources(rows))
        state.write(_ROWS_KEY, out)
        return out


def requested_matrix(
    rr: ResourceRows, nodes: NodeTableView, pod: PodInfo, resources: tuple[tuple[str, int], ...], *, use_requested: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(requested without the pod (resources × rows), the pod's request, allocatable).

    ``calculateResourceAllocatableRequest``: cpu/memory read NonZeroRequested unless
    ``use_requested``; an extended resource the pod doesn't request is skipped (allocatable 0).
    """
    if len(resources) == 2 and resources[0][0] == CPU and resources[1][0] == MEMORY:
        # the default resources, which lead every node table (``NodeTable.res_names``)
        if use_requested:
            req = pod.requests
            return rr.requested[:2], np.array((req.get(CPU, 0), req.get(MEMORY, 0)), np.int64), rr.alloc[:2]
        return rr.nonzero, np.array((pod.non_zero_cpu, pod.non_zero_memory), np.int64), rr.alloc[:2]
    cols: list[int] = []
    sources: list[int] = []  # -1: requested column; 0/1: non-zero cpu/memory column
    pod_req = np.zeros(len(resources), np.int64)
    skipped: list[int] = []
    for i, (name, _) in enumerate(resources):
        col = nodes.res_index.get(name)
        if name in (CPU, MEMORY) and not use_requested:
            nz = 0 if name == CPU else 1
            pod_req[i] = pod.non_zero_cpu if nz == 0 else pod.non_zero_memory
            sources.append(nz)
        else:
            pod_req[i] = pod.requests.get(name, 0)
            sources.append(-1)
            if pod_req[i] == 0 and is_scalar_resource(name):
                col = None
        if col is None:
            skipped.append(i)
            col = 0
        cols.append(col)
    k = len(cols)
    prefix = cols == list(range(k))
    alloc = rr.alloc[:k] if prefix else rr.alloc[cols]
    if sources == [0, 1]:
        base = rr.nonzero
    elif all(s == -1 for s in sources):
        base = rr.requested[:k] if prefix else rr.requested[cols]
    else:
        base = np.stack([rr.requested[c] if s == -1 else rr.nonzero[s] for c, s in zip(cols, sources, strict=True)])
    if skipped:
        alloc = alloc.copy()
        base = base.copy()
        alloc[skipped] = 0
        base[skipped] = 0
        pod_req[skipped] = 0
    return base, pod_req, alloc


# The default resources (cpu and memory, which lead every node table), in fewer numpy calls: the
# same integer and float arithmetic as ``least_allocated`` and ``balanced_scores``, for rows with
# both allocatable (a small cluster's cycle pays per call, not per node).
DEFAULT_RESOURCES = (CPU, MEMORY)


def is_cpu_memory(resources: tuple[tuple[str, int], ...]) -> bool:
    return tuple(name for name, _ in resources) == DEFAULT_RESOURCES


def least_allocated_cpu_memory(
    rr: ResourceRows, pod: PodInfo, weights: np.ndarray, weight_sum: int, *, unit_weights: bool = False
) -> np.ndarray:
    """``least_allocated`` of the non-zero requests with the pod, over cpu and memory;
    ``unit_weights``: ``weights`` are (1, 1), the default, summed without a matrix product."""
    alloc = rr.alloc[:2]
    pod_col = np.array((pod.non_zero_cpu, pod.non_zero_memory), np.int64).reshape(2, 1)  # cheaper than nested
    if not rr.cpu_memory_positive():
        return least_allocated(rr.nonzero + pod_col, alloc, weights)
    per = alloc - rr.nonzero
    per -= pod_col
    np.maximum(per, 0, out=per)
    per *= MAX_NODE_SCORE
    per //= alloc
    if unit_weights:  # the same integer sum as the product below
        summed = per[0] + per[1]
        summed //= 2
        return summed
    return (weights @ per) // weight_sum


def balanced_cpu_memory(rr: ResourceRows, pod: PodInfo) -> np.ndarray:
    """BalancedAllocation's score, 50 + (50 + b(with) − b(without)) / 2, which is
    75 + (b(with) − b(without)) / 2 in integers, over cpu and memory requests."""
    req = pod.requests
    if not rr.cpu_memory_positive():
        base, pod_req = rr.requested[:2], np.array((req.get(CPU, 0), req.get(MEMORY, 0)), np.int64)
        without, with_pod = balanced_scores(base, pod_req, rr.alloc[:2])
        return 75 + (with_pod - without) // 2
    # without / with the pod × cpu, memory × rows; the sums are exact in float64 (below 2**53)
    pair = np.array((0.0, 0.0, float(req.get(CPU, 0)), float(req.get(MEMORY, 0)))).reshape(2, 2, 1)
    frac = rr.requested[:2] + pair
    frac /= rr.alloc[:2]
    np.minimum(frac, 1.0, out=frac)
    std = frac[:, 0] - frac[:, 1]
    np.abs(std, out=std)
    std /= 2
    np.subtract(1, std, out=std)
    std *= MAX_NODE_SCORE
    b = std.astype(np.int64)
    out = b[1] - b[0]
    out //= 2
    out += 75
    return out
