"""kube-apiserver v1.37.2 is the judge of the embedded API server's authorization answers to a
tenant: RBAC escalation through roles and bindings, impersonation, what a watch is authorized as,
and TokenRequest's bounds. The same setup is made on both servers, the same requests are sent with
the same static users' tokens, and the answers must agree in status code, reason and message."""

from __future__ import annotations

from typing import Any

import pytest
from tests.live import Server
from tests.upstream import ControlPlane

from kubesched.apiserver.auth.bootstrap_policy import rule

USERS = "alice-token,alice,1001\nbob-token,bob,1002\n"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def role(name: str, rules: list[dict[str, Any]], ns: str = "team") -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": ns},
        "rules": rules,
    }


def binding(name: str, role_kind: str, role_name: str, user: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": "team"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}],
    }


# what alice holds in namespace team: pods and configmaps she may read, roles and bindings she may write
ALICE = role(
    "alice",
    [
        rule(("get", "list"), ("",), ("pods",)),
        rule(("get",), ("",), ("pods/*",)),  # no wildcard upstream: it names a subresource "*"
        rule(("list",), ("",), ("configmaps",)),
        rule(("*",), ("rbac.authorization.k8s.io",), ("roles", "rolebindings")),
        rule(("create",), ("",), ("serviceaccounts/token",)),
        rule(("get",), ("",), ("serviceaccounts",)),
    ],
)
SETUP: list[tuple[str, dict[str, Any]]] = [
    ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
    (f"{RBAC}/namespaces/team/roles", ALICE),
    (f"{RBAC}/namespaces/team/rolebindings", binding("alice", "Role", "alice", "alice")),
    (
        f"{RBAC}/clusterroles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "impersonate-alice"},
            "rules": [rule(("impersonate",), ("",), ("users",), ("alice",))],
        },
    ),
    (
        f"{RBAC}/clusterrolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "bob-impersonates"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonate-alice"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}],
        },
    ),
    (
        "/api/v1/namespaces/team/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
    ),
]

# (id, method, path, body, token, extra headers)
REQUESTS: list[tuple[str, str, str, Any, str, dict[str, str]]] = [
    (
        "bind-cluster-admin",
        "POST",
        f"{RBAC}/namespaces/team/rolebindings",
        binding("mine", "ClusterRole", "cluster-admin", "alice"),
        "alice-token",
        {},
    ),
    (
        "role-star-on-star",
        "POST",
        f"{RBAC}/namespaces/team/roles",
        role("everything", [rule(("*",), ("*",), ("*",))]),
        "alice-token",
        {},
    ),
    (
        "role-past-what-is-held",
        "POST",
        f"{RBAC}/namespaces/team/roles",
        role("more", [rule(("get", "list", "delete"), ("",), ("pods", "secrets"))]),
        "alice-token",
        {},
    ),
    (
        "role-within-what-is-held",
        "POST",
        f"{RBAC}/namespaces/team/roles",
        role("reader", [rule(("get",), ("",), ("pods",))]),
        "alice-token",
        {},
    ),
    (
        "bind-missing-role",
        "POST",
        f"{RBAC}/namespaces/team/rolebindings",
        binding("ghost", "Role", "no-such-role", "carol"),
        "alice-token",
        {},
    ),
    ("pods-star-is-not-a-wildcard", "GET", "/api/v1/namespaces/team/pods/web/log", None, "alice-token", {}),
    ("pods-star-is-not-a-wildcard-status", "GET", "/api/v1/namespaces/team/pods/web/status", None, "alice-token", {}),
    ("watch-spelled-t", "GET", "/api/v1/namespaces/team/configmaps?watch=t&timeoutSeconds=1", None, "alice-token", {}),
    ("impersonate-allowed", "GET", "/api/v1/namespaces/team/pods", None, "bob-token", {"Impersonate-User": "alice"}),
    ("impersonate-refused", "GET", "/api/v1/namespaces/team/pods", None, "bob-token", {"Impersonate-User": "carol"}),
    (
        "impersonate-group-refused",
        "GET",
        "/api/v1/namespaces/team/pods",
        None,
        "bob-token",
        {"Impersonate-User": "alice", "Impersonate-Group": "admins"},
    ),
    (
        "token-too-long",
        "POST",
        "/api/v1/namespaces/team/serviceaccounts/robot/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 2**32 + 1}},
        "alice-token",
        {},
    ),
    (
        "token-too-short",
        "POST",
        "/api/v1/namespaces/team/serviceaccounts/robot/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 60}},
        "alice-token",
        {},
    ),
]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("authz")
    tokens = root / "tokens.csv"
    tokens.write_text(USERS)
    plane = ControlPlane(root / "upstream", users=USERS).start()
    ours = Server(root / "data", args=["--token-auth-file", str(tokens)]).start()
    try:
        for path, body in SETUP:
            assert plane.request("POST", path, body)[0] == 201, path
            assert ours.request("POST", path, body)[0] == 201, path
        yield plane, ours
    finally:
        ours.stop()
        plane.stop()


def answer(code: int, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or body.get("kind") != "Status":
        return {"code": code}
    return {"code": code, "reason": body.get("reason"), "message": body.get("message")}


@pytest.mark.parametrize(
    ("method", "path", "body", "token", "headers"), [r[1:] for r in REQUESTS], ids=[r[0] for r in REQUESTS]
)
def test_kube_apiserver_and_kubesched_authorize_alike(servers, method, path, body, token, headers):
    plane, ours = servers
    theirs = answer(*plane.request(method, path, body, token=token, headers=headers))
    code, mine_body = ours.request(method, path, body, token=token, headers=headers, raw=True)
    import json

    mine = answer(code, json.loads(mine_body) if mine_body.strip().startswith(b"{") else None)
    assert mine == theirs
