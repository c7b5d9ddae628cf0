"""The structured allocator: upstream-style tables (selectors, counts, All, constraints,
alternatives, node reach) and a property test against a brute-force search."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.plugins.dynamicresources import allocator
from kubesched.scheduler.plugins.dynamicresources.devices import AllocationError, DeviceTable

DRIVER = "gpu.example.com"
CLASSES = {
    "gpu": {
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    },
    "any": {"metadata": {"name": "any"}, "spec": {}},
}


def device(name: str, model: str = "a100", memory: str = "80Gi", numa: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {"model": {"string": model}, "numa": {"int": numa}},
        "capacity": {"memory": {"value": memory}},
    }


def node_slice(node: str, *devices: dict[str, Any], driver: str = DRIVER, generation: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{node}-{driver}-{generation}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": generation},
            "devices": list(devices),
        },
    }


def claim(
    *requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None, uid: str = "c1"
) -> dict[str, Any]:
    return {
        "metadata": {"name": uid, "namespace": "default", "uid": uid},
        "spec": {"devices": {"requests": list(requests), "constraints": constraints or []}},
    }


def exactly(name: str = "gpu", count: int = 1, selector: str | None = None, mode: str = "ExactCount", cls: str = "gpu"):
    body: dict[str, Any] = {"deviceClassName": cls, "allocationMode": mode}
    if mode == "ExactCount":
        body["count"] = count
    if selector:
        body["selectors"] = [{"cel": {"expression": selector}}]
    return {"name": name, "exactly": body}


def run(slices: list[dict], claims: list[dict], node: str = "n1", taken: set[tuple[str, str, str]] = frozenset()):
    table = DeviceTable(slices)
    plans = [allocator.plan_claim(c, CLASSES) for c in claims]
    mask = np.zeros(len(table), bool)
    for k in taken:
        mask[table.index[k]] = True
    got = allocator.allocate_node(plans, table, mask, node, {})
    if got is None:
        return None
    return [[(r, table.devices[i].name) for r, i in per_claim] for per_claim in got]


MEM40 = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'


@pytest.mark.parametrize(
    ("slices", "claims", "taken", "want"),
    [
        ([node_slice("n1", device("g0"))], [claim(exactly())], set(), [[("gpu", "g0")]]),
        ([node_slice("n2", device("g0"))], [claim(exactly())], set(), None),  # another node's devices
        (
            [node_slice("n1", device("g0"), device("g1"))],
            [claim(exactly(count=2))],
            set(),
            [[("gpu", "g0"), ("gpu", "g1")]],
        ),
        ([node_slice("n1", device("g0"))], [claim(exactly(count=2))], set(), None),
        (
            [node_slice("n1", device("g0", memory="24Gi"), device("g1"))],
            [claim(exactly(selector=MEM40))],
            set(),
            [[("gpu", "g1")]],
        ),
        ([node_slice("n1", device("g0"), device("g1"))], [claim(exactly())], {(DRIVER, "n1", "g0")}, [[("gpu", "g1")]]),
        (
            [node_slice("n1", device("g0"), device("g1"))],
            [claim(exactly(mode="All"))],
            set(),
            [[("gpu", "g0"), ("gpu", "g1")]],
        ),
        ([node_slice("n1", device("g0"), device("g1"))], [claim(exactly(mode="All"))], {(DRIVER, "n1", "g0")}, None),
        (  # two claims of one pod never share a device
            [node_slice("n1", device("g0"), device("g1"))],
            [claim(exactly(), uid="a"), claim(exactly(), uid="b")],
            set(),
            [[("gpu", "g0")], [("gpu", "g1")]],
        ),
        (  # matchAttribute: two devices on the same NUMA node, found by backtracking
            [node_slice("n1", device("g0", numa=0), device("g1", numa=1), device("g2", numa=1))],
            [claim(exactly(count=2), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])],
            set(),
            [[("gpu", "g1"), ("gpu", "g2")]],
        ),
        (
            [node_slice("n1", device("g0", numa=0), device("g1", numa=1))],
            [claim(exactly(count=2), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])],
            set(),
            None,
        ),
        (  # firstAvailable: the first alternative that fits
            [node_slice("n1", device("g0", memory="24Gi"))],
            [
                claim(
                    {
                        "name": "gpu",
                        "firstAvailable": [
                            {"name": "big", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": MEM40}}]},
                            {"name": "small", "deviceClassName": "gpu"},
                        ],
                    }
                )
            ],
            set(),
            [[("gpu/small", "g0")]],
        ),
        (  # an older generation of a pool is ignored
            [node_slice("n1", device("old"), generation=1), node_slice("n1", device("new"), generation=2)],
            [claim(exactly(count=1))],
            set(),
            [[("gpu", "new")]],
        ),
    ],
    ids=[
        "one",
        "other-node",
        "count-2",
        "count-too-many",
        "selector",
        "taken",
        "all",
        "all-but-one-taken",
        "two-claims",
        "match-attribute",
        "match-attribute-impossible",
        "first-available",
        "pool-generation",
    ],
)
def test_allocate_node(slices, claims, taken, want) -> None:
    assert run(slices, claims, taken=taken) == want


def test_admin_access_takes_allocated_devices_and_frees_nothing_it_takes() -> None:
    slices = [node_slice("n1", device("g0"))]
    admin = exactly()
    admin["exactly"]["adminAccess"] = True
    assert run(slices, [claim(admin)], taken={(DRIVER, "n1", "g0")}) == [[("gpu", "g0")]]
    table = DeviceTable(slices)
    plan = allocator.plan_claim(claim(admin), CLASSES)
    got = allocator.allocate_node([plan], table, np.ones(1, bool), "n1", {})
    result = allocator.allocation_result(plan, got[0], table, "n1")
    assert result["devices"]["results"][0]["adminAccess"] is True
    assert allocator.allocated_keys([{"status": {"allocation": result}}]) == set()


@pytest.mark.parametrize(
    ("taint", "tolerations", "want"),
    [
        ({"key": "health", "value": "bad", "effect": "NoSchedule"}, [], [[("gpu", "g1")]]),
        ({"key": "health", "value": "bad", "effect": "NoExecute"}, [], [[("gpu", "g1")]]),
        ({"key": "health", "value": "bad", "effect": "None"}, [], [[("gpu", "g0")]]),  # informational only
        (
            {"key": "health", "value": "bad", "effect": "NoSchedule"},
            [{"key": "health", "operator": "Exists"}],
            [[("gpu", "g0")]],
        ),
        (
            {"key": "health", "value": "bad", "effect": "NoSchedule"},
            [{"key": "health", "operator": "Equal", "value": "ok"}],
            [[("gpu", "g1")]],
        ),
        ({"key": "health", "value": "bad", "effect": "NoSchedule"}, [{"operator": "Exists"}], [[("gpu", "g0")]]),
        (
            {"key": "health", "value": "bad", "effect": "NoSchedule"},
            [{"operator": "Exists", "effect": "NoExecute"}],
            [[("gpu", "g1")]],
        ),
    ],
    ids=["no-schedule", "no-execute", "none-effect", "exists", "equal-other-value", "empty-key", "other-effect"],
)
def test_device_taints_and_tolerations(taint, tolerations, want) -> None:
    """Tainted devices are not allocated unless the request tolerates every NoSchedule or
    NoExecute taint (device taints, beta in v1.36, stable in v1.37)."""
    tainted = device("g0")
    tainted["taints"] = [taint]
    request = exactly()
    request["exactly"]["tolerations"] = tolerations
    assert run([node_slice("n1", tainted, device("g1"))], [claim(request)]) == want


def partitioned_slices() -> list[dict[str, Any]]:
    """The DRA features page's example: a counter set of 8Gi, two devices of 6Gi each."""
    counters = {
        "metadata": {"name": "counters"},
        "spec": {
            "driver": DRIVER,
            "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 2},
            "sharedCounters": [{"name": "gpu-1-counters", "counters": {"memory": {"value": "8Gi"}}}],
        },
    }
    devices = node_slice("n1", device("device-1"), device("device-2"))
    devices["spec"]["pool"]["resourceSliceCount"] = 2
    for d in devices["spec"]["devices"]:
        d["consumesCounters"] = [{"counterSet": "gpu-1-counters", "counters": {"memory": {"value": "6Gi"}}}]
    return [counters, devices]


