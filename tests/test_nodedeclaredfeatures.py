"""NodeDeclaredFeatures: what a pod's spec needs (``InferForPodScheduling``), what a node's
``status.declaredFeatures`` declares (``TryMap``'s merge walk, unknown names skipped), and the
Filter's verdicts as upstream's table would have them; the default profile runs the plugin."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import make_node, make_pod
from kubesched.api.node_features import BIT, node_mask, registry_replaced, required_mask
from kubesched.scheduler.config import default_config
from kubesched.testing import Cluster

RESTART_ALL = {
    "restartPolicyRules": [{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]
}
BIND_MOUNT = {"volumeMounts": [{"name": "v", "mountPath": "/v", "bindMountOptions": ["rro"]}]}

# node name -> status.declaredFeatures
DECLARED: dict[str, list[str]] = {
    "bare": [],
    "mounts": ["VolumeBindMountOptions"],
    "all": ["RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport", "VolumeBindMountOptions"],
    "unknown": ["AFeatureNobodyKnows", "VolumeBindMountOptions"],
    "unsorted": ["VolumeBindMountOptions", "RestartAllContainersOnContainerExits"],  # the walk loses the second
}


def feature_pod(name: str, container: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    pod = make_pod(name, cpu="100m")
    pod["spec"]["containers"][0].update(container or {})
    if container and "volumeMounts" in container:
        pod["spec"]["volumes"] = [{"name": "v", "emptyDir": {}}]
    pod["spec"].update(spec)
    return pod


# (pod, the nodes that pass)
FILTER_CASES = [
    pytest.param(feature_pod("p"), set(DECLARED), id="needs nothing"),
    pytest.param(feature_pod("p", BIND_MOUNT), {"mounts", "all", "unknown", "unsorted"}, id="bind mount options"),
    pytest.param(feature_pod("p", RESTART_ALL), {"all"}, id="restart all containers"),
    pytest.param(feature_pod("p", hostNetwork=True, hostUsers=False), {"all"}, id="user namespace on host network"),
    pytest.param(feature_pod("p", hostNetwork=True, hostUsers=True), set(DECLARED), id="host users on host network"),
    pytest.param(feature_pod("p", {**BIND_MOUNT, **RESTART_ALL}), {"all"}, id="two features"),
]


def declaring_node(name: str) -> dict[str, Any]:
    node = make_node(name)
    node["status"]["declaredFeatures"] = DECLARED[name]
    return node


NODES = [declaring_node(n) for n in DECLARED]


def test_the_walk_over_a_nodes_list() -> None:
    assert node_mask([]) == 0
    assert node_mask(DECLARED["unknown"]) == BIT["VolumeBindMountOptions"]
    assert node_mask(DECLARED["unsorted"]) == BIT["VolumeBindMountOptions"]
    assert (
        node_mask(sorted(DECLARED["unsorted"]))
        == BIT["VolumeBindMountOptions"] | BIT["RestartAllContainersOnContainerExits"]
    )
    assert required_mask({"initContainers": [RESTART_ALL]}) == BIT["RestartAllContainersOnContainerExits"]
    assert required_mask({"ephemeralContainers": [BIND_MOUNT]}) == BIT["VolumeBindMountOptions"]


@pytest.mark.parametrize(("pod", "fits"), FILTER_CASES)
def test_filter(pod: dict[str, Any], fits: set[str]) -> None:
    c = Cluster(*NODES)
    got = c.filter_verdicts("NodeDeclaredFeatures", pod)
    assert {n for n, (code, _) in got.items() if code == 0} == fits
    assert {msg for code, msg in got.values() if code} <= {"node(s) didn't match Pod's required features"}


def test_in_the_default_profile_after_the_binder() -> None:
    names = [p.name for p in default_config().profiles[0].multi_point.enabled]
    assert names[-1] == "NodeDeclaredFeatures" and names[-2] == "DefaultBinder"


def test_a_node_declaring_the_feature_later_takes_the_pod() -> None:
    c = Cluster(declaring_node("bare"))
    c.create(feature_pod("p", BIND_MOUNT))
    c.settle()
    assert c.node_of("p") is None
    assert c.events("FailedScheduling")[-1].startswith(
        "0/1 nodes are available: 1 node(s) didn't match Pod's required features."
    )
    node = c.store.get("Node", "", "bare")
    node["status"]["declaredFeatures"] = ["VolumeBindMountOptions"]
    c.store.update("Node", node)
    c.settle()
    c.advance(10)  # the event moved it out of the unschedulable pods; its backoff ends
    assert c.node_of("p") == "bare"


def test_a_registry_wider_than_a_word() -> None:
    """With scheduler_perf's 100 mock features (each needed by a pod with pod-level resources), the
    node table keeps masks of two 64-bit words: a node lacking the 70th feature is filtered out."""
    names = [f"Feature{i}" for i in range(1, 101)]
    with registry_replaced(names, lambda spec: bool(spec.get("resources"))):
        nodes = []
        for name, declared in (("all", names), ("no70", [n for n in names if n != "Feature70"])):
            node = make_node(name)
            node["status"]["declaredFeatures"] = sorted(declared)
            nodes.append(node)
        c = Cluster(*nodes)
        pod = feature_pod("p")
        pod["spec"]["resources"] = {"requests": {"cpu": "100m"}}
        c.create(pod, feature_pod("plain"))
        c.settle()
        assert c.node_of("p") == "all"
        assert c.node_of("plain") in {"all", "no70"}
        verdicts = c.filter_verdicts("NodeDeclaredFeatures", pod)
        assert verdicts == {"all": (0, ""), "no70": (3, "node(s) didn't match Pod's required features")}
    assert required_mask(pod["spec"]) == 0  # the real registry is back
