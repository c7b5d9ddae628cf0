"""``kubesched up`` as a small real cluster, driven by a real kubectl as a new user would drive it:
create and roll out a Deployment (scale, set image, history, undo, restart), a Job waited for
with ``kubectl wait``, a DaemonSet and a StatefulSet with claims through ``apply -f``, a gated
pod, events sorted by time, cordon and drain, logs, whoami, top, and ``delete -f`` of what
``apply -f`` made; the everyday subset again with every kubectl from 1.27 to 1.33."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from tests.live import Server, kubectl_binaries, temp_home

ROOT = Path(__file__).resolve().parent.parent
BINARIES = kubectl_binaries()
NEWEST = max(BINARIES, key=lambda v: int(v.split(".")[1]) if "." in v else 0) if BINARIES else None

pytestmark = pytest.mark.skipif(
    NEWEST is None, reason="no kubectl binary on this machine (google-cloud-sdk's kubectl.1.XX)"
)


def run(
    server: Server, *args: str, home: str, version: str | None = None, ok: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": home, "KUBECONFIG": str(server.kubeconfig)}
    binary = BINARIES[version or NEWEST or ""]
    out = subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=120)
    if ok:
        assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out


def kubectl(server: Server, *args: str, home: str, version: str | None = None) -> str:
    return run(server, *args, home=home, version=version).stdout


def get(server: Server, *args: str, home: str) -> Any:
    return json.loads(kubectl(server, "get", *args, "-o", "json", home=home))


def rows(table: str) -> dict[str, list[str]]:
    """A kubectl table by its first column."""
    lines = table.strip().splitlines()
    return {line.split()[0]: line.split() for line in lines[1:]}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    server = Server(tmp_path_factory.mktemp("workloads") / "data", command="up", nodes=3).start()
    try:
        yield server
    finally:
        server.stop()


def test_deployment_rollout_scale_undo_restart(cluster):
    home = temp_home()
    assert "deployment.apps/web created" in kubectl(
        cluster, "create", "deployment", "web", "--image=nginx", "--replicas=3", home=home
    )
    assert 'deployment "web" successfully rolled out' in kubectl(
        cluster, "rollout", "status", "deployment/web", "--timeout=60s", home=home
    )
    table = rows(kubectl(cluster, "get", "deployment", "web", home=home))
    assert table["web"][1:4] == ["3/3", "3", "3"]  # READY UP-TO-DATE AVAILABLE
    rs = get(cluster, "rs", "-l", "app=web", home=home)["items"]
    assert len(rs) == 1 and rs[0]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    hash_ = rs[0]["metadata"]["labels"]["pod-template-hash"]
    assert rs[0]["metadata"]["name"] == f"web-{hash_}"
    pods = get(cluster, "pods", "-l", "app=web", home=home)["items"]
    assert len(pods) == 3 and all(p["status"]["phase"] == "Running" for p in pods)
    assert all(p["metadata"]["ownerReferences"][0]["name"] == f"web-{hash_}" for p in pods)

    kubectl(cluster, "scale", "deployment", "web", "--replicas=5", home=home)
    kubectl(cluster, "rollout", "status", "deployment/web", "--timeout=60s", home=home)
    assert get(cluster, "deployment", "web", home=home)["status"]["availableReplicas"] == 5

    kubectl(cluster, "set", "image", "deployment/web", "nginx=nginx:1.27", home=home)
    kubectl(cluster, "rollout", "status", "deployment/web", "--timeout=60s", home=home)
    pods = get(cluster, "pods", "-l", "app=web", home=home)["items"]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    assert len(live) == 5 and {p["spec"]["containers"][0]["image"] for p in live} == {"nginx:1.27"}
    history = kubectl(cluster, "rollout", "history", "deployment/web", home=home)
    assert [line.split()[0] for line in history.strip().splitlines()[2:]] == ["1", "2"]
    events = [
        e["message"]
        for e in get(cluster, "events", "--field-selector", "involvedObject.name=web", home=home)["items"]
        if e["reason"] == "ScalingReplicaSet"
    ]
    assert f"Scaled up replica set web-{hash_} from 0 to 3" in events
    assert any(m.startswith(f"Scaled down replica set web-{hash_} from 5 to ") for m in events)

    kubectl(cluster, "rollout", "undo", "deployment/web", home=home)
    kubectl(cluster, "rollout", "status", "deployment/web", "--timeout=60s", home=home)
    d = get(cluster, "deployment", "web", home=home)
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"
    # the undo reuses the first ReplicaSet, now at revision 3
    first = get(cluster, "rs", f"web-{hash_}", home=home)
    assert (
        first["spec"]["replicas"] == 5 and first["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    )

    kubectl(cluster, "rollout", "restart", "deployment/web", home=home)
    kubectl(cluster, "rollout", "status", "deployment/web", "--timeout=60s", home=home)
    assert len(get(cluster, "rs", "-l", "app=web", home=home)["items"]) == 3

    kubectl(cluster, "delete", "deployment", "web", home=home)  # background cascading
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (
            not get(cluster, "pods", "-l", "app=web", home=home)["items"]
            and not get(cluster, "rs", "-l", "app=web", home=home)["items"]
        ):
            break
        time.sleep(0.3)
    else:
        pytest.fail("the Deployment's ReplicaSets and pods outlived it")


def test_job_completes_and_kubectl_wait_returns(cluster):
    home = temp_home()
    kubectl(cluster, "create", "job", "pi", "--image=perl", "--", "perl", "-e", "1", home=home)
    assert "condition met" in kubectl(cluster, "wait", "--for=condition=complete", "job/pi", "--timeout=60s", home=home)
    table = rows(kubectl(cluster, "get", "job", "pi", home=home))
    assert table["pi"][1:3] == ["Complete", "1/1"]
    job = get(cluster, "job", "pi", home=home)
    assert [c["type"] for c in job["status"]["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert job["status"]["conditions"][1]["reason"] == "CompletionsReached"
    pods = get(cluster, "pods", "-l", "job-name=pi", home=home)["items"]
    assert [p["status"]["phase"] for p in pods] == ["Succeeded"]
    assert "batch.kubernetes.io/job-tracking" not in (pods[0]["metadata"].get("finalizers") or [])
    assert (
        rows(kubectl(cluster, "get", "pods", "-l", "job-name=pi", home=home))[pods[0]["metadata"]["name"]][2]
        == "Completed"
    )
    # a Job whose pods fail is Failed once backoffLimit is passed
    failing = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "flaky"},
        "spec": {
            "backoffLimit": 1,
            "template": {
                "metadata": {"annotations": {"kubesched.io/exit-code": "3"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    path = Path(home) / "flaky.json"
    path.write_text(json.dumps(failing))
    kubectl(cluster, "apply", "-f", str(path), home=home)
    kubectl(cluster, "wait", "--for=condition=failed", "job/flaky", "--timeout=60s", home=home)
    status = get(cluster, "job", "flaky", home=home)["status"]
    assert status["failed"] == 2
    assert status["conditions"][-1]["reason"] == "BackoffLimitExceeded"
    assert status["conditions"][-1]["message"] == "Job has reached the specified backoff limit"


def test_daemonset_statefulset_gated_pod_and_events(cluster):
    home = temp_home()
    kubectl(cluster, "apply", "-f", str(ROOT / "examples" / "workloads"), home=home)
    assert 'daemon set "agent" successfully rolled out' in kubectl(
        cluster, "rollout", "status", "ds/agent", "--timeout=60s", home=home
    )
    agents = get(cluster, "pods", "-l", "app=agent", home=home)["items"]
    assert sorted(p["spec"]["nodeName"] for p in agents) == ["node-0", "node-1", "node-2"]
    for p in agents:  # placed by the scheduler through node affinity, not by nodeName
        term = p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["nodeSelectorTerms"] == [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [p["spec"]["nodeName"]]}]}
        ]
        assert {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"} in p["spec"][
            "tolerations"
        ]
    kubectl(cluster, "rollout", "status", "sts/db", "--timeout=90s", home=home)
    pods = {p["metadata"]["name"]: p for p in get(cluster, "pods", "-l", "app=db", home=home)["items"]}
    assert sorted(pods) == ["db-0", "db-1", "db-2"]
    # OrderedReady: each ordinal was created after the previous one was Running and Ready
    created = [pods[f"db-{i}"]["metadata"]["creationTimestamp"] for i in range(3)]
    assert created == sorted(created)
    claims = {c["metadata"]["name"]: c for c in get(cluster, "pvc", "-l", "app=db", home=home)["items"]}
    assert sorted(claims) == ["data-db-0", "data-db-1", "data-db-2"]
    assert all(c["status"]["phase"] == "Bound" for c in claims.values())
    for i in range(3):
        volume = next(v for v in pods[f"db-{i}"]["spec"]["volumes"] if v["name"] == "data")
        assert volume["persistentVolumeClaim"]["claimName"] == f"data-db-{i}"
    assert rows(kubectl(cluster, "get", "sts", "db", home=home))["db"][1] == "3/3"
    assert rows(kubectl(cluster, "get", "pod", "gated", home=home))["gated"][2] == "SchedulingGated"

    out = kubectl(cluster, "get", "events", "--sort-by=.lastTimestamp", home=home)
    lines = out.strip().splitlines()
    assert lines[0].split()[:4] == ["LAST", "SEEN", "TYPE", "REASON"] and len(lines) > 5
    assert any("create Claim data-db-1 Pod db-1 in StatefulSet db success" in line for line in lines)

    assert "deleted" in kubectl(cluster, "delete", "pod", "gated", home=home)
    started = time.monotonic()
    kubectl(cluster, "delete", "pod", "db-2", home=home)  # a bound pod: graceful, confirmed promptly
    assert time.monotonic() - started < 3  # the hollow kubelet confirms within --pod-termination-delay (0.5 s)
    kubectl(cluster, "rollout", "status", "sts/db", "--timeout=60s", home=home)


def test_cordon_drain_logs_whoami_top_version(cluster):
    home = temp_home()
    kubectl(cluster, "create", "deployment", "drainme", "--image=nginx", "--replicas=3", home=home)
    kubectl(cluster, "rollout", "status", "deployment/drainme", "--timeout=60s", home=home)
    assert "node/node-0 cordoned" in kubectl(cluster, "cordon", "node-0", home=home)
    assert rows(kubectl(cluster, "get", "nodes", home=home))["node-0"][1] == "Ready,SchedulingDisabled"
    out = run(cluster, "drain", "node-1", "--ignore-daemonsets", "--timeout=60s", home=home, ok=False)
    assert out.returncode == 0, out.stderr
    assert "node/node-1 drained" in out.stdout
    pods = get(cluster, "pods", "-l", "app=drainme", home=home)["items"]
    assert all(p["spec"].get("nodeName") not in ("node-1",) for p in pods if not p["metadata"].get("deletionTimestamp"))
    kubectl(cluster, "uncordon", "node-0", home=home)
    kubectl(cluster, "uncordon", "node-1", home=home)
    name = pods[0]["metadata"]["name"]
    logs = run(cluster, "logs", name, home=home, ok=False)
    assert logs.returncode == 1
    assert logs.stderr.strip() == (
        f'Error from server (BadRequest): container "nginx" in pod "{name}" is a hollow container of kubesched: '
        "it runs no process and has no logs"
    )
    assert "kubesched-admin" in kubectl(cluster, "auth", "whoami", home=home)
    top = rows(kubectl(cluster, "top", "node", home=home))
    assert set(top) >= {"node-0", "node-1", "node-2"}
    agent = rows(kubectl(cluster, "top", "pod", "-l", "app=agent", home=home))
    assert all(r[1:3] == ["100m", "64Mi"] for r in agent.values()) and len(agent) == 3
    version = json.loads(kubectl(cluster, "version", "-o", "json", home=home))["serverVersion"]
    assert (version["major"], version["minor"]) == ("1", "37")
    assert version["gitVersion"].startswith("v1.37.") and "+kubesched-" in version["gitVersion"]


def test_delete_f_of_what_apply_f_created_exits_0(cluster):
    home = temp_home()
    basic = str(ROOT / "examples" / "basic")
    kubectl(cluster, "apply", "-f", basic, home=home)
    out = run(cluster, "delete", "-f", basic, home=home, ok=False)
    assert out.returncode == 0, out.stderr
    assert 'namespace "shop" deleted' in out.stdout
    namespaces = {n["metadata"]["name"] for n in get(cluster, "namespaces", home=home)["items"]}
    assert "shop" not in namespaces and "ml" not in namespaces
    # creating in a namespace being deleted is refused, as NamespaceLifecycle refuses it
    kubectl(cluster, "create", "namespace", "doomed", home=home)
    kubectl(cluster, "create", "deployment", "d", "--image=nginx", "-n", "doomed", home=home)
    kubectl(cluster, "delete", "namespace", "doomed", "--wait=false", home=home)
    phase = get(cluster, "namespace", "doomed", home=home)["status"]["phase"]
    assert phase == "Terminating"
    refused = run(cluster, "create", "configmap", "late", "-n", "doomed", home=home, ok=False)
    assert refused.returncode == 1
    assert (
        'configmaps "late" is forbidden: unable to create new content in namespace doomed '
        "because it is being terminated" in refused.stderr
    )


@pytest.mark.parametrize("version", sorted(BINARIES, key=lambda v: int(v.split(".")[1]) if "." in v else 0))
def test_everyday_commands_across_kubectl_versions(cluster, version):
    home = temp_home()
    name = f"v{version.replace('.', '-')}"
    kubectl(cluster, "create", "deployment", name, "--image=nginx", "--replicas=2", home=home, version=version)
    kubectl(cluster, "rollout", "status", f"deployment/{name}", "--timeout=60s", home=home, version=version)
    kubectl(cluster, "scale", "deployment", name, "--replicas=1", home=home, version=version)
    kubectl(cluster, "rollout", "status", f"deployment/{name}", "--timeout=60s", home=home, version=version)
    assert rows(kubectl(cluster, "get", "deployment", name, home=home, version=version))[name][1] == "1/1"
    kubectl(cluster, "create", "job", f"{name}-job", "--image=busybox", home=home, version=version)
    kubectl(cluster, "wait", "--for=condition=complete", f"job/{name}-job", "--timeout=60s", home=home, version=version)
    kubectl(cluster, "delete", "deployment", name, home=home, version=version)
    kubectl(cluster, "delete", "job", f"{name}-job", home=home, version=version)


def test_node_stop_makes_it_notready_and_its_pods_move(tmp_path):
    """``kubesched node stop``: the node goes NotReady once its Lease is older than
    --node-monitor-grace-period, is tainted unreachable, and pods whose toleration runs out are
    replaced on the other node; ``node start`` brings it back."""
    from tests.live import KUBESCHED

    server = Server(tmp_path / "data", command="up", nodes=2, args=["--node-monitor-grace-period", "2"]).start()
    home = temp_home()
    try:
        manifest = Path(home) / "web.json"
        web = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 4,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [{"name": "c", "image": "nginx"}],
                        "tolerations": [
                            {
                                "key": "node.kubernetes.io/unreachable",
                                "operator": "Exists",
                                "effect": "NoExecute",
                                "tolerationSeconds": 1,
                            }
                        ],
                    },
                },
            },
        }
        manifest.write_text(json.dumps(web))
        kubectl(server, "apply", "-f", str(manifest), home=home)
        kubectl(server, "rollout", "status", "deployment/web", "--timeout=60s", home=home)
        env = {**os.environ, "KUBECONFIG": str(server.kubeconfig)}
        out = subprocess.run([*KUBESCHED, "node", "stop", "node-0"], capture_output=True, text=True, env=env)
        assert (out.returncode, out.stdout) == (0, "node/node-0 stopped\n"), out.stderr
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            nodes = rows(kubectl(server, "get", "nodes", home=home))
            live = [
                p
                for p in get(server, "pods", "-l", "app=web", home=home)["items"]
                if not p["metadata"].get("deletionTimestamp")
            ]
            if (
                nodes["node-0"][1] == "NotReady"
                and len(live) == 4
                and {p["spec"].get("nodeName") for p in live} == {"node-1"}
                and all(p["status"].get("phase") == "Running" for p in live)
            ):
                break
            time.sleep(0.5)
        else:
            pytest.fail(
                f"node-0 did not fail over: {nodes}, {[(p['metadata']['name'], p['spec'].get('nodeName')) for p in live]}"  # noqa: E501
            )
        taints = get(server, "node", "node-0", home=home)["spec"]["taints"]
        assert {(t["key"], t["effect"]) for t in taints} == {
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoSchedule"),
        }
        out = subprocess.run([*KUBESCHED, "node", "start", "node-0"], capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if rows(kubectl(server, "get", "nodes", home=home))["node-0"][1] == "Ready":
                break
            time.sleep(0.5)
        else:
            pytest.fail("node-0 did not come back Ready")
        missing = subprocess.run([*KUBESCHED, "node", "stop", "nope"], capture_output=True, text=True, env=env)
        assert missing.returncode == 2 and missing.stderr.startswith("kubesched: error:") and '"nope"' in missing.stderr
    finally:
        server.stop()


SSA = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: owned}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: owned}}
  template:
    metadata: {labels: {app: owned}}
    spec:
      containers: [{name: c, image: nginx}]
"""


