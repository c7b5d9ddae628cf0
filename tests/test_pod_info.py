"""PodInfo reuse across pod versions: a binding or a status write keeps the parse, anything the
scheduler reads forces a new one."""

from __future__ import annotations

import copy

import pytest

from helpers import make_pod
from kubesched.api.pod import pod_info_from, same_scheduling_inputs

BASE = make_pod("p", cpu="1", spec={"tolerations": [{"key": "k", "operator": "Exists"}]})


def _bound(obj: dict) -> dict:
    return {**obj, "spec": {**obj["spec"], "nodeName": "n1"}, "status": {"phase": "Running"}}


def _with(path: str, value: object) -> dict:
    obj = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    target = obj
    for key in parents:
        target = target.setdefault(key, {})
    target[last] = value
    return obj


@pytest.mark.parametrize(
    ("new", "same"),
    [
        (_bound(BASE), True),
        ({**BASE, "status": {"nominatedNodeName": "n2"}}, True),
        (copy.deepcopy(BASE), True),  # equal but not identical
        (_with("metadata.labels", {"app": "x"}), False),
        (_with("metadata.deletionTimestamp", "2026-01-01T00:00:00Z"), False),
        (_with("metadata.ownerReferences", [{"kind": "ReplicaSet", "name": "rs", "uid": "u"}]), False),
        (_with("spec.tolerations", []), False),
        (_with("spec.schedulingGates", [{"name": "g"}]), False),
        (_with("spec.containers", [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "2"}}}]), False),
    ],
)
def test_same_scheduling_inputs(new: dict, same: bool) -> None:
    assert same_scheduling_inputs(BASE, new) is same


def test_evolve_keeps_the_parse_and_takes_the_new_node_and_nomination() -> None:
    old = pod_info_from(BASE)
    new_obj = _bound(BASE)
    new = old.evolve(new_obj, "n1", "")
    assert new is not old and new.obj is new_obj
    assert (new.node_name, old.node_name) == ("n1", "")
    assert new.requests == old.requests and new.tolerations == old.tolerations
    fresh = pod_info_from(new_obj)
    assert (fresh.node_name, fresh.requests, fresh.tolerations) == (new.node_name, new.requests, new.tolerations)
