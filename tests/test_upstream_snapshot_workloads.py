"""A planner's question on a cluster whose pods upstream's controllers made, judged by upstream:
kube-apiserver, kube-controller-manager and kube-scheduler v1.37.2 build the state (a Deployment
spread one pod a node, a DaemonSet, a Job whose pods finished, a StatefulSet whose claim bound a
local PersistentVolume, PersistentVolumes left for later claims); ``kubesched snapshot`` reads it,
``simulate SNAPSHOT EXTRA.yaml`` places the extra workload (a Deployment, a pod with a new claim, a
pod on the StatefulSet's claim, a pod that fits nowhere), and the same manifests applied to the
cluster are placed by kube-scheduler after kube-controller-manager made their pods: the same nodes,
the same message.

The state is built so that each extra pod's node follows from capacity and volumes, whichever of
the ties kube-scheduler broke at random while building it: ``api``'s two 2-CPU pods fit only on n1
and n2 (n0 has 1.4 CPU left: 2 less the web and agent pods), and only if the finished Job's 1.5-CPU
pods do not hold their nodes; ``scratch``'s 5Gi claim fits only the 10Gi volume the StatefulSet did
not take (n0's is 1Gi); ``reader`` follows the StatefulSet's bound claim to its volume's node."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
import yaml
from tests.live import KUBESCHED, wait_for
from tests.upstream import PLAIN_SCHEDULER, ControlPlane

from kubesched.snapshot.anonymize import Anonymizer

# kube-controller-manager's controllers a cluster of workloads needs (no node lifecycle: no kubelets)
CONTROLLERS = (
    "deployment-controller",
    "replicaset-controller",
    "daemonset-controller",
    "job-controller",
    "statefulset-controller",
    "garbage-collector-controller",
    "persistentvolume-binder-controller",
)
NODES = {"n0": ("a", "2"), "n1": ("a", "4"), "n2": ("b", "4")}


def container(cpu: str) -> dict[str, Any]:
    return {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}


def template(app: str, cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [container(cpu)], "terminationGracePeriodSeconds": 0, **spec},
    }


def workload(kind: str, name: str, spec: dict[str, Any], api: str = "apps/v1") -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def volume(name: str, node: str, size: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }


def claim(name: str, size: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "resources": {"requests": {"storage": size}},
        },
    }


def pod(name: str, cpu: str, claim_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container(cpu)], "terminationGracePeriodSeconds": 0}
    if claim_name:
        spec["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": claim_name}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


ONE_WEB_A_NODE = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}


def selector(app: str) -> dict[str, Any]:
    return {"matchLabels": {"app": app}}


STATE = [
    workload(
        "Deployment",
        "web",
        {"replicas": 3, "selector": selector("web"), "template": template("web", "500m", affinity=ONE_WEB_A_NODE)},
    ),
    workload("DaemonSet", "agent", {"selector": selector("agent"), "template": template("agent", "100m")}),
]
JOB = workload(
    "Job",
    "batch",
    {"parallelism": 2, "completions": 2, "template": template("batch", "1500m", restartPolicy="Never")},
    api="batch/v1",
)
STORAGE = [
    {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    },
    volume("pv-n0", "n0", "1Gi"),
    volume("pv-n1", "n1", "10Gi"),
    volume("pv-n2", "n2", "10Gi"),
    workload(
        "StatefulSet",
        "db",
        {
            "replicas": 1,
            "serviceName": "db",
            "selector": selector("db"),
            "template": template("db", "1"),
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "local",
                        "resources": {"requests": {"storage": "10Gi"}},
                    },
                }
            ],
        },
    ),
]
EXTRA = [
    workload("Deployment", "api", {"replicas": 2, "selector": selector("api"), "template": template("api", "2")}),
    claim("scratch", "5Gi"),
    pod("scratch", "100m", "scratch"),
    pod("reader", "100m", "data-db-0"),
    pod("big", "4"),
]


def pods(plane: ControlPlane) -> list[dict[str, Any]]:
    return plane.get("pods", "-n", "default")["items"]


def bound(plane: ControlPlane, app: str, count: int) -> list[dict[str, Any]] | None:
    mine = [p for p in pods(plane) if (p["metadata"].get("labels") or {}).get("app") == app]
    return mine if len(mine) == count and all(p["spec"].get("nodeName") for p in mine) else None


def build_cluster(plane: ControlPlane) -> None:
    plane.apply(
        *(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n, "topology.kubernetes.io/zone": zone}},
            }
            for n, (zone, _) in NODES.items()
        )
    )
    for n, (_, cpu) in NODES.items():
        alloc = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
        ready = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}]
        status = {"status": {"capacity": alloc, "allocatable": alloc, "conditions": ready}}
        code, body = plane.request(
            "PATCH", f"/api/v1/nodes/{n}/status", status, content_type="application/merge-patch+json"
        )
        assert code == 200, body
        # kube-apiserver taints a new node not-ready; the lifecycle controller (not run: no kubelets)
        # would lift it once the node reports Ready
        code, body = plane.request(
            "PATCH", f"/api/v1/nodes/{n}", {"spec": {"taints": None}}, content_type="application/merge-patch+json"
        )
        assert code == 200, body
    plane.apply(*STATE)
    wait_for(lambda: bound(plane, "web", 3) and bound(plane, "agent", 3), 90, 0.5)
    plane.apply(JOB)
    for p in wait_for(lambda: bound(plane, "batch", 2), 90, 0.5):
        # what the kubelet reports when the pod's containers exit 0
        code, body = plane.request(
            "PATCH",
            f"/api/v1/namespaces/default/pods/{p['metadata']['name']}/status",
            {"status": {"phase": "Succeeded"}},
            content_type="application/merge-patch+json",
        )
        assert code == 200, body

    def complete() -> bool:
        conditions = plane.get("job", "-n", "default", "batch").get("status", {}).get("conditions") or []
        return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)

    wait_for(complete, 90, 0.5)
    plane.apply(*STORAGE)

    def db_bound() -> bool:
        claims = plane.get("pvc", "-n", "default")["items"]
        return bool(bound(plane, "db", 1)) and any(
            c["metadata"]["name"] == "data-db-0" and c["status"].get("phase") == "Bound" for c in claims
        )

    wait_for(db_bound, 120, 0.5)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("upstream-workloads")
    plane = ControlPlane(root).start()
    try:
        plane.controller_manager(*CONTROLLERS)
        config = root / "kube-scheduler.yaml"
        config.write_text(PLAIN_SCHEDULER.format(kubeconfig=plane.kubeconfig))
        log = open(root / "kube-scheduler.log", "wb")  # noqa: SIM115
        scheduler = subprocess.Popen(
            [str(plane.bin / "kube-scheduler"), f"--config={config}", "--secure-port=0"], stdout=log, stderr=log
        )
        plane.procs.append(scheduler)
        build_cluster(plane)
        yield plane, root
    finally:
        plane.stop()


def placements(rows: list[tuple[str, str | None, str | None]]) -> dict[str, Any]:
    """Each extra pod's node or message; the Deployment's pods (named by their controller) as the
    sorted list of their nodes."""
    out: dict[str, Any] = {"api": []}
    for name, node, message in rows:
        if name.startswith("api-"):
            out["api"].append(node)
        elif name in ("scratch", "reader", "big"):
            out[name] = (node, message)
    out["api"].sort()
    return out


def test_simulate_on_a_snapshot_of_controllers_pods_places_the_extra_workload_as_kube_scheduler(cluster) -> None:
    plane, root = cluster
    snap, extra = root / "snapshot.yaml", root / "extra.yaml"
    done = plane.snapshot(snap)
    assert done.returncode == 0, done.stderr
    assert "(2 pods finished: the scheduler does not count them)" in done.stderr
    held = {d["metadata"]["name"]: d for d in yaml.safe_load_all(snap.read_text()) if d and d["kind"] == "Pod"}
    db_node = held["db-0"]["spec"]["nodeName"]
    assert db_node in ("n1", "n2")
    free = "n2" if db_node == "n1" else "n1"

    extra.write_text(yaml.safe_dump_all(EXTRA))
    done = subprocess.run(
        [*KUBESCHED, "simulate", str(snap), str(extra), "-o", "json"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    ours = placements([(p["name"], p["nodeName"], p["message"]) for p in result["pods"]])
    # kube-controller-manager's pods are its controllers' own here: none deleted or made again (the
    # DaemonSet's pods count as updated by their template generation, their hash being upstream's)
    assert result["deletedPods"] == []
    assert set(held) <= {p["name"] for p in result["pods"]} and len(result["pods"]) == len(held) + 5

    # the same answers on an anonymized snapshot, its nodes under their hashed names
    hidden = root / "hidden.yaml"
    assert plane.snapshot(hidden, "--anonymize", "--quiet").returncode == 0
    hashed = Anonymizer().name
    hidden_extra = root / "hidden-extra.yaml"  # the reader's claim named as the snapshot names it
    reader = pod("reader", "100m", hashed("PersistentVolumeClaim", "data-db-0"))
    hidden_extra.write_text(yaml.safe_dump_all([reader if e["metadata"]["name"] == "reader" else e for e in EXTRA]))
    done = subprocess.run(
        [*KUBESCHED, "simulate", str(hidden), str(hidden_extra), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    anonymized = json.loads(done.stdout)
    assert anonymized["deletedPods"] == [] and len(anonymized["pods"]) == len(held) + 5
    assert hashed("Pod", "db-0") != f"{hashed('StatefulSet', 'db')}-0"  # named as its set's pod, not as any pod
    assert f"{hashed('StatefulSet', 'db')}-0" in {p["name"] for p in anonymized["pods"]}
    rename = Anonymizer().node
    hidden_rows = [(p["name"], p["nodeName"], p["message"]) for p in anonymized["pods"]]
    expected = {k: (rename(v[0]) if v[0] else None, v[1]) for k, v in ours.items() if k != "api"}
    assert placements(hidden_rows) == {"api": sorted(rename(n) for n in ours["api"]), **expected}

    plane.apply(*EXTRA)

    def settled() -> list[tuple[str, str | None, str | None]] | None:
        rows = []
        for p in pods(plane):
            if p["metadata"]["name"] in held:
                continue
            cond = next((c for c in p["status"].get("conditions") or [] if c["type"] == "PodScheduled"), {})
            if p["spec"].get("nodeName"):
                rows.append((p["metadata"]["name"], p["spec"]["nodeName"], None))
            elif cond.get("status") == "False" and cond.get("reason") == "Unschedulable":
                rows.append((p["metadata"]["name"], None, cond["message"]))
            else:
                return None
        return rows if len(rows) == 5 else None

    theirs = placements(wait_for(settled, 120, 0.5))
    assert ours == theirs
    assert theirs["api"] == ["n1", "n2"]  # the finished Job's pods hold neither node
    assert theirs["scratch"] == (free, None) and theirs["reader"] == (db_node, None)
    assert theirs["big"][0] is None and "3 Insufficient cpu" in theirs["big"][1]