def test_server_side_apply_conflicts_and_force(cluster):
    """Field ownership: a second manager applying a different value of a field the first owns
    gets 409 with upstream's message; --force-conflicts takes the field over; an update
    (kubectl patch) owns what it changed, named with its version in the conflict."""
    home = temp_home()
    path = Path(home) / "owned.yaml"
    path.write_text(SSA.replace("REPLICAS", "2"))
    assert "deployment.apps/owned serverside-applied" in kubectl(
        cluster, "apply", "--server-side", "-f", str(path), home=home
    )
    path.write_text(SSA.replace("REPLICAS", "3"))
    refused = run(cluster, "apply", "--server-side", "--field-manager=ci", "-f", str(path), home=home, ok=False)
    assert refused.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in refused.stderr
    assert get(cluster, "deployment", "owned", home=home)["spec"]["replicas"] == 2
    kubectl(cluster, "apply", "--server-side", "--field-manager=ci", "--force-conflicts", "-f", str(path), home=home)
    d = get(cluster, "deployment", "owned", "--show-managed-fields", home=home)
    assert d["spec"]["replicas"] == 3
    fields = {m["manager"]: m["fieldsV1"] for m in d["metadata"]["managedFields"] if m["operation"] == "Apply"}
    assert "f:replicas" in fields["ci"]["f:spec"] and "f:replicas" not in fields["kubectl"]["f:spec"]
    assert "f:template" in fields["kubectl"]["f:spec"] and "f:template" in fields["ci"]["f:spec"]  # shared

    kubectl(cluster, "patch", "deployment", "owned", "-p", '{"spec":{"minReadySeconds":5}}', home=home)
    path.write_text(SSA.replace("REPLICAS", "3").replace("  selector:", "  minReadySeconds: 7\n  selector:"))
    refused = run(cluster, "apply", "--server-side", "--field-manager=ci", "-f", str(path), home=home, ok=False)
    assert 'Apply failed with 1 conflict: conflict with "kubectl-patch" using apps/v1: .spec.minReadySeconds' in (
        refused.stderr
    )
    kubectl(cluster, "delete", "deployment", "owned", home=home)


