"""Vectorized resource scorers against scalar references written from upstream's per-node Go
(``noderesources/least_allocated.go``, ``most_allocated.go``, ``balanced_allocation.go``)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.pod import PodInfo, pod_info_from
from kubesched.scheduler.plugins.noderesources import scoring

quantities = st.integers(min_value=0, max_value=10**6)


def ref_least(req: list[int], alloc: list[int], weights: list[int]) -> int:
    score = wsum = 0
    for r, a, w in zip(req, alloc, weights, strict=True):
        if a == 0:
            continue
        score += (0 if r > a else (a - r) * 100 // a) * w
        wsum += w
    return score // wsum if wsum else 0


def ref_most(req: list[int], alloc: list[int], weights: list[int]) -> int:
    score = wsum = 0
    for r, a, w in zip(req, alloc, weights, strict=True):
        if a == 0:
            continue
        score += min(r, a) * 100 // a * w
        wsum += w
    return score // wsum if wsum else 0


def ref_balanced(req: list[int], alloc: list[int]) -> int:
    fractions = [min(r / a, 1.0) for r, a in zip(req, alloc, strict=True) if a != 0]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        total = 0.0
        for f in fractions:
            total = total + (f - mean) * (f - mean)
        std = math.sqrt(total / len(fractions))
    return int((1 - std) * 100)


@st.composite
def node_rows(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Nodes × resources (the tests transpose to the scorers' resources × nodes)."""
    k = draw(st.integers(min_value=1, max_value=4))
    m = draw(st.integers(min_value=1, max_value=12))
    base = np.array(draw(st.lists(st.lists(quantities, min_size=k, max_size=k), min_size=m, max_size=m)), np.int64)
    alloc = np.array(draw(st.lists(st.lists(quantities, min_size=k, max_size=k), min_size=m, max_size=m)), np.int64)
    pod = np.array(draw(st.lists(quantities, min_size=k, max_size=k)), np.int64)
    weights = np.array(draw(st.lists(st.integers(1, 100), min_size=k, max_size=k)), np.int64)
    return base, pod, alloc, weights


@settings(max_examples=300, deadline=None)
@given(node_rows())
def test_least_and_most_allocated_match_the_reference(rows) -> None:
    base, pod, alloc, weights = rows
    req = base + pod
    w = weights.tolist()
    assert scoring.least_allocated(req.T, alloc.T, weights).tolist() == [
        ref_least(r, a, w) for r, a in zip(req.tolist(), alloc.tolist(), strict=True)
    ]
    assert scoring.most_allocated(req.T, alloc.T, weights).tolist() == [
        ref_most(r, a, w) for r, a in zip(req.tolist(), alloc.tolist(), strict=True)
    ]


@settings(max_examples=300, deadline=None)
@given(node_rows())
def test_balanced_scores_match_the_reference(rows) -> None:
    base, pod, alloc, _ = rows
    without, with_pod = scoring.balanced_scores(base.T, pod, alloc.T)
    assert without.tolist() == [ref_balanced(r, a) for r, a in zip(base.tolist(), alloc.tolist(), strict=True)]
    req = (base + pod).tolist()
    assert with_pod.tolist() == [ref_balanced(r, a) for r, a in zip(req, alloc.tolist(), strict=True)]


def _pod(nonzero: list[int], requests: list[int]) -> PodInfo:
    """A PodInfo with the fields the cpu/memory scorers read set to the values drawn."""
    pod = pod_info_from({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [{"name": "c"}]}})
    pod.non_zero_cpu, pod.non_zero_memory = nonzero
    pod.requests = {"cpu": requests[0], "memory": requests[1]}
    return pod


memory = st.integers(min_value=0, max_value=2**42)  # TiB of memory in bytes: exact in float64


@st.composite
def cpu_memory_rows(draw: st.DrawFn) -> tuple[scoring.ResourceRows, PodInfo]:
    m = draw(st.integers(min_value=1, max_value=12))
    positive = draw(st.booleans())  # the fast path, or some node without cpu or memory
    lo = 1 if positive else 0

    def column(values: st.SearchStrategy[int]) -> list[int]:
        return draw(st.lists(values, min_size=m, max_size=m))

    alloc = np.array([column(st.integers(lo, 10**6)), column(st.integers(lo, 2**42))], np.int64)
    requested = np.array([column(quantities), column(memory)], np.int64)
    nonzero = np.array([column(quantities), column(memory)], np.int64)
    pod = _pod([draw(quantities), draw(memory)], [draw(quantities), draw(memory)])
    return scoring.ResourceRows(np.arange(m), alloc, requested, nonzero), pod


@settings(max_examples=300, deadline=None)
@given(cpu_memory_rows(), st.lists(st.integers(1, 100), min_size=2, max_size=2))
def test_cpu_memory_scorers_match_the_reference(rows, weights) -> None:
    """The default resources' fused scorers give what the reference gives per node: LeastAllocated
    of the non-zero requests with the pod, and BalancedAllocation's 50 + (50 + with − without) / 2."""
    rr, pod = rows
    alloc = rr.alloc.T.tolist()
    nz = (rr.nonzero.T + np.array([pod.non_zero_cpu, pod.non_zero_memory])).tolist()
    least = scoring.least_allocated_cpu_memory(rr, pod, np.array(weights, np.int64), sum(weights))
    assert least.tolist() == [ref_least(r, a, weights) for r, a in zip(nz, alloc, strict=True)]
    unit = scoring.least_allocated_cpu_memory(rr, pod, np.ones(2, np.int64), 2, unit_weights=True)  # the default's sum
    assert unit.tolist() == [ref_least(r, a, [1, 1]) for r, a in zip(nz, alloc, strict=True)]
    requested = rr.requested.T.tolist()
    with_pod = (rr.requested.T + np.array([pod.requests["cpu"], pod.requests["memory"]])).tolist()
    expected = [
        50 + (50 + ref_balanced(w, a) - ref_balanced(r, a)) // 2
        for r, w, a in zip(requested, with_pod, alloc, strict=True)
    ]
    assert scoring.balanced_cpu_memory(rr, pod).tolist() == expected
