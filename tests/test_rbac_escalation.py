"""RBAC escalation prevention (``pkg/registry/rbac``, ``ConfirmNoEscalation``): a namespace admin
cannot bind cluster-admin or write a role with ``*`` on ``*`` (kube-apiserver's 403 listing the
missing rules), may grant what they hold, and may go further only with ``escalate`` or ``bind``
on that role. Rules covered and missing as a table; the rest over HTTP with raw requests and
with a real kubectl as the tenant."""

from __future__ import annotations

import os
import subprocess
from typing import Any

import pytest
from tests.live import Server, kubectl_binaries, temp_home

from kubesched.apiserver.auth.bootstrap_policy import rule
from kubesched.apiserver.auth.escalation import breakdown, compact_string, missing_rules

RBAC = "/apis/rbac.authorization.k8s.io/v1"
BINARIES = kubectl_binaries()
NEWEST = max(BINARIES, key=lambda v: int(v.split(".")[1]) if "." in v else 0) if BINARIES else None


@pytest.mark.parametrize(
    ("owner", "wanted", "missing"),
    [
        ([rule(("*",), ("*",), ("*",))], [rule(("get", "list"), ("",), ("pods",))], []),
        (
            [rule(("get",), ("",), ("pods",))],
            [rule(("get", "list"), ("",), ("pods",))],
            ['{APIGroups:[""], Resources:["pods"], Verbs:["list"]}'],
        ),
        ([rule(("get",), ("",), ("pods/*",))], [rule(("get",), ("",), ("pods/log",))], []),
        (
            [rule(("get",), ("",), ("*/status",))],
            [rule(("get",), ("apps",), ("deployments/status",))],
            ['{APIGroups:["apps"], Resources:["deployments/status"], Verbs:["get"]}'],
        ),
        ([rule(("get",), ("",), ("pods",), ("a",))], [rule(("get",), ("",), ("pods",), ("a",))], []),
        (
            [rule(("get",), ("",), ("pods",), ("a",))],
            [rule(("get",), ("",), ("pods",))],
            ['{APIGroups:[""], Resources:["pods"], Verbs:["get"]}'],
        ),
        (
            [{"verbs": ["get"], "nonResourceURLs": ["/healthz/*"]}],
            [{"verbs": ["get"], "nonResourceURLs": ["/healthz/etcd", "/metrics"]}],
            ['{NonResourceURLs:["/metrics"], Verbs:["get"]}'],
        ),
    ],
)
def test_covered_and_missing_rules(owner, wanted, missing):
    assert [compact_string(r) for r in missing_rules(owner, wanted)] == missing


def test_breakdown_is_one_verb_on_one_resource():
    assert breakdown(rule(("get", "list"), ("", "apps"), ("pods",))) == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": ["apps"], "resources": ["pods"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["pods"], "verbs": ["list"]},
    ]


def binding(kind: str, name: str, role_kind: str, role: str, user: str, ns: str | None = "team") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}],
    }