@pytest.mark.parametrize("version", sorted(BINARIES, key=lambda v: int(v.split(".")[1]) if "." in v else 0)[::3])
def test_explain_reads_the_served_openapi(cluster, version):
    home = temp_home()
    out = kubectl(cluster, "explain", "deployment.spec.replicas", home=home, version=version)
    assert "KIND:" in out and "Deployment" in out and "<integer>" in out
    assert "Number of desired pods." in out
    out = kubectl(cluster, "explain", "pods.spec.containers.resources", home=home, version=version)
    assert "requests" in out and "limits" in out
    out = kubectl(cluster, "explain", "jobs.spec", home=home, version=version)
    assert "backoffLimit" in out and "completions" in out


def test_events_k8s_io_table_is_filled(cluster):
    home = temp_home()
    kubectl(cluster, "create", "deployment", "evt", "--image=nginx", home=home)
    kubectl(cluster, "rollout", "status", "deployment/evt", "--timeout=60s", home=home)
    table = kubectl(cluster, "get", "events.v1.events.k8s.io", "--field-selector", "regarding.name=evt", home=home)
    lines = table.strip().splitlines()
    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert any(
        "ScalingReplicaSet" in line and "deployment/evt" in line and "Scaled up replica set evt-" in line
        for line in lines[1:]
    ), table
    kubectl(cluster, "delete", "deployment", "evt", home=home)


