"""LimitRange, ResourceQuota and Secrets where users meet them: a LimitRange's defaults change where
``simulate`` places pods, a quota refuses the pod past it (``simulate``'s rejected list and a 403
through HTTP), the quota controller keeps ``used`` current as pods come and go, Secrets are served
with stringData written into data, and kubectl and the official Python client read all three with
kube-apiserver's columns. (Admission's messages are judged against kube-apiserver in
``test_upstream_limits_quota.py``.)"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import make_node, make_pod
from live import Server, kubectl_binaries, temp_home, wait_for

KUBESCHED = [sys.executable, "-m", "kubesched"]
BINARIES = kubectl_binaries()
KUBECTL = BINARIES.get("1.37") or next(iter(BINARIES.values()), None)


def simulate(tmp: Path, objs: list[dict]) -> dict:
    src = tmp / "in.yaml"
    src.write_text(yaml.safe_dump_all([{"apiVersion": "v1", **o} for o in objs]))
    r = subprocess.run([*KUBESCHED, "simulate", str(src), "-o", "json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def team(*objs: dict) -> list[dict]:
    ns = {"kind": "Namespace", "metadata": {"name": "team"}}
    return [make_node("small", cpu="1", memory="4Gi"), make_node("big", cpu="8", memory="32Gi"), ns, *objs]


LIMITS = {
    "kind": "LimitRange",
    "metadata": {"name": "defaults", "namespace": "team"},
    "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "2"}, "default": {"cpu": "4"}}]},
}


def test_a_limit_range_default_changes_where_pods_go(tmp_path: Path) -> None:
    prefer_small = {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "preference": {
                    "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["small"]}]
                },
            }
        ]
    }
    pods = [make_pod(f"p{i}", ns="team", spec={"affinity": {"nodeAffinity": prefer_small}}) for i in range(3)]
    for p in pods:
        p["spec"]["containers"][0]["resources"] = {}  # nothing stated: the LimitRange's defaults apply
    nodes = team()
    for n in nodes[:2]:
        n["metadata"]["labels"] = {"kubernetes.io/hostname": n["metadata"]["name"]}
    without = {p["name"]: p["nodeName"] for p in simulate(tmp_path, [*nodes, *pods])["pods"]}
    assert without == {"p0": "small", "p1": "small", "p2": "small"}
    with_defaults = simulate(tmp_path, [*nodes, LIMITS, *pods])
    placed = {p["name"]: p["nodeName"] for p in with_defaults["pods"]}
    assert placed == {"p0": "big", "p1": "big", "p2": "big"}  # 2 CPUs each: small (1 CPU) fits none


def test_a_quota_refuses_the_pod_past_it(tmp_path: Path) -> None:
    quota = {"kind": "ResourceQuota", "metadata": {"name": "compute", "namespace": "team"}}
    quota["spec"] = {"hard": {"requests.cpu": "3", "pods": "10"}}
    pods = [make_pod(f"p{i}", cpu="1", ns="team") for i in range(4)]
    doc = simulate(tmp_path, team(quota, *pods))
    assert [p["name"] for p in doc["pods"]] == ["p0", "p1", "p2"]
    assert doc["rejected"] == [
        {
            "kind": "Pod",
            "namespace": "team",
            "name": "p3",
            "message": (
                "exceeded quota: compute, requested: requests.cpu=1, used: requests.cpu=3, limited: requests.cpu=3"
            ),
        }
    ]
    unstated = simulate(tmp_path, team(quota, make_pod("bare", ns="team")))
    assert unstated["rejected"][0]["message"] == "failed quota: compute: must specify requests.cpu for: c"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    s = Server(tmp_path_factory.mktemp("quota") / "data", command="up", nodes=2).start()
    try:
        yield s
    finally:
        s.stop()


def test_quota_status_follows_pods_and_http_refusals(server: Server) -> None:
    assert server.request("POST", "/api/v1/namespaces", {"metadata": {"name": "q"}})[0] == 201
    quota = {"metadata": {"name": "two-pods"}, "spec": {"hard": {"pods": "2", "requests.memory": "1Gi"}}}
    assert server.request("POST", "/api/v1/namespaces/q/resourcequotas", quota)[0] == 201
    for i in range(2):
        body = {"apiVersion": "v1", **make_pod(f"p{i}", cpu="100m", memory="256Mi", ns="q")}
        body["metadata"].pop("uid")
        assert server.request("POST", "/api/v1/namespaces/q/pods", body)[0] == 201
    body = {"apiVersion": "v1", **make_pod("p2", cpu="100m", memory="256Mi", ns="q")}
    body["metadata"].pop("uid")
    code, status = server.request("POST", "/api/v1/namespaces/q/pods", body)
    assert (code, status["reason"]) == (403, "Forbidden")
    assert status["message"] == (
        'pods "p2" is forbidden: exceeded quota: two-pods, requested: pods=1, used: pods=2, limited: pods=2'
    )

    def used() -> dict:
        return server.request("GET", "/api/v1/namespaces/q/resourcequotas/two-pods")[1]["status"]["used"]

    wait_for(lambda: used() == {"pods": "2", "requests.memory": "512Mi"})
    assert server.request("DELETE", "/api/v1/namespaces/q/pods/p0")[0] == 200
    wait_for(lambda: server.request("GET", "/api/v1/namespaces/q/pods/p0")[0] == 404, timeout=30)
    wait_for(lambda: used() == {"pods": "1", "requests.memory": "256Mi"})
    assert server.request("POST", "/api/v1/namespaces/q/pods", body)[0] == 201


def test_secrets_with_the_official_client(server: Server) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config(config_file=str(server.kubeconfig)))
    made = api.create_namespaced_secret(
        "default", client.V1Secret(metadata=client.V1ObjectMeta(name="db"), string_data={"password": "s3cret"})
    )
    assert made.type == "Opaque" and made.string_data is None
    assert base64.b64decode(made.data["password"]) == b"s3cret"
    assert [s.metadata.name for s in api.list_namespaced_secret("default").items] == ["db"]
    assert kubernetes.__version__


@pytest.mark.skipif(KUBECTL is None, reason="no kubectl (scripts/build_upstream.sh builds v1.37.2)")
def test_kubectl_creates_and_lists_them_with_upstreams_columns(server: Server) -> None:
    home = temp_home()
    env = {"HOME": home, "KUBECONFIG": str(server.kubeconfig), "PATH": "/usr/bin:/bin"}

    def kubectl(*args: str) -> str:
        done = subprocess.run([str(KUBECTL), *args], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    kubectl("create", "namespace", "k")
    kubectl("create", "secret", "generic", "token", "-n", "k", "--from-literal=a=1", "--from-literal=b=2")
    kubectl("create", "quota", "small", "-n", "k", "--hard=pods=3,limits.cpu=2")
    lr = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "lr", "namespace": "k"},
        "spec": LIMITS["spec"],
    }
    done = subprocess.run(
        [str(KUBECTL), "apply", "-f", "-"], input=json.dumps(lr), capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    secrets = kubectl("get", "secrets", "-n", "k").splitlines()
    assert secrets[0].split() == ["NAME", "TYPE", "DATA", "AGE"] and secrets[1].split()[:3] == ["token", "Opaque", "2"]
    quota = kubectl("get", "quota", "-n", "k").splitlines()
    assert quota[0].split() == ["NAME", "REQUEST", "LIMIT", "AGE"]
    assert "pods: 0/3" in quota[1] and "limits.cpu: 0/2" in quota[1]
    limits = json.loads(kubectl("get", "limits", "lr", "-n", "k", "-o", "json"))
    item = limits["spec"]["limits"][0]
    assert item["default"] == {"cpu": "4"} and item["defaultRequest"] == {"cpu": "2"}
