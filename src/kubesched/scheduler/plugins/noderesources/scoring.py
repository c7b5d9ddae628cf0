"""Resource scoring strategies, vectorized over nodes (``noderesources/{least,most}_allocated.go``,
``requested_to_capacity_ratio.go``, ``balanced_allocation.go``, ``resource_allocation.go``).

Each function takes ``requested`` and ``allocatable`` as (resources × nodes) int64 matrices and
reproduces upstream's integer arithmetic exactly.
"""

from __future__ import annotations

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.api.resources import CPU, MEMORY, is_scalar_resource
from kubesched.scheduler.framework.interface import MAX_NODE_SCORE
from kubesched.scheduler.nodetable import NodeTable


def _weighted(scores: np.ndarray, include: np.ndarray | None, weights: np.ndarray) -> np.ndarray:
    """Σ w·score / Σ w over the resources included per node (all when ``include`` is None)."""
    if include is None:
        return (scores * weights[:, None]).sum(axis=0) // max(int(weights.sum()), 1)
    w = weights[:, None] * include
    weight_sum = w.sum(axis=0)
    total = (scores * w).sum(axis=0)
    return np.where(weight_sum > 0, total // np.maximum(weight_sum, 1), 0)


def _nonzero_alloc(alloc: np.ndarray) -> np.ndarray | None:
    """None when every allocatable is positive (the common case: no masking needed)."""
    return None if alloc.all() else alloc != 0


def least_allocated(req: np.ndarray, alloc: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ w·((alloc − req)·100 / alloc) / Σ w; 0 for a resource over capacity; alloc 0 skipped."""
    include = _nonzero_alloc(alloc)
    safe = alloc if include is None else np.maximum(alloc, 1)
    per = (alloc - req) * MAX_NODE_SCORE // safe
    per[req > alloc] = 0
    return _weighted(per, include, weights)


def most_allocated(req: np.ndarray, alloc: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ w·(min(req, alloc)·100 / alloc) / Σ w."""
    include = _nonzero_alloc(alloc)
    safe = alloc if include is None else np.maximum(alloc, 1)
    per = np.minimum(req, alloc) * MAX_NODE_SCORE // safe
    return _weighted(per, include, weights)


def _trunc_div(a: np.ndarray, b: int) -> np.ndarray:
    """Go's integer division (truncates toward zero)."""
    q = np.abs(a) // abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


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
        q = np.abs(num) // du
        out[mid] = ss[j - 1] + np.where(num < 0, -q, q)
    return out


def requested_to_capacity_ratio(
    req: np.ndarray, alloc: np.ndarray, weights: np.ndarray, shape: tuple[tuple[int, int], ...]
) -> np.ndarray:
    """Σ w·f(util) / Σ w over resources scoring > 0, rounded; f from the configured shape."""
    safe = np.maximum(alloc, 1)
    util = np.where(req > alloc, 100, req * 100 // safe)
    per = broken_linear(shape, util)
    include = (alloc != 0) & (per > 0)
    w = weights[:, None] * include
    weight_sum = w.sum(axis=0)
    total = (per * w).sum(axis=0)
    ratio = total / np.maximum(weight_sum, 1)
    return np.where(weight_sum > 0, np.floor(ratio + 0.5).astype(np.int64), 0)


def balanced_score(req: np.ndarray, alloc: np.ndarray) -> np.ndarray:
    """int((1 − std(fractions)) · 100) over resources with allocatable > 0 (fractions capped at 1)."""
    if req.shape[0] == 2 and alloc.all():
        frac = np.minimum(req / alloc, 1.0)
        std = np.abs(frac[0] - frac[1]) / 2
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    valid = alloc > 0
    frac = np.minimum(req / np.maximum(alloc, 1), 1.0) * valid
    k = valid.sum(axis=0)
    if req.shape[0] == 2:
        std = np.where(k == 2, np.abs((frac[0] - frac[1]) / 2), 0.0)
    else:
        mean = frac.sum(axis=0) / np.maximum(k, 1)
        var = (((frac - mean) ** 2) * valid).sum(axis=0) / np.maximum(k, 1)
        std = np.where(k >= 2, np.sqrt(var), 0.0)
    return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)


def requested_matrix(
    nodes: NodeTable, rows: np.ndarray, pod: PodInfo, resources: tuple[tuple[str, int], ...], *, use_requested: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(requested with the pod, requested without it, allocatable) as resources × rows matrices.

    ``calculateResourceAllocatableRequest``: cpu/memory read NonZeroRequested unless
    ``use_requested``; an extended resource the pod doesn't request is skipped (alloc 0).
    """
    k = len(resources)
    cols: list[int] = []
    nonzero: list[int] = []
    pod_req = np.zeros(k, np.int64)
    skipped: list[int] = []
    for i, (name, _) in enumerate(resources):
        col = nodes.res_index.get(name)
        if name in (CPU, MEMORY) and not use_requested:
            pod_req[i] = pod.non_zero_cpu if name == CPU else pod.non_zero_memory
            nonzero.append(i)
        else:
            pod_req[i] = pod.requests.get(name, 0)
            if pod_req[i] == 0 and is_scalar_resource(name):
                col = None
        if col is None:
            skipped.append(i)
            col = 0
        cols.append(col)
    # ndarray.take copies rows several times faster than fancy indexing on a 2-D array; the
    # results are made C-contiguous (resources × rows) so the arithmetic after runs on dense rows.
    alloc = np.ascontiguousarray(nodes.alloc.take(rows, 0).T.take(cols, 0))
    if len(nonzero) == k:
        nz_cols = [0 if resources[i][0] == CPU else 1 for i in nonzero]
        base = np.ascontiguousarray(nodes.nonzero_requested.take(rows, 0).T.take(nz_cols, 0))
    else:
        base = np.ascontiguousarray(nodes.requested.take(rows, 0).T.take(cols, 0))
        if nonzero:
            nz = nodes.nonzero_requested.take(rows, 0)
            for i in nonzero:
                base[i] = nz[:, 0 if resources[i][0] == CPU else 1]
    if skipped:
        alloc[skipped] = 0
        base[skipped] = 0
        pod_req[skipped] = 0
    return base + pod_req[:, None], base, alloc