def test_cascading_deletion_and_pause(cluster):
    """kubectl delete --cascade=orphan keeps the ReplicaSet and pods (their owner reference to the
    Deployment gone); --cascade=foreground keeps the Deployment, with its foregroundDeletion
    finalizer, until they are gone; a paused Deployment makes no new ReplicaSet until resumed."""
    home = temp_home()
    kubectl(cluster, "create", "deployment", "orph", "--image=nginx", "--replicas=2", home=home)
    kubectl(cluster, "rollout", "status", "deployment/orph", "--timeout=60s", home=home)
    kubectl(cluster, "delete", "deployment", "orph", "--cascade=orphan", home=home)
    rs = get(cluster, "rs", "-l", "app=orph", home=home)["items"]
    assert len(rs) == 1 and not rs[0]["metadata"].get("ownerReferences")
    assert len(get(cluster, "pods", "-l", "app=orph", home=home)["items"]) == 2
    kubectl(cluster, "delete", "rs", "-l", "app=orph", home=home)

    kubectl(cluster, "create", "deployment", "fg", "--image=nginx", "--replicas=2", home=home)
    kubectl(cluster, "rollout", "status", "deployment/fg", "--timeout=60s", home=home)
    kubectl(cluster, "delete", "deployment", "fg", "--cascade=foreground", "--wait=false", home=home)
    d = run(cluster, "get", "deployment", "fg", "-o", "json", home=home, ok=False)
    if d.returncode == 0:  # still there while its dependents go
        meta = json.loads(d.stdout)["metadata"]
        assert meta["finalizers"] == ["foregroundDeletion"] and meta["deletionTimestamp"]
    kubectl(cluster, "wait", "--for=delete", "deployment/fg", "--timeout=60s", home=home)
    assert not get(cluster, "rs", "-l", "app=fg", home=home)["items"]

    kubectl(cluster, "create", "deployment", "paused", "--image=nginx", home=home)
    kubectl(cluster, "rollout", "status", "deployment/paused", "--timeout=60s", home=home)
    kubectl(cluster, "rollout", "pause", "deployment/paused", home=home)
    kubectl(cluster, "set", "image", "deployment/paused", "nginx=nginx:2", home=home)
    time.sleep(1)
    assert len(get(cluster, "rs", "-l", "app=paused", home=home)["items"]) == 1
    cond = {c["type"]: c for c in get(cluster, "deployment", "paused", home=home)["status"]["conditions"]}
    assert cond["Progressing"]["reason"] == "DeploymentPaused"
    kubectl(cluster, "rollout", "resume", "deployment/paused", home=home)
    kubectl(cluster, "rollout", "status", "deployment/paused", "--timeout=60s", home=home)
    assert len(get(cluster, "rs", "-l", "app=paused", home=home)["items"]) == 2
    kubectl(cluster, "delete", "deployment", "paused", home=home)


