"""kube-apiserver v1.37.2 is the judge of the embedded API server's workload validation: every
malformed Deployment, ReplicaSet, StatefulSet, DaemonSet and Job of ``test_workload_validation``'s
table is sent to both, and the answers must agree in status code, reason, message and causes."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest
from tests.live import Server
from tests.test_workload_validation import CASES, PATHS, manifest
from tests.upstream import ADMIN_TOKEN, ControlPlane


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    plane = ControlPlane(tmp_path_factory.mktemp("upstream-validation")).start()
    ours = Server(tmp_path_factory.mktemp("kubesched-validation") / "data").start()
    try:
        yield plane, ours
    finally:
        ours.stop()
        plane.stop()


def upstream_post(plane: ControlPlane, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # kube-apiserver's self-signed serving certificate
    req = urllib.request.Request(
        plane.server + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def answer(code: int, body: dict[str, Any]) -> dict[str, Any]:
    details = body.get("details") or {}
    return {
        "code": code,
        "reason": body.get("reason"),
        "message": body.get("message"),
        "causes": details.get("causes"),
    }


@pytest.mark.parametrize(("kind", "spec", "causes"), CASES, ids=[f"{c[0]}-{c[2][0][0]}" for c in CASES])
def test_kube_apiserver_and_kubesched_refuse_alike(servers, kind, spec, causes):
    plane, ours = servers
    name = f"judged-{kind.lower()}"
    obj = manifest(kind, name, **spec)
    theirs = answer(*upstream_post(plane, PATHS[kind], obj))
    mine = answer(*ours.request("POST", PATHS[kind], obj))
    assert mine == theirs
