"""The planning commands on a snapshot of a cluster whose pods its controllers made (``kubesched up``
standing in for the real cluster, as in docs/planning.md): the snapshot holds the workloads that own
the pods, ``simulate`` on it makes no pod the cluster does not have, ``drain`` has the evicted pods
recreated by their controllers (a DaemonSet's left), ``size`` sizes an extra Deployment among the
snapshot's pods, and ``simulate --reschedule`` takes every running pod off its node and schedules
them all again, so that ``diff`` compares two configurations on the whole cluster."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.live import KUBESCHED, Server, wait_for
from tests.upstream import ROOT

WORKLOADS = ROOT / "examples" / "planning" / "workloads.yaml"
RUNNING = {"web": 3, "db": 2, "agent": 3}


def run(*args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*KUBESCHED, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode in ok, done.stderr
    return done


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("snapshot-planning")
    server = Server(root / "data", command="up", args=[str(WORKLOADS)]).start()
    try:

        def settled() -> bool:
            pods = server.request("GET", "/api/v1/namespaces/default/pods")[1]["items"]
            running: dict[str, int] = {}
            finished = 0
            for p in pods:
                phase = (p.get("status") or {}).get("phase")
                app = (p["metadata"].get("labels") or {}).get("app")
                if phase == "Running" and app:
                    running[app] = running.get(app, 0) + 1
                finished += phase == "Succeeded"
            return running == RUNNING and finished == 1

        wait_for(settled, 60, 0.2)
        out = root / "cluster.yaml"
        run("snapshot", "--kubeconfig", str(server.kubeconfig), "-o", str(out), "--quiet")
        return out
    finally:
        server.stop()


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_a_snapshot_holds_the_workloads_that_own_its_pods(snapshot) -> None:
    kinds = [d["kind"] for d in docs(snapshot)]
    for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"):
        assert kinds.count(kind) == 1, kind
    assert kinds.index("Deployment") < kinds.index("ReplicaSet") < kinds.index("Pod")
    assert kinds.index("CronJob") < kinds.index("Job")


def test_simulate_on_a_snapshot_makes_no_pod_the_cluster_lacks(snapshot) -> None:
    """The Deployment adopts its ReplicaSet (the templates are equal), the StatefulSet and the
    DaemonSet have their pods, the finished Job is done, the CronJob is not due: the same pods."""
    result = json.loads(run("simulate", str(snapshot), "-o", "json").stdout)
    given = {d["metadata"]["name"] for d in docs(snapshot) if d["kind"] == "Pod"}
    assert {p["name"] for p in result["pods"]} == given
    assert all(p["nodeName"] for p in result["pods"])


def test_draining_a_pool_of_a_snapshot_recreates_its_pods_through_their_controllers(snapshot) -> None:
    pods = [d for d in docs(snapshot) if d["kind"] == "Pod" and d["status"].get("phase") == "Running"]
    on_a = [p for p in pods if p["spec"]["nodeName"].startswith("pool-a")]
    evicted = [p for p in on_a if p["metadata"]["labels"]["app"] != "agent"]
    assert evicted, "the pool holds pods to drain"
    answer = json.loads(run("drain", str(snapshot), "-l", "pool=a", "-o", "json").stdout)
    assert answer["fits"] is True
    assert answer["evicted"] == len(evicted)
    assert answer["left"] == len(on_a) - len(evicted)  # the DaemonSet's pods stay
    assert answer["notRecreated"] == []  # every evicted pod has its controller in the snapshot
    placed = answer["replacements"]
    assert len(placed) == len(evicted) and {r["node"] for r in placed} == {"pool-b-1"}
    owners = {p["metadata"]["ownerReferences"][0]["kind"] for p in evicted}
    assert {r["owner"].split("/")[0] for r in placed} == owners == {"ReplicaSet", "StatefulSet"}


def test_size_an_extra_deployment_among_a_snapshots_pods(snapshot) -> None:
    """Four more pods of 1 CPU, made by their Deployment in each trial: the snapshot's nodes have
    room for one or two of them, one 4-CPU template node for three (its own agent pod beside them)."""
    extra = ROOT / "examples" / "planning" / "api.yaml"  # docs/planning.md sizes it too
    template = ROOT / "examples" / "planning" / "m5-xlarge.yaml"
    answer = json.loads(
        run(
            "size",
            str(extra),
            "--cluster",
            str(snapshot),
            "--node-template",
            str(template),
            "--max-nodes",
            "10",
            "-o",
            "json",
        ).stdout
    )
    sized = answer["options"][0]
    assert sized["unplaceable"] == []
    assert sized["nodes"] == 1


def test_reschedule_judges_a_configuration_on_every_pod_of_a_snapshot(snapshot, tmp_path) -> None:
    default = json.loads(run("simulate", str(snapshot), "--reschedule", "-o", "json").stdout)
    running = {
        d["metadata"]["name"] for d in docs(snapshot) if d["kind"] == "Pod" and d["status"].get("phase") == "Running"
    }
    scheduled = {p["name"] for p in default["pods"] if p["nodeName"]}
    assert running <= scheduled
    assert default["stats"]["attempts"] >= len(running)  # each was scheduled again
    packed_config = ROOT / "examples" / "planning" / "most-allocated.yaml"
    packed = run("simulate", str(snapshot), "--reschedule", "--config", str(packed_config), "-o", "json").stdout
    (tmp_path / "a.json").write_text(json.dumps(default))
    (tmp_path / "b.json").write_text(packed)
    changed = json.loads(run("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", "json").stdout)
    assert changed["moved"], "MostAllocated packs the pods another way"


def bound_pod(**fields: Any) -> dict[str, Any]:
    meta = {"name": "p", "namespace": "default", **fields.pop("meta", {})}
    spec = {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}], **fields.pop("spec", {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": fields.pop("status", {})}


@pytest.mark.parametrize(
    ("pod", "again"),
    [
        (bound_pod(status={"phase": "Running", "podIP": "10.0.0.1"}), True),
        (bound_pod(status={"phase": "Succeeded"}), False),  # finished: holds no node, asks for none
        (bound_pod(status={"phase": "Failed"}), False),
        (bound_pod(meta={"deletionTimestamp": "2026-01-01T00:00:00Z"}), False),  # going
        (bound_pod(meta={"annotations": {"kubernetes.io/config.mirror": "x"}}), False),  # the kubelet's
        (bound_pod(spec={"schedulerName": "other-scheduler"}), False),  # no profile of ours
        (bound_pod(spec={"nodeName": ""}), False),  # pending already
    ],
    ids=["running", "succeeded", "failed", "terminating", "mirror", "other scheduler", "pending"],
)
def test_reschedule_unbinds_only_running_pods_the_profiles_schedule(pod: dict[str, Any], again: bool) -> None:
    from kubesched.cluster.loader import Manifest
    from kubesched.simulate.reschedule import unbound

    out, count = unbound([Manifest(pod, "snapshot.yaml", 0)], ["default-scheduler"])
    assert count == int(again)
    assert bool(out[0].obj["spec"].get("nodeName")) == (not again and bool(pod["spec"]["nodeName"]))
    if again:
        assert out[0].obj["status"] == {}  # where and how it ran is gone with its binding
        assert pod["spec"]["nodeName"] == "n1"  # the input is not changed
