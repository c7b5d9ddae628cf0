"""The example plugins tested as a plugin author would: a Scheduler on kubesched's in-memory
cluster with a Registry holding the plugins, no installation needed."""

from __future__ import annotations

import pytest
from kubesched_prefer_label import AvoidNodeLabel, PreferNodeLabel

from kubesched.framework import InputError
from kubesched.testing import Cluster, in_tree_registry


def node(name: str, **labels: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}]},
    }


def schedule(profile_plugins: dict, plugin_config: list, nodes: list[dict], pods: list[dict]) -> Cluster:
    registry = in_tree_registry()
    registry.register("PreferNodeLabel", PreferNodeLabel)
    registry.register("AvoidNodeLabel", AvoidNodeLabel)
    cluster = Cluster(
        *nodes,
        config={"profiles": [{"plugins": profile_plugins, "pluginConfig": plugin_config}]},
        registry=registry,
    )
    cluster.create(*pods)
    cluster.settle()
    return cluster


def test_prefer_node_label_wins_over_the_default_scores():
    cluster = schedule(
        {"score": {"enabled": [{"name": "PreferNodeLabel", "weight": 10}]}},
        [{"name": "PreferNodeLabel", "args": {"key": "disk", "values": ["ssd"]}}],
        [node("a"), node("b", disk="ssd"), node("c", disk="hdd")],
        [pod(f"p{i}") for i in range(3)],
    )
    assert [cluster.node_of(f"p{i}") for i in range(3)] == ["b", "b", "b"]


def test_avoid_node_label_filters_with_a_reason():
    cluster = schedule(
        {"filter": {"enabled": [{"name": "AvoidNodeLabel"}]}},
        [{"name": "AvoidNodeLabel", "args": {"key": "maintenance", "value": "true"}}],
        [node("a", maintenance="true")],
        [pod("p")],
    )
    assert cluster.node_of("p") is None
    events = cluster.events("FailedScheduling")
    assert events[0].startswith("0/1 nodes are available: 1 node(s) had label maintenance=true.")


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        ({"values": ["ssd"]}, "key", "Required value"),
        ({"key": "disk", "score": 101}, "score", "must be in the range [0, 100]"),
        ({"key": "disk", "weight": 3}, "weight", 'unknown field "weight"'),
        ({"key": "disk", "values": "ssd"}, "values", "expected a list"),
    ],
)
def test_typed_args_are_validated(args, field, message):
    with pytest.raises(InputError) as err:
        schedule(
            {"score": {"enabled": [{"name": "PreferNodeLabel"}]}},
            [{"name": "PreferNodeLabel", "args": args}],
            [node("a")],
            [],
        )
    assert err.value.field.endswith(field) and message in err.value.message
