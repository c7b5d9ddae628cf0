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


RICH = make_pod(
    "rich",
    cpu="1",
    priority=7,
    spec={
        "preemptionPolicy": "Never",
        "schedulerName": "other",
        "schedulingGates": [{"name": "g"}],
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "nodeSelector": {"zone": "z"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Exists"}]}]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {"matchExpressions": [{"key": "k", "operator": "Exists"}]}}
                ],
            },
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "zone"}
                ]
            },
        },
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}
        ],
        "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}],
        "schedulingGroup": {"podGroupName": "pg"},
    },
)
RICH["metadata"]["ownerReferences"] = [
    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": True}
]
RICH["metadata"]["labels"] = {"app": "a"}
RICH["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
RICH["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]


def test_evolve_copies_every_field() -> None:
    """``evolve`` names PodInfo's fields one by one: a field added to PodInfo and not there fails
    (every field of the rich pod differs from its default, so a dropped one shows)."""
    import dataclasses

    old = pod_info_from(RICH)
    old.extra["memo"] = (old.obj, 1)
    new = old.evolve({"metadata": {}}, "n1", "n2")
    for f in dataclasses.fields(old):
        if f.name in ("obj", "node_name", "nominated_node_name", "extra"):
            continue
        value = getattr(old, f.name)
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        assert value != default, f"the rich pod leaves {f.name} at its default"
        assert getattr(new, f.name) == value, f.name  # equal, not identical: compiled, an int is unboxed
    assert (new.node_name, new.nominated_node_name, new.obj) == ("n1", "n2", {"metadata": {}})
    # the plugins' caches are kept with the old version's object: the new version starts without
    # them, so they do not hold the old object alive once the old version is dropped
    assert new.extra == {} and old.extra == {"memo": (old.obj, 1)}


def test_a_pod_created_in_process_is_parsed_once_with_the_stored_metadata() -> None:
    """The API server's validation parses a created pod; the scheduler's informer takes that parse
    for the very object stored (its uid, generated name and dropped deletionTimestamp as stored)
    instead of parsing it again, and the parse equals a fresh one of the stored object."""
    import dataclasses

    import kubesched.api.pod as pod_module
    from helpers import make_node
    from kubesched.testing import Cluster

    c = Cluster(make_node("n1", cpu="4"))
    sent = copy.deepcopy(RICH)
    del sent["metadata"]["name"], sent["metadata"]["uid"]
    sent["metadata"]["generateName"] = "rich-"
    del sent["spec"]["priority"]  # Priority admission computes it
    stored = c.store.create("Pod", sent)
    name, uid = stored["metadata"]["name"], stored["metadata"]["uid"]
    assert name.startswith("rich-") and uid and "deletionTimestamp" not in stored["metadata"]
    validated = pod_module._VALIDATED[id(stored)]  # the validation's parse, of the stored object
    c.sched.process_events()
    info = c.sched._pod_infos[uid]
    assert info is validated and id(stored) not in pod_module._VALIDATED
    fresh = pod_info_from(stored)
    for f in dataclasses.fields(info):
        assert getattr(info, f.name) == getattr(fresh, f.name), f.name
    assert (info.uid, info.name, info.deleting) == (uid, name, False)


def test_a_parse_is_handed_over_only_for_the_object_it_was_made_of() -> None:
    from kubesched.api.pod import remember_validated, validated_pod_info

    obj = copy.deepcopy(BASE)
    remember_validated(pod_info_from(obj))
    assert validated_pod_info(copy.deepcopy(obj)) is None  # equal, not the same object
    got = validated_pod_info(obj)
    assert got is not None and got.obj is obj
    assert validated_pod_info(obj) is None  # taken once


ZONE_LABELS = {"topology.kubernetes.io/zone": "z1", "topology.kubernetes.io/region": "r1"}
SPREAD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": ["app"]}


@pytest.mark.parametrize(
    ("spec", "reused"),
    [
        ({}, True),
        ({"topologySpreadConstraints": [{**SPREAD, "labelSelector": {"matchLabels": {"app": "a"}}}]}, False),
        (
            {
                "affinity": {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "topologyKey": "zone",
                                "labelSelector": {"matchLabels": {"app": "a"}},
                                "matchLabelKeys": ["app"],
                            }
                        ]
                    }
                }
            },
            False,
        ),
    ],
    ids=["plain", "spread-by-label-keys", "anti-affinity-by-label-keys"],
)
def test_a_binding_that_adds_the_nodes_zone_labels_keeps_the_parse_where_labels_feed_nothing_else(
    spec: dict, reused: bool
) -> None:
    """kube-apiserver's PodTopologyLabelsAdmission adds the node's zone and region labels to the
    pod it binds: a plain pod's parse is kept with the new labels (equal to a fresh parse); a pod
    whose spread constraints or pod affinity read label values is parsed again."""
    import dataclasses

    from kubesched.api.pod import labels_alone_changed

    pending = make_pod("p", cpu="1", spec=spec)
    pending["metadata"]["labels"] = {"app": "a"}
    prev = pod_info_from(pending)
    bound = _bound(pending)
    bound["metadata"] = {**pending["metadata"], "labels": {**pending["metadata"]["labels"], **ZONE_LABELS}}
    assert labels_alone_changed(prev, bound) is reused
    if not reused:
        return
    kept = prev.evolve(bound, "n1", "", bound["metadata"]["labels"])
    fresh = pod_info_from(bound)
    for f in dataclasses.fields(fresh):
        if f.name != "extra":
            assert getattr(kept, f.name) == getattr(fresh, f.name), f.name
    assert not labels_alone_changed(prev, {**bound, "spec": {**bound["spec"], "priority": 5}})
