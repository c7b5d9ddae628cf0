"""The shape cache: Filter verdicts and raw Score results per pod shape, reused across cycles
for the nodes whose rows did not change.

kubesched's own, and decisions are the same with it or without it. Upstream's nearest relative,
the alpha equivalence class cache (v1.8–v1.13, gate EnableEquivalenceClassCache), cached predicate
results per node and was removed (k/k#71013) because its locks cost more than the predicates; here
one thread owns the cache and whole columns are kept, not per-node entries. Pods of
one shape (equal fragments from every plugin's ``sign_pod`` / ``shape_pod``) get equal verdicts
and raw scores on a node whose row did not change, so the first such pod filters and scores
every node and the next ones only search the stored verdicts from ``nextStartNodeIndex`` as
upstream does, normalize the stored scores over the nodes found and pick. When a row inside the
nodes a search covers changed (a pod bound there since), the cycle first filters and scores
again every row that changed; a change to anything else in the table (nodes added, updated or
removed) drops every entry.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import ScorePlugin, SignFragment
from kubesched.framework.status import Status
from kubesched.scheduler.nodetable import NodeTable

# shapes kept per profile (least recently used dropped first)
MAX_SHAPES = 8


@dataclass(slots=True)
class Window:
    """The nodes a search found, as positions in an entry's list of passing nodes: ``count``
    from ``first`` on, then (wrapping round) the first ``wrapped``; ``processed`` places covered."""

    first: int
    count: int
    wrapped: int
    processed: int

    def __len__(self) -> int:
        return self.count + self.wrapped


@dataclass(slots=True)
class ShapeEntry:
    """One shape's verdicts and scores over every row of ``table`` as of change-log position
    ``log_pos`` in ``epoch``."""

    table: NodeTable
    epoch: int
    log_pos: int
    passed: np.ndarray  # bool per row: every Filter plugin passed
    node_ok: np.ndarray  # bool per row: every ``node_only`` Filter plugin passed (pods can't change it)
    fixed: np.ndarray  # int64 per row: Σ weight × score of the plugins without NormalizeScore
    summed: list[tuple[ScorePlugin, int, np.ndarray]]  # those plugins: weight, raw scores per row
    normalized: list[tuple[ScorePlugin, int, np.ndarray]]  # the others: weight, raw scores per row
    state: CycleState  # the cycle that computed them (NormalizeScore reads its PreScore state)
    # PreScore's statuses in that cycle, as the results word them: a cycle served by the entry
    # (same shape, same nodes and pods up to the refreshed rows) would get the same
    pre_score: dict[str, str]
    # plugins of ``normalized`` whose raw score is the same on every passing row, and that score:
    # their normalized part is then one constant over any window (equal raw scores normalize to
    # equal values, however many), which no choice depends on, so it is left out of the sums
    uniform: dict[str, int] = field(default_factory=dict)
    # the passing nodes in nodeTree order: their places in it, their rows, their fixed sums;
    # rebuilt after a refresh (None until then)
    _places: np.ndarray | None = None
    _rows: np.ndarray | None = None
    _sums: np.ndarray | None = None
    _rejected: np.ndarray | None = None  # the rows some Filter plugin rejects, for results

    def __post_init__(self) -> None:
        for plugin, _weight, raw in self.normalized:
            ok = raw[self.passed]
            if len(ok) and ok.min() == ok.max():
                self.uniform[plugin.name] = int(ok[0])

    def rejected_rows(self) -> np.ndarray:
        """The rows some Filter plugin rejects (for the results recorded on a pod), kept until
        ``update`` changes the verdicts."""
        if self._rejected is None:
            self._rejected = np.flatnonzero(~self.passed)
        return self._rejected

    def stale_rows(self) -> list[int]:
        """Rows whose pods changed since the entry was computed."""
        return self.table.changed[self.log_pos :]

    def update(self, rows: np.ndarray, passed: np.ndarray, scores: dict[str, np.ndarray]) -> None:
        """Take fresh verdicts for ``rows`` and fresh raw scores for those of them that passed
        (``scores`` by plugin, aligned with ``rows[passed]``); the entry is then current."""
        same_nodes = bool((self.passed[rows] == passed).all())
        self.passed[rows] = passed
        self._rejected = None
        ok = rows[passed]
        self.fixed[rows] = 0
        for plugin, weight, raw in self.summed:
            raw[ok] = scores[plugin.name]
            self.fixed[ok] += raw[ok] * weight
        for plugin, _weight, raw in self.normalized:
            fresh = scores[plugin.name]
            raw[ok] = fresh
            value = self.uniform.get(plugin.name)
            if value is not None and len(fresh) and (fresh != value).any():
                del self.uniform[plugin.name]  # normalized per window from now on (not looked for again)
        self.log_pos = len(self.table.changed)
        if not same_nodes or self._places is None or self._sums is None:
            self._places = None  # rebuilt on the next search
        elif len(ok):  # the same nodes pass: only their sums change
            table = self.table
            places = ok if table.order_is_identity() else table.order_position()[ok]
            self._sums[self._places.searchsorted(places)] = self.fixed[ok]

    def _index(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._places is None or self._rows is None or self._sums is None:
            table = self.table
            places: np.ndarray
            rows: np.ndarray
            if table.order_is_identity():
                places = rows = self.passed.nonzero()[0]
            else:
                order = table.order()
                places = self.passed[order].nonzero()[0]
                rows = order[places]
            sums: np.ndarray = self.fixed[rows]
            self._places, self._rows, self._sums = places, rows, sums
            return places, rows, sums
        return self._places, self._rows, self._sums

    def search(self, start: int, want: int) -> Window:
        """``findNodesThatPassFilters`` over the stored verdicts: the first ``want`` passing
        nodes from place ``start`` of nodeTree order, wrapping round, and how many places that
        covered (all of them when fewer pass)."""
        places, _, _ = self._index()
        n, k = self.table.n, len(places)
        j = int(places.searchsorted(start))
        if k - j >= want:
            return Window(j, want, 0, int(places[j + want - 1]) - start + 1)
        need = want - (k - j)
        if need <= j:
            return Window(j, k - j, need, n - start + int(places[need - 1]) + 1)
        return Window(j, k - j, j, n)

    def row_at(self, w: Window, i: int) -> int:
        """The row of a window's ``i``-th node."""
        _, rows, _ = self._index()
        return int(rows[w.first + i] if i < w.count else rows[i - w.count])

    def rows(self, w: Window) -> np.ndarray:
        """The rows of a window's nodes, in search order."""
        _, rows, _ = self._index()
        first = rows[w.first : w.first + w.count]
        return first if not w.wrapped else np.concatenate((first, rows[: w.wrapped]))

    def totals(self, pod: PodInfo, w: Window) -> np.ndarray:
        """RunScorePlugins' weighted sums for a window's nodes (in search order), up to one
        constant (the uniform plugins' part, which no choice depends on)."""
        _, _, sums = self._index()
        total = sums[w.first : w.first + w.count]
        if w.wrapped:
            total = np.concatenate((total, sums[: w.wrapped]))
        normalized = [(p, wt, raw) for p, wt, raw in self.normalized if p.name not in self.uniform]
        if normalized:
            picked = self.rows(w)
            total = total.copy()
            for plugin, weight, raw in normalized:
                norm = plugin.normalize_scores(self.state, pod, raw[picked])
                total += (raw[picked] if norm is None else norm) * weight
        return total

    def scorers(self) -> list[ScorePlugin]:
        return [p for p, _, _ in self.summed] + [p for p, _, _ in self.normalized]


