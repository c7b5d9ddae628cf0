"""``Diagnosis``: why the nodes a pod was filtered against failed it (upstream's
``framework.Diagnosis`` with its NodeToStatus map), as columns over the node table's rows;
what PostFilter plugins read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from kubesched.framework.status import Code, Status

# a plugin × reason key space counted with one bincount rather than a sort: this many keys
# beyond four per failed node (the bincount's array is as long as the largest key)
_BINCOUNT_LIMIT = 4096


@dataclass(init=False, slots=True)
class Diagnosis:
    """Per-node filter statuses, held as columns over the node table's rows.

    ``codes[row]`` is the failing Code (0 where the node passed or was not evaluated),
    ``plugins[row]`` the index of the plugin that rejected it, ``reasons[row]`` that plugin's
    reason id. ``absent`` is the status of every node not in the columns (``absent_mask``):
    nodes outside a PreFilterResult, or all nodes when PreFilter rejected.
    """

    node_names: Sequence[str]  # the node table's names: a Diagnosis is read within its cycle
    codes: np.ndarray
    plugins: np.ndarray
    reasons: np.ndarray
    describers: list[Callable[[int], tuple[str, ...]]]
    plugin_names: list[str]
    absent: Status | None = None
    absent_mask: np.ndarray | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    extra_reasons: list[str] = field(default_factory=list)  # reasons given by extenders

    def __init__(
        self,
        node_names: Sequence[str],
        codes: np.ndarray,
        plugins: np.ndarray,
        reasons: np.ndarray,
        describers: list[Callable[[int], tuple[str, ...]]],
        plugin_names: list[str],
        absent: Status | None = None,
        absent_mask: np.ndarray | None = None,
        unschedulable_plugins: set[str] | None = None,
        pending_plugins: set[str] | None = None,
        pre_filter_msg: str = "",
        post_filter_msg: str = "",
        extra_reasons: list[str] | None = None,
    ) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.node_names = node_names
        self.codes = codes
        self.plugins = plugins
        self.reasons = reasons
        self.describers = describers
        self.plugin_names = plugin_names
        self.absent = absent
        self.absent_mask = absent_mask
        self.unschedulable_plugins = set() if unschedulable_plugins is None else unschedulable_plugins
        self.pending_plugins = set() if pending_plugins is None else pending_plugins
        self.pre_filter_msg = pre_filter_msg
        self.post_filter_msg = post_filter_msg
        self.extra_reasons = [] if extra_reasons is None else extra_reasons

    @classmethod
    def empty(cls, node_names: Sequence[str]) -> Diagnosis:
        n = len(node_names)
        return cls(node_names, np.zeros(n, np.int8), np.zeros(n, np.int16), np.zeros(n, np.int64), [], [])

    def set_from_extender(self, row: int, code: Code, message: str) -> None:
        """A node an extender failed: its status is the extender's reason (``Extender``)."""
        if "Extender" not in self.plugin_names:
            self.plugin_names = [*self.plugin_names, "Extender"]  # a copy: the names may be shared
            self.describers.append(lambda i: (self.extra_reasons[i],))
        self.extra_reasons.append(message)
        self.codes[row] = code
        self.plugins[row] = self.plugin_names.index("Extender")
        self.reasons[row] = len(self.extra_reasons) - 1

    def collect_rejectors(self) -> None:
        """Add the plugins that rejected some node to ``unschedulable_plugins`` (done only when
        the attempt fails: a scheduled pod never needs them)."""
        failing = np.bincount(self.plugins[self.codes != 0]).nonzero()[0]  # plugin indices: small, >= 0
        self.unschedulable_plugins |= {self.plugin_names[int(p)] for p in failing}

    def status_of(self, row: int) -> Status | None:
        """The status of one node, or None where it passed."""
        if self.absent_mask is not None and self.absent_mask[row]:
            return self.absent
        code = int(self.codes[row])
        if code == 0:
            return None
        p = int(self.plugins[row])
        return Status(Code(code), self.describers[p](int(self.reasons[row])), self.plugin_names[p])

    def rows_with_code(self, code: Code) -> np.ndarray:
        """Rows whose status has exactly ``code`` (``NodesForStatusCode``)."""
        mask = self.codes == int(code)  # an IntEnum against an array costs numpy several times an int
        if self.absent_mask is not None:
            mask = np.where(self.absent_mask, self.absent is not None and self.absent.code == code, mask)
        return np.flatnonzero(mask)

    def reason_counts(self) -> Counter[str]:
        """How many nodes gave each reason (a node with two reasons counts for both)."""
        counts: Counter[str] = Counter()
        codes = self.codes.copy()
        if self.absent_mask is not None:
            codes[self.absent_mask] = 0
            n_absent = int(self.absent_mask.sum())
            if self.absent is not None and n_absent:  # none left out: no entry (FitError.Error)
                for r in self.absent.reasons:
                    counts[r] += n_absent
        failed = np.flatnonzero(codes)
        if not len(failed):
            return counts
        reasons = self.reasons[failed]
        low, high = int(np.minimum.reduce(reasons)), int(np.maximum.reduce(reasons))
        span = high + 1
        if low >= 0 and span * len(self.describers) <= _BINCOUNT_LIMIT + 4 * len(failed):
            # the usual small reason ids (bit sets of a few reasons): one bincount over
            # plugin-major keys, in the same ascending (plugin, reason) order np.unique gives
            n = np.bincount(self.plugins[failed].astype(np.int64) * span + reasons)
            uniq = np.flatnonzero(n)
            pairs = zip(uniq.tolist(), n[uniq].tolist(), strict=True)
        else:
            span = 1 << 40
            uniq, n = np.unique(self.plugins[failed].astype(np.int64) * span + reasons, return_counts=True)
            pairs = zip(uniq.tolist(), n.tolist(), strict=True)
        for key, count in pairs:
            plugin, reason = divmod(key, span)
            for r in self.describers[plugin](reason):
                counts[r] += count
        return counts
