"""kube-apiserver v1.37.2 judges pods/binding: the bound pod's spec.nodeName, its PodScheduled
condition, the Binding's annotations, and the nominated node cleared
(ClearingNominatedNodeNameAfterBinding, beta and on); and the refusals of a second binding and of a
binding with a stale UID."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from tests.live import Server
from tests.upstream import ControlPlane

PODS = "/api/v1/namespaces/default/pods"
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "image": "pause"}]},
}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}


def binding(node: str, uid: str = "", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", **({"uid": uid} if uid else {})}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Binding", "metadata": meta, "target": {"kind": "Node", "name": node}}


def session(server: Any) -> list[Any]:
    """The same requests to either server; what each answered, volatile fields left out."""
    out: list[Any] = []
    assert server.request("POST", "/api/v1/nodes", NODE)[0] == 201
    code, pod = server.request("POST", PODS, POD)
    assert code == 201, pod
    nominated = {"status": {"nominatedNodeName": "n1"}}
    code, pod = server.request("PATCH", f"{PODS}/p/status", nominated, content_type="application/merge-patch+json")
    out.append((code, (pod.get("status") or {}).get("nominatedNodeName")))
    code, body = server.request("POST", f"{PODS}/p/binding", binding("n1", "not-the-uid"))
    message = re.sub(r"object meta: [0-9a-f-]+", "object meta: UID", body.get("message") or "")
    out.append((code, body.get("reason"), message, body.get("details")))
    code, body = server.request("POST", f"{PODS}/p/binding", binding("n1", annotations={"why": "test"}))
    out.append((code, body.get("status")))
    code, pod = server.request("GET", f"{PODS}/p")
    status = pod.get("status") or {}
    out.append(
        (
            pod["spec"].get("nodeName"),
            status.get("nominatedNodeName"),
            [(c["type"], c["status"]) for c in status.get("conditions") or []],
            (pod["metadata"].get("annotations") or {}).get("why"),
            pod["metadata"].get("generation"),  # a binding is no spec update: no new generation
        )
    )
    code, body = server.request("POST", f"{PODS}/p/binding", binding("n1"))
    out.append((code, body.get("reason"), body.get("message"), body.get("details")))
    return out


def graceful_deletion(server: Any) -> list[Any]:
    """A bound pod deleted with a grace period of 1 s and no kubelet: still there, Terminating,
    well after the period (the API server never ends a graceful deletion; a kubelet does, with
    grace 0), then gone once deleted with grace 0."""
    pod = {**POD, "metadata": {"name": "q"}, "spec": {**POD["spec"], "nodeName": "n1"}}
    pod["spec"]["terminationGracePeriodSeconds"] = 1
    assert server.request("POST", PODS, pod)[0] == 201
    code, body = server.request("DELETE", f"{PODS}/q")
    out: list[Any] = [(code, body["metadata"].get("deletionGracePeriodSeconds"))]
    time.sleep(3)
    code, body = server.request("GET", f"{PODS}/q")
    out.append((code, bool(body["metadata"].get("deletionTimestamp"))))
    out.append(server.request("DELETE", f"{PODS}/q", {"gracePeriodSeconds": 0})[0])
    out.append(server.request("GET", f"{PODS}/q")[0])
    return out


ZONED = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "zoned",
        "labels": {"topology.kubernetes.io/zone": "z1", "topology.kubernetes.io/region": "r1", "rack": "7"},
    },
}


def topology_labels(server: Any) -> list[Any]:
    """PodTopologyLabelsAdmission (beta, on): a pod bound to a node, or created on it, gets the node's
    zone and region labels (over its own), and a Binding's own labels are copied onto the pod."""
    assert server.request("POST", "/api/v1/nodes", ZONED)[0] == 201
    out: list[Any] = []
    own = {"app": "a", "topology.kubernetes.io/zone": "mine"}
    for name, spec in (("tb", {}), ("tc", {"nodeName": "zoned"})):
        pod = {**POD, "metadata": {"name": name, "labels": own}, "spec": {**POD["spec"], **spec}}
        assert server.request("POST", PODS, pod)[0] == 201
    bind = binding("zoned")
    bind["metadata"] = {"name": "tb", "labels": {"from-binding": "yes", "topology.kubernetes.io/region": "theirs"}}
    out.append(server.request("POST", f"{PODS}/tb/binding", bind)[0])
    for name in ("tb", "tc"):
        out.append(server.request("GET", f"{PODS}/{name}")[1]["metadata"].get("labels"))
    # a pod with scheduling gates cannot be bound (setPodNodeAndMetadata)
    gated = {**POD, "metadata": {"name": "tg"}, "spec": {**POD["spec"], "schedulingGates": [{"name": "g"}]}}
    assert server.request("POST", PODS, gated)[0] == 201
    bind = {**binding("zoned"), "metadata": {"name": "tg"}}
    code, body = server.request("POST", f"{PODS}/tg/binding", bind)
    out.append((code, body.get("reason"), body.get("message"), body.get("details")))
    return out


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("binding")
    plane = ControlPlane(root / "upstream").start()
    ours = Server(root / "data", args=["--no-kubelet"]).start()  # no kubelet beside kube-apiserver either
    try:
        bound = (session(plane), session(ours))
        yield {
            "binding": bound,
            "deletion": (graceful_deletion(plane), graceful_deletion(ours)),
            "topology": (topology_labels(plane), topology_labels(ours)),
        }
    finally:
        ours.stop()
        plane.stop()


def test_binding_answers_as_kube_apiserver(answers):
    theirs, mine = answers["binding"]
    assert mine == theirs
    assert theirs[3][:2] == ("n1", None)  # bound, the nomination cleared


def test_a_graceful_deletion_waits_for_a_kubelet_as_on_kube_apiserver(answers):
    theirs, mine = answers["deletion"]
    assert mine == theirs == [(200, 1), (200, True), 200, 404]


def test_a_pod_bound_to_a_node_gets_its_zone_and_region_labels_as_on_kube_apiserver(answers):
    theirs, mine = answers["topology"]
    assert mine == theirs
    assert theirs[2] == {"app": "a", "topology.kubernetes.io/zone": "z1", "topology.kubernetes.io/region": "r1"}