def test_statefulset_and_daemonset_history_and_undo(cluster):
    """ControllerRevisions: each template a numbered revision, owned by its set, so ``kubectl
    rollout history`` lists them and ``rollout undo`` restores the previous template."""
    home = temp_home()
    kubectl(cluster, "apply", "-f", str(ROOT / "examples" / "workloads" / "statefulset.yaml"), home=home)
    kubectl(cluster, "rollout", "status", "sts/db", "--timeout=90s", home=home)
    kubectl(cluster, "set", "image", "sts/db", "pg=postgres:17", home=home)
    kubectl(cluster, "rollout", "status", "sts/db", "--timeout=90s", home=home)
    history = kubectl(cluster, "rollout", "history", "sts/db", home=home)
    assert [line.split()[0] for line in history.strip().splitlines()[2:]] == ["1", "2"]
    kubectl(cluster, "rollout", "undo", "sts/db", home=home)
    kubectl(cluster, "rollout", "status", "sts/db", "--timeout=90s", home=home)
    sts = get(cluster, "sts", "db", home=home)
    assert sts["spec"]["template"]["spec"]["containers"][0]["image"] == "postgres"
    assert sts["status"]["currentRevision"] == sts["status"]["updateRevision"]
    revisions = {r["metadata"]["name"]: r["revision"] for r in get(cluster, "controllerrevisions", home=home)["items"]}
    assert revisions[sts["status"]["updateRevision"]] == 3  # the first template, taken up again
    live = [
        p
        for p in get(cluster, "pods", "-l", "app=db", home=home)["items"]
        if not p["metadata"].get("deletionTimestamp")
    ]
    assert {p["spec"]["containers"][0]["image"] for p in live} == {"postgres"}

    kubectl(cluster, "apply", "-f", str(ROOT / "examples" / "workloads" / "daemonset.yaml"), home=home)
    kubectl(cluster, "rollout", "status", "ds/agent", "--timeout=60s", home=home)
    kubectl(cluster, "set", "image", "ds/agent", "agent=busybox:2", home=home)
    kubectl(cluster, "rollout", "status", "ds/agent", "--timeout=60s", home=home)
    kubectl(cluster, "rollout", "undo", "ds/agent", home=home)
    kubectl(cluster, "rollout", "status", "ds/agent", "--timeout=60s", home=home)
    live = [
        p
        for p in get(cluster, "pods", "-l", "app=agent", home=home)["items"]
        if not p["metadata"].get("deletionTimestamp")
    ]
    assert {p["spec"]["containers"][0]["image"] for p in live} == {"busybox"}