class ShapeCache:
    """A profile's entries by shape, for one node table."""

    def __init__(self) -> None:
        self._entries: OrderedDict[Hashable, ShapeEntry] = OrderedDict()
        # cycles that searched an entry, entries computed over every node, partial refreshes
        self.searches = 0
        self.built = 0
        self.refreshed = 0

    def get(self, shape: Hashable, table: NodeTable) -> ShapeEntry | None:
        entry = self._entries.get(shape)
        if entry is None:
            return None
        if entry.table is not table or entry.epoch != table.epoch or entry.log_pos > len(table.changed):
            del self._entries[shape]
            return None
        self._entries.move_to_end(shape)
        return entry

    def put(self, shape: Hashable, entry: ShapeEntry) -> None:
        self._entries[shape] = entry
        self._entries.move_to_end(shape)
        while len(self._entries) > MAX_SHAPES:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class ShapePlugin(Protocol):
    """kubesched's shape cache, which has no upstream counterpart and changes no decision: a
    plugin that depends on cluster-wide state for some pods says, after this cycle's PreFilter,
    whether it does for this one. Return the fragments its Filter and Score depend on when they
    read only those and each node's own row (``()`` when it takes no part for this pod), or a
    non-success Status when they read more (other nodes' pods, objects outside the table): the
    cycle then filters and scores every node afresh. The runtime finds the method by its name;
    nothing inherits this."""

    name: str

    def shape_pod(self, state: CycleState, pod: PodInfo) -> tuple[Sequence[SignFragment], Status | None]: ...