def test_partitionable_devices_share_their_counters() -> None:
    """Partitionable devices (beta and on by default in v1.36): two logical devices of 6Gi from
    one 8Gi counter set cannot both be allocated."""
    assert run(partitioned_slices(), [claim(exactly())]) == [[("gpu", "device-1")]]
    assert run(partitioned_slices(), [claim(exactly(count=2))]) is None
    assert run(partitioned_slices(), [claim(exactly(), uid="a"), claim(exactly(), uid="b")]) is None
    assert run(partitioned_slices(), [claim(exactly())], taken={(DRIVER, "n1", "device-1")}) is None


def test_shared_devices_reach_nodes_by_selector_or_all_nodes() -> None:
    shared = {
        "metadata": {"name": "fabric"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": "fabric", "generation": 1},
            "nodeSelector": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]
            },
            "devices": [device("link-0")],
        },
    }
    table = DeviceTable([shared])
    plans = [allocator.plan_claim(claim(exactly()), CLASSES)]
    none = np.zeros(1, bool)
    assert allocator.allocate_node(plans, table, none, "n1", {"rack": "r1"}) is not None
    assert allocator.allocate_node(plans, table, none, "n2", {"rack": "r2"}) is None


def test_a_missing_class_and_a_bad_selector() -> None:
    with pytest.raises(KeyError):
        allocator.plan_claim(claim(exactly(cls="nope")), CLASSES)
    table = DeviceTable([node_slice("n1", device("g0"))])
    plans = [allocator.plan_claim(claim(exactly(selector='device.attributes["nope"].x == 1')), CLASSES)]
    with pytest.raises(AllocationError, match="CEL runtime error: no such key"):
        allocator.allocate_node(plans, table, np.zeros(1, bool), "n1", {})