def test_deleting_a_running_job_deletes_its_pods_instead_of_leaving_them_terminating(cluster):
    """The job-tracking finalizer of a deleted Job's pods is removed (``syncOrphanPod``), so
    ``kubectl delete job`` (background cascading) leaves no pod Terminating on its node."""
    home = temp_home()
    running = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "forever"},
        "spec": {
            "parallelism": 2,
            "completions": 4,
            "template": {
                "metadata": {"annotations": {"kubesched.io/run-seconds": "-1"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    path = Path(home) / "forever.json"
    path.write_text(json.dumps(running))
    kubectl(cluster, "apply", "-f", str(path), home=home)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pods = get(cluster, "pods", "-l", "job-name=forever", home=home)["items"]
        if len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods):
            break
        time.sleep(0.2)
    assert all("batch.kubernetes.io/job-tracking" in p["metadata"]["finalizers"] for p in pods)
    assert 'job.batch "forever" deleted' in kubectl(cluster, "delete", "job", "forever", home=home)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and get(cluster, "pods", "-l", "job-name=forever", home=home)["items"]:
        time.sleep(0.2)
    assert get(cluster, "pods", "-l", "job-name=forever", home=home)["items"] == []


def test_a_wait_for_first_consumer_claim_binds_on_the_first_attempt(cluster):
    """The claim's provisioning used to wait for a commit the PreBind itself held up: every new
    WaitForFirstConsumer claim first failed PreBind with `binding volumes: context deadline
    exceeded` (a false FailedScheduling) and bound on the retry."""
    home = temp_home()
    manifest = [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "first-try"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "first-try"},
            "spec": {
                "containers": [{"name": "c", "image": "nginx"}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "first-try"}}],
            },
        },
    ]
    path = Path(home) / "first-try.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": manifest}))
    kubectl(cluster, "apply", "-f", str(path), home=home)
    kubectl(cluster, "wait", "--for=condition=Ready", "pod/first-try", "--timeout=60s", home=home)
    assert get(cluster, "pvc", "first-try", home=home)["status"]["phase"] == "Bound"
    events = get(
        cluster, "events", "--field-selector", "involvedObject.kind=Pod,involvedObject.name=first-try", home=home
    )
    assert [e["reason"] for e in events["items"]] == ["Scheduled"], [e["message"] for e in events["items"]]
