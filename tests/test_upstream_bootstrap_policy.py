"""kube-apiserver v1.37.2 is the judge of the bootstrap RBAC policy: every ClusterRole,
ClusterRoleBinding, Role and RoleBinding it creates at start (labelled
``kubernetes.io/bootstrapping=rbac-defaults``) is served by ``kubesched apiserver`` with the same
labels, annotations, rules, aggregation rule, role reference and subjects. The aggregated roles
(admin, edit, view) are compared with their rules gathered: kube-apiserver alone leaves them to
kube-controller-manager's aggregation controller, which kubesched runs."""

from __future__ import annotations

from typing import Any

import pytest
from tests.live import Server
from tests.upstream import AS_KUBESCHED, ControlPlane

from kubesched.apiserver.auth.bootstrap_policy import rule

RBAC = "/apis/rbac.authorization.k8s.io/v1"
SELECTOR = "?labelSelector=kubernetes.io%2Fbootstrapping%3Drbac-defaults"
PLURALS = ("clusterroles", "clusterrolebindings", "roles", "rolebindings")


def policy(server: Any, plural: str) -> dict[str, dict[str, Any]]:
    code, body = server.request("GET", f"{RBAC}/{plural}{SELECTOR}")
    assert code == 200, body
    out = {}
    for obj in body["items"]:
        meta = obj["metadata"]
        key = f"{meta.get('namespace', '')}/{meta['name']}"
        out[key] = {
            "labels": meta.get("labels"),
            "annotations": meta.get("annotations"),
            **{k: obj.get(k) for k in ("aggregationRule", "roleRef", "subjects")},
            "rules": None if obj.get("aggregationRule") else obj.get("rules"),
        }
    return out


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("bootstrap")
    plane = ControlPlane(root / "upstream", args=AS_KUBESCHED).start()
    ours = Server(root / "data").start()
    try:
        yield plane, ours
    finally:
        ours.stop()
        plane.stop()


@pytest.mark.parametrize("plural", PLURALS)
def test_kubesched_serves_kube_apiservers_bootstrap_policy(servers, plural):
    plane, ours = servers
    theirs, mine = policy(plane, plural), policy(ours, plural)
    assert sorted(set(theirs) - set(mine)) == [], "missing"
    assert sorted(set(mine) - set(theirs)) == [], "not upstream's"
    for name, obj in theirs.items():
        assert mine[name] == obj, name


def test_the_scheduler_role_holds_what_v1_37_needs(servers):
    """The rules issue 45 found missing: claims written at PreBind, finalizers, its Lease watched,
    LeaseCandidates for coordinated leader election, DeviceTaintRules read."""
    _, ours = servers
    code, role = ours.request("GET", f"{RBAC}/clusterroles/system:kube-scheduler")
    assert code == 200
    for wanted in (
        rule(("get", "list", "patch", "update", "watch"), ("resource.k8s.io",), ("resourceclaims",)),
        rule(("update",), ("",), ("pods/finalizers",)),
        rule(("get", "list", "update", "watch"), ("coordination.k8s.io",), ("leases",), ("kube-scheduler",)),
        rule(
            ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
            ("coordination.k8s.io",),
            ("leasecandidates",),
        ),
        rule(("get", "list", "watch"), ("resource.k8s.io",), ("devicetaintrules",)),
    ):
        assert wanted in role["rules"]