def test_allocation_result_shape() -> None:
    table = DeviceTable([node_slice("n1", device("g0"))])
    plan = allocator.plan_claim(claim(exactly()), CLASSES)
    got = allocator.allocate_node([plan], table, np.zeros(1, bool), "n1", {})
    assert allocator.allocation_result(plan, got[0], table, "n1") == {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "g0"}]},
        "nodeSelector": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
        },
    }


# -- property: the search finds an allocation exactly when one exists, and it is valid --------

MODELS = ("a100", "l4")


def brute_force(devices: list[dict], requests: list[tuple[int, str | None]], taken: set[int]) -> bool:
    """Is there an assignment of distinct free devices to the requests (count, model or any)?"""
    free = [i for i in range(len(devices)) if i not in taken]
    slots = [model for count, model in requests for _ in range(count)]
    for combo in itertools.permutations(free, len(slots)):
        if all(
            m is None or devices[i]["attributes"]["model"]["string"] == m for i, m in zip(combo, slots, strict=True)
        ):
            return True
    return False


@settings(max_examples=200, deadline=None)
@given(
    models=st.lists(st.sampled_from(MODELS), min_size=0, max_size=5),
    requests=st.lists(st.tuples(st.integers(1, 2), st.sampled_from((None, *MODELS))), min_size=1, max_size=3),
    taken=st.sets(st.integers(0, 4), max_size=2),
)
def test_search_matches_brute_force_and_never_doubles_a_device(models, requests, taken) -> None:
    devices = [device(f"g{i}", model=m) for i, m in enumerate(models)]
    taken = {t for t in taken if t < len(devices)}
    table = DeviceTable([node_slice("n1", *devices)])
    reqs = [
        exactly(
            name=f"r{k}",
            count=count,
            selector=None if model is None else f'device.attributes["{DRIVER}"].model == "{model}"',
        )
        for k, (count, model) in enumerate(requests)
    ]
    plan = allocator.plan_claim(claim(*reqs), CLASSES)
    mask = np.zeros(len(table), bool)
    mask[list(taken)] = True
    got = allocator.allocate_node([plan], table, mask, "n1", {})
    assert (got is not None) == brute_force(devices, requests, taken)
    if got is not None:
        chosen = [i for _, i in got[0]]
        assert len(chosen) == len(set(chosen)) and not set(chosen) & taken
        for k, (count, model) in enumerate(requests):
            mine = [i for r, i in got[0] if r == f"r{k}"]
            assert len(mine) == count
            assert model is None or all(models[i] == model for i in mine)
