"""``kubesched snapshot`` of a real cluster, judged by kube-scheduler v1.37.2: a kube-apiserver
v1.37.2 holds nodes (one cordoned), a running pod, a finished Job's pod, a pod being deleted, a pod
of another scheduler, a Service and a budget; the snapshot is taken from it, ``simulate SNAPSHOT
EXTRA.yaml`` places the extra pods, and kube-scheduler places the same pods when they are applied
to that cluster: the same nodes, the same message for the pod that fits nowhere."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.live import KUBESCHED, wait_for
from tests.upstream import PLAIN_SCHEDULER, ROOT, ControlPlane


def node(name: str, zone: str, cpu: str, *, cordoned: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}},
        "spec": {"unschedulable": True} if cordoned else {},
    }
    return out


def pod(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", {"app": name})
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels, **spec.pop("meta", {})},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 0, **spec},
    }


NOT_BESIDE_WEB_RATHER_ZONE_B = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    },
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 50,
                "preference": {
                    "matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}]
                },
            }
        ]
    },
}
# e1 fits only where the finished pod was; e2 nowhere (the terminating pod and the other scheduler's
# pod still hold their nodes, n3 is cordoned); e3 not beside the web pod, in zone b if it can (n1 and
# n2 tie without the preference), in the room the other scheduler's pod leaves
EXTRA = [
    pod("e1", "1"),
    pod("e2", "1200m"),
    pod("e3", "400m", affinity=NOT_BESIDE_WEB_RATHER_ZONE_B),
]


def status_patch(plane: ControlPlane, kind_path: str, status: dict[str, Any]) -> None:
    code, body = plane.request(
        "PATCH", f"{kind_path}/status", {"status": status}, content_type="application/merge-patch+json"
    )
    assert code == 200, body


def build_cluster(plane: ControlPlane) -> None:
    nodes = [node("n0", "a", "2"), node("n1", "a", "2"), node("n2", "b", "4"), node("n3", "b", "2", cordoned=True)]
    plane.apply(*nodes)
    for n, cpu in (("n0", "2"), ("n1", "2"), ("n2", "4"), ("n3", "2")):
        alloc = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
        ready = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}]
        status_patch(plane, f"/api/v1/nodes/{n}", {"capacity": alloc, "allocatable": alloc, "conditions": ready})
        # kube-apiserver's TaintNodesByCondition taints a new node not-ready; a node lifecycle
        # controller lifts it once the node reports Ready, as this step does
        code, body = plane.request(
            "PATCH", f"/api/v1/nodes/{n}", {"spec": {"taints": None}}, content_type="application/merge-patch+json"
        )
        assert code == 200, body
    plane.apply(
        pod("p1", "1", nodeName="n0", labels={"app": "web"}),
        pod("f1", "1", nodeName="n0", meta={"ownerReferences": []}),
        pod("t1", "1500m", nodeName="n1", meta={"finalizers": ["example.com/hold"]}),
        pod("o1", "3500m", nodeName="n2", schedulerName="other-scheduler"),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    for name in ("p1", "t1", "o1"):
        status_patch(plane, f"/api/v1/namespaces/default/pods/{name}", {"phase": "Running"})
    status_patch(plane, "/api/v1/namespaces/default/pods/f1", {"phase": "Succeeded"})
    assert plane.request("DELETE", "/api/v1/namespaces/default/pods/t1")[0] == 200  # held by its finalizer


def upstream_placements(plane: ControlPlane, root: Path) -> dict[str, tuple[str | None, str | None]]:
    """Apply the extra pods with kube-scheduler v1.37.2 running: where each went, or why not."""
    config = root / "kube-scheduler.yaml"
    config.write_text(PLAIN_SCHEDULER.format(kubeconfig=plane.kubeconfig))
    log = open(root / "kube-scheduler.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [str(plane.bin / "kube-scheduler"), f"--config={config}", "--secure-port=0"], stdout=log, stderr=log
    )
    try:
        plane.apply(*EXTRA)

        def settled() -> dict[str, tuple[str | None, str | None]] | None:
            out = {}
            for p in EXTRA:
                got = plane.get("pod", "-n", "default", p["metadata"]["name"])
                cond = next(
                    (c for c in (got.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"), {}
                )
                if got["spec"].get("nodeName"):
                    out[got["metadata"]["name"]] = (got["spec"]["nodeName"], None)
                elif cond.get("status") == "False":
                    out[got["metadata"]["name"]] = (None, cond.get("message"))
                else:
                    return None
            return out

        return wait_for(settled, 60, 0.5)
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory):
    plane = ControlPlane(tmp_path_factory.mktemp("upstream-snapshot")).start()
    try:
        build_cluster(plane)
        yield plane
    finally:
        plane.stop()


def test_a_snapshot_holds_the_cluster_as_the_scheduler_reads_it(plane, tmp_path) -> None:
    snap = tmp_path / "snapshot.yaml"
    done = plane.snapshot(snap)
    assert done.returncode == 0, done.stderr
    assert "(1 pods finished: the scheduler does not count them)" in done.stderr
    text = snap.read_text()
    assert text.startswith("# kubesched snapshot of https://127.0.0.1:")
    assert " at resourceVersion " in text.splitlines()[0]  # every list read at one revision
    docs = [d for d in yaml.safe_load_all(text) if d]
    pods = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Pod"}
    assert set(pods) == {"p1", "f1", "t1", "o1"}
    assert pods["f1"]["status"]["phase"] == "Succeeded"
    assert pods["t1"]["metadata"]["deletionTimestamp"] and pods["o1"]["spec"]["schedulerName"] == "other-scheduler"
    assert all("resourceVersion" not in d["metadata"] and "managedFields" not in d["metadata"] for d in docs)
    assert all(d["metadata"].get("uid") for d in docs if d["kind"] == "Pod")  # kept: references stay true
    web = next(d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "web")
    assert web["spec"] == {
        "type": "ClusterIP",
        "selector": {"app": "web"},
        "ports": [{"port": 80, "targetPort": 80, "protocol": "TCP"}],
    }
    kinds = [d["kind"] for d in docs]
    assert kinds.index("Namespace") < kinds.index("Node") < kinds.index("Pod")
    assert text.splitlines()[-1].startswith("# ") and "4 pods" in text.splitlines()[-2]  # what it holds closes it
    # a .json name: one List with the same objects, read back in one decode; the scheduler's
    # configuration given is checked and written first (a bad one refused before anything is read)
    as_json = tmp_path / "snapshot.json"
    cmd = [*KUBESCHED, "snapshot", "--kubeconfig", str(plane.kubeconfig), "-o", str(as_json), "--quiet"]
    config = ROOT / "examples" / "planning" / "most-allocated.yaml"
    assert subprocess.run([*cmd, "--config", str(config)], capture_output=True, timeout=120).returncode == 0
    listed = json.loads(as_json.read_text())
    assert listed["kind"] == "List" and listed["metadata"]["resourceVersion"]
    assert listed["items"][0] == yaml.safe_load(config.read_text())
    assert [(d["kind"], d["metadata"]["name"]) for d in listed["items"][1:]] == [
        (d["kind"], d["metadata"]["name"]) for d in docs
    ]
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 200\n"
    )
    done = subprocess.run(
        [*cmd, "-o", str(tmp_path / "never.json"), "--config", str(bad)], capture_output=True, text=True
    )
    assert done.returncode == 2 and done.stderr.startswith("kubesched: error: ") and len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "never.json").exists()
    assert not list(tmp_path.glob("*.part"))


def simulated(
    plane: ControlPlane, tmp_path: Path, *flags: str, extra_pods: list[dict[str, Any]] = EXTRA
) -> dict[str, tuple[str | None, str | None]]:
    """``simulate SNAPSHOT EXTRA.yaml`` on a snapshot taken with ``flags``: each extra pod's node or message."""
    snap, extra = tmp_path / f"snapshot{len(flags)}.yaml", tmp_path / "extra.yaml"
    done = plane.snapshot(snap, "--quiet", *flags)
    assert done.returncode == 0, done.stderr
    extra.write_text(yaml.safe_dump_all(extra_pods))
    done = subprocess.run(
        [*KUBESCHED, "simulate", str(snap), str(extra), "-o", "json"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode in (0, 1), done.stderr
    names = {e["metadata"]["name"] for e in EXTRA}
    return {p["name"]: (p["nodeName"], p["message"]) for p in json.loads(done.stdout)["pods"] if p["name"] in names}


def test_an_anonymized_snapshot_places_pods_as_the_plain_one_does(plane, tmp_path) -> None:
    """Before kube-scheduler places the extra pods on the real cluster (the next test): the same
    answers on the anonymized snapshot, the nodes under their hashed names."""
    from kubesched.snapshot.anonymize import Anonymizer

    plain, hidden = simulated(plane, tmp_path), simulated(plane, tmp_path, "--anonymize")
    rename = Anonymizer().node
    assert hidden == {name: (rename(node) if node else None, message) for name, (node, message) in plain.items()}
    assert plain["e1"] == ("n0", None) and hidden["e1"][0] != "n0"


def test_a_snapshot_with_hashed_label_values_places_pods_as_the_plain_one_does(plane, tmp_path) -> None:
    """``--anonymize-labels``: the zone the extra pod prefers and the app its anti-affinity avoids
    hashed alike in the snapshot and in the extra pods (as whoever writes them for it would)."""
    from kubesched.snapshot.anonymize import Anonymizer

    hashing = Anonymizer(labels=True)
    assert hashing.labels is not None
    extra = [hashing.labels.rewrite(p) for p in EXTRA]
    assert extra[2]["metadata"]["labels"]["app"] != "e3"
    plain = simulated(plane, tmp_path)
    hidden = simulated(plane, tmp_path, "--anonymize-labels", extra_pods=extra)
    assert hidden == {name: (hashing.node(node) if node else None, message) for name, (node, message) in plain.items()}


def test_simulate_on_a_snapshot_places_pods_where_kube_scheduler_does(plane, tmp_path) -> None:
    ours = simulated(plane, tmp_path)
    theirs = upstream_placements(plane, tmp_path)
    assert ours == theirs
    assert theirs["e1"] == ("n0", None)  # the finished pod does not hold its node
    assert theirs["e2"][0] is None and theirs["e3"] == ("n2", None)


def test_a_snapshot_of_a_cluster_that_cannot_be_reached_is_one_clear_line(tmp_path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    for args, said in (
        ([], "kubesched: error: cannot reach the API server at https://127.0.0.1:1"),
        (["--context", "nope"], "kubesched: error: "),
    ):
        done = subprocess.run(
            [*KUBESCHED, "snapshot", "--kubeconfig", str(config), *args, "--quiet"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and done.stderr.startswith(said), done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
