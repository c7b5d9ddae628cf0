"""The replay's GPU ledger keeps its sampled measures (capacity, milli in use, GPUs with a share
taken) as pods bind and leave; checked against the same measures recounted from its arrays after
random binds and releases."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.gpushare import MAX_GPUS_PER_NODE, MILLI, GpuLedger, GpuRequest

GPUS = [0, 1, 2, 4, 8]
SHARES = [0, 250, 500, 1000]


def recount(lg: GpuLedger) -> tuple[int, int, int]:
    present = np.arange(MAX_GPUS_PER_NODE)[None, :] < lg.gpu_count[:, None]
    capacity = int(lg.gpu_count.sum()) * MILLI
    return capacity, capacity - int(lg.gpu_left.sum()), int(((lg.gpu_left < MILLI) & present).sum())


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.lists(st.sampled_from(GPUS), min_size=1, max_size=6),
    ops=st.lists(st.tuples(st.booleans(), st.integers(0, 30), st.sampled_from(SHARES), st.integers(1, 3)), max_size=60),
)
def test_sampled_measures_follow_binds_and_releases(nodes: list[int], ops: list[tuple[bool, int, int, int]]) -> None:
    lg = GpuLedger()
    for i, gpus in enumerate(nodes):
        lg.add_node(f"n{i}", 64000, gpus, "T4" if gpus else "")
    bound: list[str] = []
    for k, (release, pick, share, count) in enumerate(ops):
        if release and bound:
            lg.release(bound.pop(pick % len(bound)))
        else:
            row = pick % len(nodes)
            free = [d for d in range(nodes[row]) if lg.gpu_left[row, d] >= share]
            if len(free) < count or share == 0:
                continue
            uid = f"p{k}"
            lg.bind(uid, f"n{row}", GpuRequest(1000, share, count), free[:count])
            bound.append(uid)
        assert (lg.capacity_milli, lg.used_milli, lg.used_gpus) == recount(lg)
    for uid in bound:
        lg.release(uid)
    assert (lg.used_milli, lg.used_gpus) == (0, 0)
