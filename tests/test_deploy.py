"""deploy/ as a user applies it to a cluster (here ``kubesched up``), with the scheduler replicas
run as the Deployment would run them: ``kubesched scheduler`` with no kubeconfig, in-cluster,
holding only the service account's token, under only the RBAC the manifests grant. Pods naming
the scheduler are bound; the leader killed with SIGKILL, the other replica takes over; no pod is
bound twice."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.live import KUBESCHED, Server, free_port, kubectl_binaries, temp_home, wait_for
from tests.test_dynamicresources import dra_objects, gpu_pod

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
BINARIES = kubectl_binaries()
NEWEST = max(BINARIES, key=lambda v: int(v.split(".")[1]) if "." in v else 0) if BINARIES else None
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kubesched/leases/kubesched-scheduler"

pytestmark = pytest.mark.skipif(
    NEWEST is None, reason="no kubectl binary on this machine (google-cloud-sdk's kubectl.1.XX)"
)


def pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "kubesched-scheduler",
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "10m"}}}],
        },
    }


class Replica:
    """One scheduler replica as its pod would run it: in-cluster environment and files."""

    def __init__(self, root: Path, sa_dir: Path, config: Path, port: int, n: int, secure_port: int = 0) -> None:
        env = {
            **os.environ,
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(port),
            "KUBESCHED_SERVICEACCOUNT_DIR": str(sa_dir),
        }
        env.pop("KUBECONFIG", None)
        self.log = root / f"replica-{n}.log"
        self.proc = subprocess.Popen(
            [
                *KUBESCHED,
                "scheduler",
                "--config",
                str(config),
                "--secure-port",
                str(secure_port),
                "--leader-elect-lease-duration",
                "2s",
                "--leader-elect-renew-deadline",
                "1.5s",
                "--leader-elect-retry-period",
                "0.5s",
                "-v",
                "2",
            ],
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            env=env,
        )

    def identity(self) -> str:
        for line in self.log.read_text(errors="replace").splitlines():
            if "leader election identity" in line:
                return line.rsplit(" ", 1)[-1]
        return ""


def _scrape(port: int, token: str) -> tuple[int, str]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the replica's self-signed serving certificate
    req = urllib.request.Request(f"https://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def scrape_as_prometheus(kubectl: Any, port: int) -> None:
    """deploy/40-monitoring.yaml's binding lets monitoring/prometheus scrape a replica's /metrics:
    the replica reviews the token (TokenReview) and the path (SubjectAccessReview) with the API
    server, under the RBAC deploy/ grants it, as kube-scheduler does."""
    kubectl("create", "namespace", "monitoring")
    kubectl("create", "serviceaccount", "prometheus", "-n", "monitoring")
    kubectl("create", "serviceaccount", "intruder", "-n", "monitoring")
    prometheus = kubectl("create", "token", "prometheus", "-n", "monitoring").strip()
    intruder = kubectl("create", "token", "intruder", "-n", "monitoring").strip()
    wait_for(lambda: _scrape(port, "x")[0] == 401, 30)
    code, text = _scrape(port, prometheus)
    assert code == 200 and "scheduler_schedule_attempts_total" in text, text[:300]
    code, text = _scrape(port, intruder)
    assert code == 403
    assert json.loads(text)["message"] == (
        'forbidden: User "system:serviceaccount:monitoring:intruder" cannot get path "/metrics"'
    )
    assert json.loads(_scrape(port, "not-a-token")[1])["reason"] == "Unauthorized"


def allocate_a_claim(server: Server) -> None:
    """A pod with a claim from a template: the replica allocates a device and writes the claim at
    PreBind under system:kube-scheduler alone (v1.37's role grants update and patch on claims)."""
    resource = "/apis/resource.k8s.io/v1"
    paths = {
        "DeviceClass": f"{resource}/deviceclasses",
        "ResourceClaimTemplate": f"{resource}/namespaces/default/resourceclaimtemplates",
        "ResourceSlice": f"{resource}/resourceslices",
    }
    for obj in dra_objects({"node-0": ["80Gi"]}):
        if obj["kind"] in paths:
            assert server.request("POST", paths[obj["kind"]], obj)[0] == 201, obj["kind"]
    claimant = gpu_pod("gpu-user")
    claimant["spec"]["schedulerName"] = "kubesched-scheduler"
    del claimant["metadata"]["uid"]
    assert server.request("POST", "/api/v1/namespaces/default/pods", claimant)[0] == 201

    def allocated() -> dict[str, Any] | None:
        _, got = server.request("GET", "/api/v1/namespaces/default/pods/gpu-user")
        statuses = (got.get("status") or {}).get("resourceClaimStatuses") or []
        if not got["spec"].get("nodeName") or not statuses:
            return None
        _, claim = server.request(
            "GET", f"{resource}/namespaces/default/resourceclaims/{statuses[0]['resourceClaimName']}"
        )
        return (claim.get("status") or {}).get("allocation")

    allocation = wait_for(allocated, 60)
    assert allocation["devices"]["results"][0]["pool"] == "node-0"


def test_deploy_manifests_run_the_scheduler_with_only_their_rbac(tmp_path):
    server = Server(tmp_path / "data", command="up", nodes=3).start()
    home = temp_home()
    env = {**os.environ, "HOME": home, "KUBECONFIG": str(server.kubeconfig)}
    assert NEWEST is not None

    def kubectl(*args: str) -> str:
        out = subprocess.run([BINARIES[NEWEST], *args], capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 0, (args, out.stderr)
        return out.stdout

    replicas: list[Replica] = []
    try:
        out = kubectl("apply", "-f", str(DEPLOY))
        assert "deployment.apps/kubesched-scheduler created" in out
        # the service account's projected files, as the kubelet mounts them
        sa = tmp_path / "serviceaccount"
        sa.mkdir()
        (sa / "token").write_text(kubectl("create", "token", "kubesched-scheduler", "-n", "kubesched"))
        (sa / "ca.crt").write_bytes((server.data_dir / "ca.crt").read_bytes())
        (sa / "namespace").write_text("kubesched")
        config_map = next(d for d in yaml.safe_load_all((DEPLOY / "20-config.yaml").read_text()) if d)
        config = tmp_path / "config.yaml"
        config.write_text(config_map["data"]["config.yaml"])
        metrics_port = free_port()
        replicas = [Replica(tmp_path, sa, config, server.port, i, metrics_port if i == 0 else 0) for i in range(2)]

        for i in range(5):
            assert server.request("POST", "/api/v1/namespaces/default/pods", pod(f"a-{i}"))[0] == 201

        def bound(prefix: str, n: int) -> bool:
            _, pods = server.request("GET", "/api/v1/namespaces/default/pods")
            mine = [p for p in pods["items"] if p["metadata"]["name"].startswith(prefix)]
            return len(mine) == n and all(p["spec"].get("nodeName") for p in mine)

        wait_for(lambda: bound("a-", 5), 60)
        allocate_a_claim(server)
        scrape_as_prometheus(kubectl, metrics_port)
        holder = wait_for(lambda: (server.request("GET", LEASE)[1].get("spec") or {}).get("holderIdentity"), 30)
        leader = next(r for r in replicas if r.identity() == holder)
        leader.proc.send_signal(signal.SIGKILL)
        leader.proc.wait(10)
        for i in range(5):
            assert server.request("POST", "/api/v1/namespaces/default/pods", pod(f"b-{i}"))[0] == 201
        wait_for(lambda: bound("b-", 5), 60)
        new_holder = (server.request("GET", LEASE)[1].get("spec") or {}).get("holderIdentity")
        assert new_holder and new_holder != holder

        # every pod bound once: one Scheduled event each, all from this scheduler (its broadcaster
        # posts them after the bindings: waited for, not raced)
        def scheduled_events() -> list[dict]:
            _, events = server.request("GET", "/apis/events.k8s.io/v1/namespaces/default/events")
            return [
                e for e in events["items"] if e["reason"] == "Scheduled" and e["regarding"]["name"][:2] in ("a-", "b-")
            ]

        wait_for(lambda: len(scheduled_events()) >= 10, 30)
        scheduled = scheduled_events()
        assert sorted(e["regarding"]["name"] for e in scheduled) == sorted(
            [f"a-{i}" for i in range(5)] + [f"b-{i}" for i in range(5)]
        )
        assert {e["reportingController"] for e in scheduled} == {"kubesched-scheduler"}
        # nothing was refused: the manifests' RBAC is all the scheduler needed
        for r in replicas:
            log = r.log.read_text(errors="replace")
            assert "forbidden" not in log.lower(), log[-2000:]
    finally:
        for r in replicas:
            if r.proc.poll() is None:
                r.proc.terminate()
                r.proc.wait(10)
        server.stop()


def test_without_the_kube_scheduler_binding_the_informers_are_refused(tmp_path):
    """Without the binding to system:kube-scheduler, listing nodes is refused with the 403 a real
    API server gives, and the replica's log says so."""
    server = Server(tmp_path / "data", command="up", nodes=1).start()
    home = temp_home()
    env = {**os.environ, "HOME": home, "KUBECONFIG": str(server.kubeconfig)}
    assert NEWEST is not None
    kubectl = BINARIES[NEWEST]
    replica = None
    try:
        subprocess.run([kubectl, "apply", "-f", str(DEPLOY)], check=True, capture_output=True, env=env)
        subprocess.run(
            [kubectl, "delete", "clusterrolebinding", "kubesched-scheduler:kube-scheduler"],
            check=True,
            capture_output=True,
            env=env,
        )
        sa = tmp_path / "serviceaccount"
        sa.mkdir()
        token = subprocess.run(
            [kubectl, "create", "token", "kubesched-scheduler", "-n", "kubesched"],
            capture_output=True,
            text=True,
            env=env,
        ).stdout
        (sa / "token").write_text(token)
        (sa / "ca.crt").write_bytes((server.data_dir / "ca.crt").read_bytes())
        config = tmp_path / "config.yaml"
        config.write_text(
            next(d for d in yaml.safe_load_all((DEPLOY / "20-config.yaml").read_text()) if d)["data"]["config.yaml"]
        )
        replica = Replica(tmp_path, sa, config, server.port, 0)
        # without system:kube-scheduler the informers cannot list nodes: the refusal is logged
        # (and, never synced, the replica would exit after its sync timeout)
        want = (
            'nodes is forbidden: User "system:serviceaccount:kubesched:kubesched-scheduler" '
            'cannot list resource "nodes" in API group "" at the cluster scope'
        )
        wait_for(lambda: want in replica.log.read_text(errors="replace"), 30)
        assert replica.proc.poll() is None or replica.proc.returncode != 0
    finally:
        if replica is not None and replica.proc.poll() is None:
            replica.proc.kill()
        server.stop()
