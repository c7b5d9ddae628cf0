"""``Diagnosis.reason_counts`` (the counts behind "0/N nodes are available: ...") against a
node-by-node count, for small reason ids (counted by one bincount) and large ones (sorted)."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.status import Code, Status


def bits(prefix: str):
    """A describer as NodeResourcesFit's: one reason per set bit of the id."""
    return lambda r: tuple(f"{prefix}{b}" for b in range(r.bit_length()) if r >> b & 1)


def named(prefix: str):
    return lambda r: (f"{prefix}{r}",)


rows = st.lists(
    st.tuples(
        st.sampled_from([0, 0, int(Code.UNSCHEDULABLE), int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)]),
        st.integers(0, 2),
        st.one_of(st.integers(0, 40), st.integers(0, 1 << 38)),
        st.booleans(),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(rows=rows, with_absent=st.booleans())
def test_reason_counts_are_the_node_by_node_counts(rows, with_absent):
    describers = [bits("short "), named("taint "), bits("gpu ")]
    codes = np.array([c for c, _, _, _ in rows], np.int8)
    plugins = np.array([p for _, p, _, _ in rows], np.int16)
    reasons = np.array([r for _, _, r, _ in rows], np.int64)
    absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("not in the PreFilter result",)) if with_absent else None
    mask = np.array([a for *_, a in rows]) if with_absent else None
    names = [f"n{i}" for i in range(len(rows))]
    d = Diagnosis(names, codes, plugins, reasons, describers, ["Fit", "Taint", "Gpu"], absent, mask)

    want: Counter[str] = Counter()
    for code, plugin, reason, is_absent in rows:
        if with_absent and is_absent:
            want.update(absent.reasons)
        elif code:
            want.update(describers[plugin](reason))
    assert d.reason_counts() == want
    assert list(d.codes) == [c for c, _, _, _ in rows]  # the columns are read, not changed


def test_small_reason_ids_are_counted_in_plugin_then_reason_order():
    codes = np.full(6, int(Code.UNSCHEDULABLE), np.int8)
    plugins = np.array([1, 0, 1, 0, 0, 1], np.int16)
    reasons = np.array([3, 2, 1, 1, 2, 3], np.int64)
    d = Diagnosis([f"n{i}" for i in range(6)], codes, plugins, reasons, [named("a"), named("b")], ["A", "B"])
    assert list(d.reason_counts().items()) == [("a1", 1), ("a2", 2), ("b1", 1), ("b3", 2)]
