"""kube-apiserver v1.37.2, with scheduling.k8s.io/v1beta1 served (``--runtime-config`` and
GenericWorkload), is the judge of the embedded API server's PodGroup and Workload validation and
of the Priority admission of PodGroups: each case is posted to both, and the answers must agree in
status code, reason, message and causes (what is accepted, as it is stored)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.live import Server
from tests.test_upstream_validation import answer, upstream_post
from tests.upstream import AS_KUBESCHED as GATED
from tests.upstream import ControlPlane

BASE = "/apis/scheduling.k8s.io/v1beta1/namespaces/default"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    plane = ControlPlane(tmp_path_factory.mktemp("upstream-podgroups"), args=GATED).start()
    ours = Server(
        tmp_path_factory.mktemp("kubesched-podgroups") / "data", args=["--feature-gates", "GenericWorkload=true"]
    ).start()
    try:
        for server in (plane, ours):
            pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gang"}}
            server.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {**pc, "value": 1000})
        yield plane, ours
    finally:
        ours.stop()
        plane.stop()


def pod_group(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec},
    }


def workload(name: str, templates: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {"podGroupTemplates": templates},
    }


TEMPLATE = {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}
CASES = [
    pytest.param("podgroups", pod_group("pg-zero", schedulingPolicy={"gang": {"minCount": 0}}), id="minCount 0"),
    pytest.param("podgroups", pod_group("pg-neg", schedulingPolicy={"gang": {"minCount": -2}}), id="minCount -2"),
    pytest.param("podgroups", pod_group("pg-none", schedulingPolicy={}), id="no policy"),
    pytest.param(
        "podgroups", pod_group("pg-both", schedulingPolicy={"basic": {}, "gang": {"minCount": 1}}), id="both policies"
    ),
    pytest.param("podgroups", pod_group("pg-class", priorityClassName="missing"), id="unknown priority class"),
    pytest.param("podgroups", pod_group("pg-prio", priorityClassName="gang", priority=7), id="a priority of its own"),
    pytest.param("workloads", workload("w-dup", [TEMPLATE, TEMPLATE]), id="duplicate template"),
    pytest.param(
        "workloads",
        workload("w-zero", [{"name": "a", "schedulingPolicy": {"gang": {"minCount": 0}}}]),
        id="template minCount 0",
    ),
    pytest.param(
        "workloads",
        workload("w-many", [{**TEMPLATE, "name": f"t{i}"} for i in range(9)]),
        id="nine templates",
    ),
]


@pytest.mark.parametrize(("plural", "body"), CASES)
def test_refused_alike(servers, plural, body):
    plane, ours = servers
    theirs = answer(*upstream_post(plane, f"{BASE}/{plural}", copy.deepcopy(body)))
    mine = answer(*ours.request("POST", f"{BASE}/{plural}", copy.deepcopy(body)))
    assert theirs["code"] >= 400
    assert mine == theirs


def test_a_pod_group_is_admitted_alike(servers):
    """The Priority admission resolves the class to spec.priority, and status starts empty."""
    plane, ours = servers
    body = pod_group("pg-ok", priorityClassName="gang")
    code, theirs = upstream_post(plane, f"{BASE}/podgroups", copy.deepcopy(body))
    mine_code, mine = ours.request("POST", f"{BASE}/podgroups", copy.deepcopy(body))
    assert (mine_code, code) == (201, 201)
    assert mine["spec"] == theirs["spec"]
    assert theirs["spec"]["priority"] == 1000
