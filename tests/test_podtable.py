"""``PodTable``'s preemption query: ``any_lower_priority`` (its one-reduction shortcut over
stale free slots) agrees with the full scan ``lower_priority`` through adds, removes and
node removals."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.helpers import pod

from kubesched.scheduler.podtable import PodTable

steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 7), st.integers(-3, 3), st.integers(0, 2)),
        st.tuples(st.just("remove"), st.integers(0, 7)),
        st.tuples(st.just("node_removed"), st.integers(0, 2)),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(steps=steps, asked=st.integers(-4, 4))
def test_any_lower_priority_is_the_full_scan(steps, asked):
    t = PodTable(2, capacity=4)  # small: slots are freed, reused and grown
    for step in steps:
        if step[0] == "add":
            _, i, priority, row = step
            t.add(pod(f"p{i}", "100m", priority=priority), row, {"cpu": 0, "memory": 1})
        elif step[0] == "remove":
            t.remove(f"uid-default-p{step[1]}")
        else:
            t.node_removed(step[1])
        for p in range(-4, 5):
            assert t.any_lower_priority(p) == (len(t.lower_priority(p)) > 0)
    want = sorted(
        i for i, info in enumerate(t.pods) if info is not None and t.node_row[i] >= 0 and info.priority < asked
    )
    assert t.lower_priority(asked).tolist() == want
    assert t.any_lower_priority(asked) == bool(want)
