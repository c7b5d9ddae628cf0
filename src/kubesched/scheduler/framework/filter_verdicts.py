"""The Filter plugins' verdicts of one attempt, merged into upstream's NodeToStatus columns.

Upstream runs the Filter plugins node by node and keeps, for each node that fails, the status of
the first plugin that rejected it (``RunFilterPlugins`` in pkg/scheduler/framework/runtime/
framework.go stops at a node's first failure). Here each plugin answers for every row at once
(``NodeVerdicts``), and ``VerdictMerge`` folds the answers, in the profile's order, into
``FilterOutcome``'s columns: each row's code, the index of the plugin that rejected it first and
that plugin's reason. ``FilterPass`` keeps the answers as they came with the rows that passed every
one, so an attempt that finds nodes and reports nothing never pays for the columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.interface import NodeVerdicts
from kubesched.framework.status import Code, Status

# the codes a Filter plugin may reject with, as plain ints (an IntEnum lookup costs more)
_UNSCHEDULABLE = int(Code.UNSCHEDULABLE)
_UNRESOLVABLE = int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
_PENDING = int(Code.PENDING)
# how many codes there are: a bincount of a verdict's codes (as bytes) longer than this holds one
# outside the enum (a negative int8 counts from 128)
_CODE_COUNT = int(max(Code)) + 1


def _no_reasons(_reason: int) -> tuple[str, ...]:
    """The describer of a filter that rejected no node."""
    return ()


@dataclass(init=False, slots=True)
class FilterOutcome:
    """Filter results over every row: codes, rejecting plugin index, reason id."""

    codes: np.ndarray
    plugins: np.ndarray
    reasons: np.ndarray
    describers: list[Any]
    error: Status | None = None

    def __init__(
        self,
        codes: np.ndarray,
        plugins: np.ndarray,
        reasons: np.ndarray,
        describers: list[Any],
        error: Status | None = None,
    ) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.codes = codes
        self.plugins = plugins
        self.reasons = reasons
        self.describers = describers
        self.error = error

    def diagnosis(self, node_names: list[str], filter_names: list[str]) -> Diagnosis:
        """The Diagnosis of these verdicts (``filter_names``: the profile's Filter plugins, in
        order; shared, a Diagnosis copies them before it adds the extenders')."""
        describers = [_no_reasons if d is None else d for d in self.describers]
        return Diagnosis(node_names, self.codes, self.plugins, self.reasons, describers, filter_names)


class VerdictMerge:
    """Folds the plugins' verdicts, in the profile's order, into a ``FilterOutcome``: a row keeps
    the first rejection it got. A code that is no rejection (Error, Wait, Skip, an unknown value)
    on a row no earlier plugin rejected makes the attempt an Error naming the plugin, as
    upstream's ``running "<plugin>" filter plugin: <reason>``."""

    def __init__(self, n: int, plugin_count: int) -> None:
        self.n = n
        self.codes = np.zeros(n, np.int8)
        self.plugins = np.zeros(n, np.int16)
        self.reasons = np.zeros(n, np.int64)
        self.describers: list[Any] = [None] * plugin_count
        self.alive = n  # rows no plugin rejected yet
        self.bad: list[int] = []  # the first row per plugin given a code that is no rejection

    def add(self, i: int, v: NodeVerdicts) -> int:
        """Plugin ``i``'s verdicts; the rows still alive after them."""
        fail = v.code != 0
        if self.alive != self.n:
            fail &= self.codes == 0
        idx = fail.nonzero()[0]
        if not len(idx):
            return self.alive
        got = v.code[idx]
        self.codes[idx] = got
        self.plugins[idx] = i
        self.reasons[idx] = v.reason[idx] if isinstance(v.reason, np.ndarray) else v.reason
        self.describers[i] = v.describe
        # a verdict other than Unschedulable(AndUnresolvable)/Pending is an error; the two
        # reductions settle the usual case (all 2 or 3) in fewer calls than the comparisons
        if int(np.minimum.reduce(got)) < _UNSCHEDULABLE or int(np.maximum.reduce(got)) > _UNRESOLVABLE:
            wrong = (got != _UNSCHEDULABLE) & (got != _UNRESOLVABLE) & (got != _PENDING)
            if np.logical_or.reduce(wrong):
                self.bad.append(int(idx[wrong.argmax()]))
        self.alive -= len(idx)
        return self.alive

    def outcome(self, names: list[str]) -> FilterOutcome:
        """The columns; with the Error status of the first row given a wrong code, if any
        (``names``: the plugins' names by index)."""
        if not self.bad:
            return FilterOutcome(self.codes, self.plugins, self.reasons, self.describers)
        row = min(self.bad)
        i = int(self.plugins[row])
        msg = ", ".join(self.describers[i](int(self.reasons[row])))
        error = Status(Code.ERROR, (f'running "{names[i]}" filter plugin: {msg}',), names[i])
        return FilterOutcome(self.codes, self.plugins, self.reasons, self.describers, error)


class FilterPass:
    """One attempt's verdicts as the plugins gave them (plugin index, verdicts), in order, and the
    rows that passed them all. ``outcome()`` merges them into the columns; it must be asked within
    the attempt (a plugin may answer from buffers it reuses). ``suspect``: some verdict carries a
    code that is no rejection somewhere, so the merge must decide whether the attempt errs."""

    def __init__(self, passed: np.ndarray, verdicts: list[tuple[int, NodeVerdicts]], suspect: bool) -> None:
        self.passed = passed
        self.verdicts = verdicts
        self.suspect = suspect

    def outcome(self, plugin_names: list[str]) -> FilterOutcome:
        merge = VerdictMerge(len(self.passed), len(plugin_names))
        for i, v in self.verdicts:
            merge.add(i, v)
        return merge.outcome(plugin_names)


def has_odd_code(code: np.ndarray) -> bool:
    """Whether some row's code is neither Success nor a rejection (Unschedulable,
    UnschedulableAndUnresolvable, Pending): one bincount of the codes' bytes."""
    if code.dtype != np.int8:  # the in-tree plugins' type; any other is merged to be sure
        return True
    counts = np.bincount(code.view(np.uint8))
    if len(counts) > _CODE_COUNT:
        return True
    ints: list[int] = counts.tolist()
    return any(c for k, c in enumerate(ints) if k not in (0, _UNSCHEDULABLE, _UNRESOLVABLE, _PENDING))
