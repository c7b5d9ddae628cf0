"""PodGroupExists reads a custom resource of its own: a pod of a group waits for its PodGroup,
and the PodGroup's creation (an event the plugin registers, in upstream's GVK form) moves it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from kubesched_prefer_label.podgroups import PodGroupExists

from kubesched.framework import InputError
from kubesched.testing import Cluster, in_tree_registry

EXAMPLE = Path(__file__).resolve().parents[2] / "crd"


def load(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((EXAMPLE / name).read_text()) if d]


def cluster() -> Cluster:
    registry = in_tree_registry()
    registry.register("PodGroupExists", PodGroupExists)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
    config = yaml.safe_load((EXAMPLE / "config.yaml").read_text())
    return Cluster(node, *load("podgroup-crd.yaml"), config=config, registry=registry)


def test_pods_wait_for_their_pod_group_and_go_when_it_is_created() -> None:
    c = cluster()
    c.create(*load("training.yaml"))
    c.settle()
    assert [c.node_of(f"trainer-{i}") for i in range(2)] == [None, None]
    assert (
        c.events("FailedScheduling")
        == [
            '0/1 nodes are available: PodGroup "default/training" not found. preemption: 0/1 nodes are available: '
            "1 Preemption is not helpful for scheduling."
        ]
        * 2
    )
    c.create(*load("podgroup.yaml"))
    c.settle()
    assert [c.node_of(f"trainer-{i}") for i in range(2)] == ["n1", "n1"]
    group = c.store.get("podgroups.scheduling.x-k8s.io", "default", "training")
    assert group["spec"] == {"minMember": 2, "scheduleTimeoutSeconds": 60}  # the schema's default


def test_the_custom_resource_is_validated_by_its_schema() -> None:
    c = cluster()
    bad = {**load("podgroup.yaml")[0], "spec": {"minMember": 0}}
    with pytest.raises(Exception, match=r"spec.minMember in body should be greater than or equal to 1"):
        c.create(bad)
    unserved = 'no matches for kind "PodGroup" in version "scheduling.x-k8s.io/v1"'
    with pytest.raises(InputError, match=re.escape(unserved)):
        c.create({**bad, "apiVersion": "scheduling.x-k8s.io/v1"})
