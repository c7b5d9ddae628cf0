"""Resources kube-apiserver v1.37.2 serves that kubesched now serves too, judged against it:
``replicationcontrollers/scale`` (``kubectl scale rc``), ``localsubjectaccessreviews`` (a
namespace's SubjectAccessReview, with its namespace rules) and ``componentstatuses`` (``kubectl
get cs``: the components beside the API server, healthy while their loops sync)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from tests.live import Server
from tests.upstream import ControlPlane

RC = {
    "apiVersion": "v1",
    "kind": "ReplicationController",
    "metadata": {"name": "rc"},
    "spec": {
        "replicas": 2,
        "selector": {"app": "rc", "tier": "web"},
        "template": {
            "metadata": {"labels": {"app": "rc", "tier": "web"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        },
    },
}
LSAR = "/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews"


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory):
    plane = ControlPlane(tmp_path_factory.mktemp("upstream-served")).start()
    server = Server(tmp_path_factory.mktemp("kubesched-served") / "data").start()
    try:
        for side in (plane, server):
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
            assert side.request("POST", "/api/v1/namespaces", namespace)[0] == 201
        yield plane, server
    finally:
        server.stop()
        plane.stop()


def _scale(out: dict[str, Any]) -> dict[str, Any]:
    return {k: out.get(k) for k in ("kind", "apiVersion", "spec")} | {
        "selector": (out.get("status") or {}).get("selector")
    }


def test_a_replication_controllers_scale(sides) -> None:
    path = "/api/v1/namespaces/default/replicationcontrollers"
    answers = []
    for side in sides:
        assert side.request("POST", path, copy.deepcopy(RC))[0] == 201
        got = [_scale(side.request("GET", f"{path}/rc/scale")[1])]
        code, out = side.request(
            "PATCH", f"{path}/rc/scale", {"spec": {"replicas": 5}}, content_type="application/merge-patch+json"
        )
        got.append((code, _scale(out)))
        got.append(side.request("GET", f"{path}/rc")[1]["spec"]["replicas"])
        code, out = side.request(
            "PATCH", f"{path}/rc/scale", {"spec": {"replicas": -1}}, content_type="application/merge-patch+json"
        )
        got.append((code, out.get("message")))
        answers.append(got)
    theirs, ours = answers
    assert ours == theirs
    assert theirs[0]["selector"] == "app=rc,tier=web" and theirs[2] == 5


def _review(namespace: str | None, attributes_namespace: str | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {"verb": "get", "resource": "pods"}
    if attributes_namespace is not None:
        attributes["namespace"] = attributes_namespace
    meta = {"namespace": namespace} if namespace is not None else {}
    spec = {"user": "alice", "resourceAttributes": attributes}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview", "metadata": meta, "spec": spec}


@pytest.mark.parametrize(
    ("namespace", "attributes_namespace"),
    [(None, None), ("team", None), ("team", "team"), ("other", None), (None, "other"), ("team", "other")],
)
def test_a_local_subject_access_review_names_its_namespace(sides, namespace, attributes_namespace) -> None:
    answers = []
    for side in sides:
        code, out = side.request("POST", LSAR, _review(namespace, attributes_namespace))
        if code == 201:
            answers.append((code, out["spec"], out["status"], out["metadata"].get("namespace")))
        else:
            answers.append(
                (code, out.get("reason"), out.get("message"), json.dumps((out.get("details") or {}).get("causes")))
            )
    theirs, ours = answers
    assert ours == theirs


def test_component_statuses_list_the_components(sides) -> None:
    """kube-apiserver probes the controller manager and the scheduler on their ports (none runs
    beside the test's kube-apiserver); kubesched reads its loops' health: the controller manager
    runs beside ``kubesched apiserver``, no scheduler does. The names and the shape agree."""
    plane, server = sides
    theirs = plane.request("GET", "/api/v1/componentstatuses")[1]
    ours = server.request("GET", "/api/v1/componentstatuses")[1]
    # (kube-apiserver lists them in Go's map order, which varies from run to run)
    names = [sorted(i["metadata"]["name"] for i in side["items"]) for side in (ours, theirs)]
    assert names[0] == names[1]
    assert {tuple(sorted(i)) for i in ours["items"]} == {tuple(sorted(i)) for i in theirs["items"]}
    healthy = {i["metadata"]["name"]: i["conditions"][0]["status"] for i in ours["items"]}
    assert healthy == {"controller-manager": "True", "scheduler": "False", "etcd-0": "True"}
    one = server.request("GET", "/api/v1/componentstatuses/etcd-0")[1]
    assert one == {**plane.request("GET", "/api/v1/componentstatuses/etcd-0")[1]}
