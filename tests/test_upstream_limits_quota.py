"""kube-apiserver v1.37.2 judges LimitRange and ResourceQuota admission: the same LimitRange,
quota and pods are sent to it and to ``kubesched apiserver``, and each answer must agree: a pod's
defaulted requests, limits and ``kubernetes.io/limit-ranger`` annotation, each refusal's code,
reason and message, and a LimitRange refused by validation. (No kube-controller-manager runs
beside kube-apiserver here, so the test writes the quota's first status as its controller would;
kube-apiserver's admission then keeps ``used`` itself.)"""

from __future__ import annotations

import copy
import json
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest
from tests.live import Server
from tests.upstream import ADMIN_TOKEN, ControlPlane

NS = "judged"
LIMITS = {
    "apiVersion": "v1",
    "kind": "LimitRange",
    "metadata": {"name": "limits", "namespace": NS},
    "spec": {
        "limits": [
            {
                "type": "Container",
                "min": {"cpu": "100m"},
                "max": {"cpu": "2", "memory": "1Gi"},
                "default": {"cpu": "1", "memory": "512Mi"},
                "defaultRequest": {"memory": "256Mi"},
                "maxLimitRequestRatio": {"cpu": "4"},
            },
            {"type": "Pod", "max": {"cpu": "3"}},
        ]
    },
}
QUOTA = {
    "apiVersion": "v1",
    "kind": "ResourceQuota",
    "metadata": {"name": "compute", "namespace": NS},
    "spec": {"hard": {"requests.cpu": "2", "limits.memory": "2Gi", "pods": "5"}},
}


def pod(name: str, *containers: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"containers": [{"name": f"c{i}", "image": "pause", **c} for i, c in enumerate(containers)]},
    }


def res(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return {"resources": out}


# in order: the quota's requests.cpu of 2 fills with the admitted pods
PODS = [
    ("defaults", pod("defaults", {})),
    ("over-max-limit", pod("over-max-limit", res(limits={"cpu": "3"}))),
    ("under-min", pod("under-min", res({"cpu": "50m"}, {"cpu": "100m"}))),
    ("ratio", pod("ratio", res({"cpu": "100m"}, {"cpu": "1"}))),
    # one broken bound per constraint loop: upstream walks each loop over a Go map, in random order
    ("several", pod("several", res({"cpu": "50m"}, {"cpu": "200m", "memory": "2Gi"}))),
    ("pod-max", pod("pod-max", res({"cpu": "1"}, {"cpu": "2"}), res({"cpu": "1"}, {"cpu": "2"}))),
    ("fits", pod("fits", res({"cpu": "500m"}, {"cpu": "1"}))),
    ("over-quota", pod("over-quota", res({"cpu": "1"}, {"cpu": "1"}))),
    ("memory-quota", pod("memory-quota", res({"cpu": "100m"}, {"cpu": "100m", "memory": "1Gi"}))),
]


class Upstream:
    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.ctx = ssl.create_default_context()
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE  # kube-apiserver's self-signed serving certificate

    def request(
        self, method: str, path: str, body: dict[str, Any] | None = None, accept: str = "application/json"
    ) -> tuple[int, dict[str, Any]]:
        req = urllib.request.Request(
            self.plane.server + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json", "Accept": accept},
        )
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as err:
            return err.code, json.load(err)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    plane = ControlPlane(tmp_path_factory.mktemp("upstream-limits")).start()
    ours = Server(tmp_path_factory.mktemp("kubesched-limits") / "data").start()
    theirs = Upstream(plane)
    try:
        for server in (theirs, ours):
            ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
            assert server.request("POST", "/api/v1/namespaces", ns)[0] == 201
            assert server.request("POST", f"/api/v1/namespaces/{NS}/limitranges", LIMITS)[0] == 201
            code, made = server.request("POST", f"/api/v1/namespaces/{NS}/resourcequotas", QUOTA)
            assert code == 201
            if server is theirs:  # what the quota controller writes first
                made["status"] = {
                    "hard": QUOTA["spec"]["hard"],
                    "used": {"requests.cpu": "0", "limits.memory": "0", "pods": "0"},
                }
                path = f"/api/v1/namespaces/{NS}/resourcequotas/compute/status"
                assert server.request("PUT", path, made)[0] == 200
        yield theirs, ours
    finally:
        ours.stop()
        plane.stop()


def view(code: int, body: dict[str, Any]) -> dict[str, Any]:
    """What must agree: a refusal's Status, or an admitted pod's containers and annotation."""
    if code >= 400:
        return {"code": code, "reason": body.get("reason"), "message": body.get("message")}
    meta = body.get("metadata") or {}
    return {
        "code": code,
        "annotation": (meta.get("annotations") or {}).get("kubernetes.io/limit-ranger"),
        "resources": [c.get("resources") for c in body["spec"]["containers"]],
    }


def test_pods_are_defaulted_and_refused_alike(servers) -> None:
    theirs, ours = servers
    seen = []
    for name, body in PODS:
        path = f"/api/v1/namespaces/{NS}/pods"
        expected = view(*theirs.request("POST", path, copy.deepcopy(body)))
        got = view(*ours.request("POST", path, copy.deepcopy(body)))
        assert got == expected, name
        seen.append((name, expected["code"]))
    # the table covers admission, both refusals and the quota's
    codes = dict(seen)
    assert codes["defaults"] == codes["fits"] == 201 and codes["over-quota"] == 403


def test_the_quota_status_and_an_invalid_limit_range(servers) -> None:
    theirs, ours = servers
    bad = copy.deepcopy(LIMITS)
    bad["metadata"]["name"] = "bad"
    bad["spec"]["limits"] = [
        {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}, "maxLimitRequestRatio": {"memory": "500m"}}
    ]
    path = f"/api/v1/namespaces/{NS}/limitranges"
    expected = theirs.request("POST", path, copy.deepcopy(bad))
    got = ours.request("POST", path, copy.deepcopy(bad))
    assert got[0] == expected[0] == 422
    # kube-apiserver lists the errors of a LimitRange's resource maps in Go's random map order:
    # the same errors, in any order
    prefix = 'LimitRange "bad" is invalid: ['
    assert got[1]["message"].startswith(prefix) and expected[1]["message"].startswith(prefix)

    def errors(message: str) -> list[str]:
        return sorted(e if e.startswith("spec.") else f"spec.{e}" for e in message[len(prefix) : -1].split(", spec."))

    assert errors(got[1]["message"]) == errors(expected[1]["message"])
    key = lambda c: (c["field"], c["message"])  # noqa: E731
    assert sorted(got[1]["details"]["causes"], key=key) == sorted(expected[1]["details"]["causes"], key=key)
    quota = ours.request("GET", f"/api/v1/namespaces/{NS}/resourcequotas/compute")[1]
    upstream = theirs.request("GET", f"/api/v1/namespaces/{NS}/resourcequotas/compute")[1]
    assert quota["status"]["used"] == upstream["status"]["used"]
