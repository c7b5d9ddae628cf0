"""Vectorized resource scorers against scalar references written from upstream's per-node Go
(``noderesources/least_allocated.go``, ``most_allocated.go``, ``balanced_allocation.go``)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

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