def role(name: str, rules: list[dict[str, Any]], ns: str = "team") -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": ns},
        "rules": rules,
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("escalation")
    tokens = d / "tokens.csv"
    tokens.write_text("alice-token,alice,1001\nbob-token,bob,1002\n")
    s = Server(d / "data", command="apiserver", args=["--token-auth-file", str(tokens)]).start()
    try:
        assert s.request("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})[0] == 201
        # alice administers the namespace team (the bootstrap `admin` role, bound there)
        assert (
            s.request(
                "POST",
                f"{RBAC}/namespaces/team/rolebindings",
                binding("RoleBinding", "alice-admin", "ClusterRole", "admin", "alice"),
            )[0]
            == 201
        )
        # bob administers it too, and may bind cluster-admin and escalate roles there
        assert (
            s.request(
                "POST",
                f"{RBAC}/namespaces/team/rolebindings",
                binding("RoleBinding", "bob-admin", "ClusterRole", "admin", "bob"),
            )[0]
            == 201
        )
        granter = role(
            "granter",
            [
                rule(("bind",), ("rbac.authorization.k8s.io",), ("clusterroles",), ("cluster-admin",)),
                rule(("escalate",), ("rbac.authorization.k8s.io",), ("roles",)),
            ],
        )
        assert s.request("POST", f"{RBAC}/namespaces/team/roles", granter)[0] == 201
        assert (
            s.request(
                "POST",
                f"{RBAC}/namespaces/team/rolebindings",
                binding("RoleBinding", "bob-granter", "Role", "granter", "bob"),
            )[0]
            == 201
        )
        yield s
    finally:
        s.stop()


def test_a_namespace_admin_cannot_bind_cluster_admin(server):
    status, body = server.request(
        "POST",
        f"{RBAC}/namespaces/team/rolebindings",
        binding("RoleBinding", "mine", "ClusterRole", "cluster-admin", "alice"),
        token="alice-token",
    )
    assert status == 403 and body["reason"] == "Forbidden"
    assert body["details"] == {"name": "mine", "group": "rbac.authorization.k8s.io", "kind": "rolebindings"}
    assert body["message"] == (
        'rolebindings.rbac.authorization.k8s.io "mine" is forbidden: user "alice" (groups=["system:authenticated"]) '
        "is attempting to grant RBAC permissions not currently held:\n"
        '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n'
        '{NonResourceURLs:["*"], Verbs:["*"]}'
    )
    assert server.request("GET", f"{RBAC}/namespaces/team/rolebindings/mine")[0] == 404


def test_a_namespace_admin_cannot_write_a_role_with_star_on_star_but_may_grant_what_they_hold(server):
    status, body = server.request(
        "POST", f"{RBAC}/namespaces/team/roles", role("everything", [rule(("*",), ("*",), ("*",))]), token="alice-token"
    )
    assert status == 403
    assert body["message"].startswith(
        'roles.rbac.authorization.k8s.io "everything" is forbidden: user "alice" (groups=["system:authenticated"]) '
        "is attempting to grant RBAC permissions not currently held:\n"
    )
    assert '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}' in body["message"].splitlines()
    held = role("pod-reader", [rule(("get", "list", "watch"), ("",), ("pods",))])
    assert server.request("POST", f"{RBAC}/namespaces/team/roles", held, token="alice-token")[0] == 201
    # and may bind it, but not to more than it holds by updating it past that
    status, body = server.request(
        "PUT",
        f"{RBAC}/namespaces/team/roles/pod-reader",
        {**held, "rules": [rule(("*",), ("",), ("nodes",))]},
        token="alice-token",
    )
    assert status == 403 and '{APIGroups:[""], Resources:["nodes"], Verbs:["*"]}' in body["message"]
    assert (
        server.request(
            "POST",
            f"{RBAC}/namespaces/team/rolebindings",
            binding("RoleBinding", "readers", "Role", "pod-reader", "someone"),
            token="alice-token",
        )[0]
        == 201
    )


def test_cluster_scope_is_refused_to_a_namespace_admin(server):
    status, body = server.request(
        "POST",
        f"{RBAC}/clusterrolebindings",
        binding("ClusterRoleBinding", "takeover", "ClusterRole", "cluster-admin", "alice", ns=None),
        token="alice-token",
    )
    assert status == 403  # not even allowed to create cluster role bindings (RBAC, before escalation)
    assert body["message"].startswith('clusterrolebindings.rbac.authorization.k8s.io is forbidden: User "alice" cannot')


def test_bind_and_escalate_let_a_user_grant_past_what_they_hold(server):
    assert (
        server.request(
            "POST",
            f"{RBAC}/namespaces/team/rolebindings",
            binding("RoleBinding", "bob-binds", "ClusterRole", "cluster-admin", "carol"),
            token="bob-token",
        )[0]
        == 201
    )
    assert (
        server.request(
            "POST", f"{RBAC}/namespaces/team/roles", role("wide", [rule(("*",), ("*",), ("*",))]), token="bob-token"
        )[0]
        == 201
    )
    # bind covers cluster-admin only: another role bob does not hold is still refused
    assert (
        server.request(
            "POST",
            f"{RBAC}/namespaces/team/rolebindings",
            binding("RoleBinding", "bob-edit-nodes", "ClusterRole", "system:kube-scheduler", "carol"),
            token="bob-token",
        )[0]
        == 403
    )


def test_a_binding_to_a_missing_role_is_not_found(server):
    status, body = server.request(
        "POST",
        f"{RBAC}/namespaces/team/rolebindings",
        binding("RoleBinding", "ghost", "Role", "no-such-role", "someone"),
        token="alice-token",
    )
    assert status == 404 and body["message"] == 'roles.rbac.authorization.k8s.io "no-such-role" not found'


@pytest.mark.skipif(NEWEST is None, reason="no kubectl binary on this machine (google-cloud-sdk's kubectl.1.XX)")
def test_kubectl_as_the_tenant_is_refused_with_the_servers_message(server):
    env = {**os.environ, "HOME": temp_home(), "KUBECONFIG": str(server.kubeconfig)}
    out = subprocess.run(
        [
            BINARIES[NEWEST or ""],
            "--token",
            "alice-token",
            "-n",
            "team",
            "create",
            "rolebinding",
            "escalate",
            "--clusterrole=cluster-admin",
            "--user=alice",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 1
    assert 'rolebindings.rbac.authorization.k8s.io "escalate" is forbidden: user "alice"' in out.stderr
    assert "is attempting to grant RBAC permissions not currently held" in out.stderr
