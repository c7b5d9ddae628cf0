"""What a tenant's requests are answered, judged against kube-apiserver v1.37.2 with the same
requests: TokenReview audiences (a token issued for one service is not valid for another, nor for
the API server, and the API server's own is not valid for another service)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.live import Server
from tests.upstream import ADMIN_TOKEN, ControlPlane

API = "https://kubernetes.default.svc.cluster.local"  # both servers' --api-audiences (their issuer)


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory):
    plane = ControlPlane(tmp_path_factory.mktemp("upstream-tenant")).start()
    server = Server(tmp_path_factory.mktemp("kubesched-tenant") / "data").start()
    try:
        for side in (plane, server):
            account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reviewed"}}
            assert side.request("POST", "/api/v1/namespaces/default/serviceaccounts", account)[0] == 201
        time.sleep(0.5)
        yield plane, server
    finally:
        server.stop()
        plane.stop()


def _review(side: Any, token: str, audiences: list[str]) -> dict[str, Any]:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
    body["spec"]["audiences"] = audiences
    code, out = side.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", body)
    status = out["status"]
    return {
        "code": code,
        "authenticated": status.get("authenticated", False),
        "audiences": status.get("audiences"),
        "error": status.get("error"),
        "service account": (status.get("user") or {}).get("username", "").startswith("system:serviceaccount:"),
    }


@pytest.mark.parametrize("issued_for", [[], ["vault"]], ids=["the API", "vault"])
@pytest.mark.parametrize("reviewed_for", [[], ["vault"], [API], ["vault", API]], ids=["none", "vault", "API", "both"])
def test_a_token_review_checks_the_audiences_asked(sides, issued_for: list[str], reviewed_for: list[str]) -> None:
    answers = []
    for side in sides:
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": issued_for}}
        code, issued = side.request("POST", "/api/v1/namespaces/default/serviceaccounts/reviewed/token", request)
        assert code == 201
        answers.append(_review(side, issued["status"]["token"], reviewed_for))
    theirs, ours = answers
    assert ours == theirs
    assert theirs["authenticated"] is bool(set(issued_for or [API]) & set(reviewed_for or [API]))


@pytest.mark.parametrize("reviewed_for", [[], ["vault"], [API]], ids=["none", "vault", "API"])
def test_a_static_token_is_valid_only_for_the_api(sides, reviewed_for: list[str]) -> None:
    plane, server = sides
    theirs = _review(plane, ADMIN_TOKEN, reviewed_for)
    ours = _review(server, server._config()[1], reviewed_for)
    assert ours == theirs
    assert theirs["authenticated"] is (reviewed_for != ["vault"])
