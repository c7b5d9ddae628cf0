"""Which nodes look alike to the allocator's search: a key per node row over what the search sees
there (the devices the node reaches, each by its spec, and what is taken or shared of each), so
that Filter runs the depth-first search once per distinct key instead of once per node.

Upstream's allocator (``k8s.io/dynamic-resource-allocation/structured``) searches every node it
filters; the verdict depends only on those devices, their states and the claims, so nodes with
equal keys get equal verdicts. Keys are 128 bits (two sums of a 64-bit mix over the node's
devices, order-free as the search's feasibility is). Only node-local devices, in pools that each
sit on one node, are keyed; other layouts return None and are searched node by node.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework.nodes import NodeTableView

if TYPE_CHECKING:
    from kubesched.scheduler.plugins.dynamicresources.devices import DeviceTable

_SEEDS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD1B54A32D192ED03))


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser over an array (uint64 arithmetic wraps)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def node_keys(
    table: DeviceTable, taken: np.ndarray, shared: Mapping[int, Mapping[str, Fraction]], nodes: NodeTableView
) -> np.ndarray | None:
    """Per node row, two uint64 columns keying what the search sees on that node; None when the
    layout is not keyable."""
    templates = table.templates
    if templates is None:
        return None
    if table.usage is not None and table.usage[0] is shared:
        usage = table.usage[1]  # the same shares as last time
    else:
        usage = np.zeros(len(table), np.uint64)
        # equal shares get one id (amounts as integer pairs: hashing Fractions costs more)
        interned: dict[tuple[tuple[str, int, int], ...], int] = {}
        for i, amounts in shared.items():
            shape = tuple((name, a.numerator, a.denominator) for name, a in amounts.items())
            usage[i] = interned.setdefault(shape, len(interned) + 1)
        table.usage = (shared, usage)  # held, so that the mapping's identity stays its own
    code = (templates << np.uint64(22)) ^ (usage << np.uint64(1)) ^ taken.astype(np.uint64)
    rows = table.local_rows(nodes.index)
    ok = rows >= 0
    local_code = code[table.local_idx][ok]
    keys = np.zeros((nodes.n, 2), np.uint64)
    for col, seed in enumerate(_SEEDS):
        column = np.zeros(nodes.n, np.uint64)
        np.add.at(column, rows[ok], _mix(local_code ^ seed))
        keys[:, col] = column
    return keys
