"""DynamicResources' Filter searches once per kind of node (``nodekeys``): on random clusters of
shareable, partitionable and plain devices with random allocations made by the scheduler, its
verdicts for a random claim equal those of the search run on every node."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import make_node, make_pod
from kubesched.scheduler.plugins.dynamicresources import nodekeys
from kubesched.testing import Cluster

DRIVER = "gpu.example.com"
GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}


def device(kind: str, index: int, slot: int) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f"d{slot}", "attributes": {"index": {"int": index}}}
    if kind == "shared":
        out["allowMultipleAllocations"] = True
        out["capacity"] = {
            "memory": {"value": "40Gi", "requestPolicy": {"validRange": {"min": "10Gi", "step": "10Gi"}}}
        }
    elif kind == "partition":
        out["consumesCounters"] = [{"counterSet": "set", "counters": {"slots": {"value": "1"}}}]
    return out


def node_objects(name: str, devices: list[tuple[str, int]], slots: int) -> list[dict[str, Any]]:
    spec: dict[str, Any] = {
        "driver": DRIVER,
        "nodeName": name,
        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
        "devices": [device(kind, index, slot) for slot, (kind, index) in enumerate(devices)],
    }
    if any(kind == "partition" for kind, _ in devices):
        spec["sharedCounters"] = [{"name": "set", "counters": {"slots": {"value": str(slots)}}}]
    slice_ = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}
    return [make_node(name, cpu="64"), slice_]


def claim(name: str, count: int, memory: str | None, distinct: bool) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "count": count}
    if memory:
        exactly["capacity"] = {"requests": {"memory": memory}}
    devices: dict[str, Any] = {"requests": [{"name": "r", "exactly": exactly}]}
    if distinct:
        devices["constraints"] = [{"requests": ["r"], "distinctAttribute": f"{DRIVER}/index"}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": devices},
    }


def user(name: str, claim_name: str) -> dict[str, Any]:
    pod = make_pod(name, cpu="10m")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    return pod


layouts = st.lists(
    st.tuples(st.sampled_from(["shared", "partition", "plain"]), st.integers(0, 2)), min_size=1, max_size=4
)
claims = st.tuples(st.integers(1, 3), st.sampled_from([None, "10Gi", "25Gi"]), st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kinds=st.lists(st.tuples(layouts, st.integers(1, 3)), min_size=1, max_size=3),
    nodes=st.lists(st.integers(0, 2), min_size=2, max_size=8),
    taken=st.lists(claims, max_size=6),
    probe=claims,
)
def test_one_search_per_kind_of_node_decides_as_every_node(
    kinds: list[tuple[list[tuple[str, int]], int]],
    nodes: list[int],
    taken: list[tuple[int, str | None, bool]],
    probe: tuple[int, str | None, bool],
) -> None:
    objs: list[dict[str, Any]] = [GPU_CLASS]
    for i, k in enumerate(nodes):  # several nodes of each kind, so that keys repeat
        layout, slots = kinds[k % len(kinds)]
        objs += node_objects(f"n{i}", layout, slots)
    c = Cluster(*objs)
    for j, spec in enumerate(taken):
        c.create(claim(f"t{j}", *spec), user(f"u{j}", f"t{j}"))
    c.settle()
    c.create(claim("probe", *probe))
    c.settle()
    pod = user("p", "probe")
    keyed = c.filter_verdicts("DynamicResources", pod)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(nodekeys, "node_keys", lambda *args: None)
        every = c.filter_verdicts("DynamicResources", pod)
    assert keyed == every
    assert all("could not find" not in reason for _, reason in every.values())


def test_a_node_whose_counters_are_spent_is_told_apart() -> None:
    """Three nodes of two partitions drawing on one slot: the node whose slot a claim took fails
    a one-device claim, the others pass (the count alone would pass all three)."""
    objs: list[dict[str, Any]] = [GPU_CLASS]
    for i in range(3):
        objs += node_objects(f"n{i}", [("partition", 0), ("partition", 1)], 1)
    c = Cluster(*objs)
    c.create(claim("t", 1, None, False), user("u", "t"))
    c.settle()
    c.create(claim("probe", 1, None, False))
    c.settle()
    held = c.node_of("u")
    verdicts = c.filter_verdicts("DynamicResources", user("p", "probe"))
    assert {n for n, (code, _) in verdicts.items() if code} == {held}


def test_nodes_alike_share_a_key_and_differ_once_a_device_is_taken() -> None:
    """Three nodes of one shareable device: one key while nothing is shared, two once a claim
    holds a share of one node's device."""
    objs: list[dict[str, Any]] = [GPU_CLASS]
    for i in range(3):
        objs += node_objects(f"n{i}", [("shared", 0)], 1)
    c = Cluster(*objs)
    plugin = c.sched.profiles["default-scheduler"].plugins["DynamicResources"]
    table, nodes = plugin.devices(), c.sched.cache.table
    import numpy as np

    keys = nodekeys.node_keys(table, np.zeros(len(table), bool), {}, nodes)
    assert keys is not None and len({tuple(k) for k in keys.tolist()}) == 1
    c.create(claim("t", 1, "10Gi", False), user("u", "t"))
    c.settle()
    shared = plugin._shared_use(table, set())
    keys = nodekeys.node_keys(plugin.devices(), np.zeros(len(table), bool), shared, nodes)
    assert keys is not None and len({tuple(k) for k in keys.tolist()}) == 2
