"""Shared plugin helpers (``framework/plugins/helper``)."""

from __future__ import annotations

import numpy as np

from kubesched.scheduler.framework.interface import MAX_NODE_SCORE


def default_normalize_score(scores: np.ndarray, reverse: bool) -> np.ndarray:
    """``DefaultNormalizeScore``: scale to [0, 100] by the max (integer math), optionally reversed."""
    if len(scores) == 0:
        return scores
    top = int(scores.max())
    if top == 0:
        return np.full_like(scores, MAX_NODE_SCORE) if reverse else scores
    out = scores * MAX_NODE_SCORE // top
    return MAX_NODE_SCORE - out if reverse else out


def go_list(items: list[str] | tuple[str, ...]) -> str:
    """Go's ``%v`` of a []string: ``[a b]``."""
    return "[" + " ".join(items) + "]"
