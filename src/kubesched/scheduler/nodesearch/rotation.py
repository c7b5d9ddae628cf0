"""The node search's rotation (``findNodesThatPassFilters``): from ``nextStartNodeIndex`` in
nodeTree order, wrapping round, the first ``numFeasibleNodesToFind`` nodes that pass."""

from __future__ import annotations

import numpy as np

from kubesched.scheduler.nodetable import NodeTable


def first_passing(passed: np.ndarray, start: int, want: int, rotated: np.ndarray | None) -> tuple[np.ndarray, int]:
    """The first ``want`` passing rows from ``start`` in nodeTree order, and how many nodes
    that took (all of them when fewer pass). ``rotated``: the rows in search order, None when
    the rows are in nodeTree order already."""
    if rotated is None:
        # rows are already in nodeTree order: look from start on, usually far enough
        n = len(passed)
        ahead = min(n - start, 2 * want + 64)
        hits = passed[start : start + ahead].nonzero()[0]
        if len(hits) >= want:
            return hits[:want] + start, int(hits[want - 1]) + 1
        # else rotate the verdicts, not an index array
        ok = np.concatenate((passed[start:], passed[:start])) if start else passed
        hits = ok.nonzero()[0]
        processed = int(hits[want - 1]) + 1 if len(hits) >= want else n
        feasible = hits[:want] + start
        if start:
            feasible %= n
        return feasible, processed
    hits = np.flatnonzero(passed[rotated])
    processed = int(hits[want - 1]) + 1 if len(hits) >= want else len(rotated)
    return rotated.take(hits[:want]), processed


def positions(rotated: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
    """Where each of ``rows`` sits in the search order (past the end when absent)."""
    inverse = np.full(size, len(rotated), np.int64)
    inverse[rotated] = np.arange(len(rotated))
    return inverse[rows]


def covered(nodes: NodeTable, rows: list[int], start: int, processed: int) -> bool:
    """Whether any of ``rows`` lies among the first ``processed`` nodes of the search from
    ``start``."""
    n = nodes.n
    if processed >= n:
        return True
    end = start + processed  # the search covered [start, end) of the order, wrapping past n
    wrapped = end - n
    if nodes.order_is_identity():
        return any(start <= r < end or r < wrapped for r in rows)
    position = nodes.order_position()
    for r in rows:
        if r < n:
            p = int(position[r])
            if start <= p < end or p < wrapped:
                return True
    return False
