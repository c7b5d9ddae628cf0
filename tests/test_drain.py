"""``kubesched drain``: the drain what-if. A cluster of two pools runs its Deployment, DaemonSet and
budget as under ``kubesched up``; the spot pool is drained as kubectl drain drains it, and the
evictions, the budget's refusals and retries, and where the replacements go are checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubesched.cluster.loader import Manifest
from kubesched.errors import InputError
from kubesched.planning.drain import build, drain, select_nodes
from kubesched.scheduler.config import default_config

KUBESCHED = [sys.executable, "-m", "kubesched"]
VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."


def node(name: str, pool: str, cpu: str = "4") -> dict:
    alloc = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    labels = {"karpenter.sh/nodepool": pool, "kubernetes.io/hostname": name}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": alloc, "capacity": alloc}}  # fmt: skip


def workload(kind: str, name: str, cpu: str, **spec: object) -> dict:
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "img", "resources": {"requests": {"cpu": cpu}}}]},
    }
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": template, **spec}}  # fmt: skip


def budget(**spec: object) -> dict:
    meta = {"name": "web", "namespace": "default"}
    spec = {"selector": {"matchLabels": {"app": "web"}}, **spec}
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta, "spec": spec}


def bare_pod(name: str, node_name: str) -> dict:
    spec = {"nodeName": node_name, "containers": [{"name": "c", "image": "img"}],
            "volumes": [{"name": "scratch", "emptyDir": {}}]}  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def cluster(web_cpu: str = "1", pdb: dict | None = None, extra: tuple[dict, ...] = ()) -> list[dict]:
    """spot-1, spot-2, base-1, base-2 (4 cores each); web: 4 replicas, one per node; agent: a
    DaemonSet."""
    return [
        node("spot-1", "spot"), node("spot-2", "spot"), node("base-1", "base"), node("base-2", "base"),
        workload("Deployment", "web", web_cpu, replicas=4),
        workload("DaemonSet", "agent", "100m"),
        *([budget(**pdb)] if pdb is not None else []),
        *extra,
    ]  # fmt: skip


def run(objs: list[dict], timeout: float = 600.0, selector: str = "karpenter.sh/nodepool=spot"):
    c = build([Manifest(o, "<test>", i) for i, o in enumerate(objs)], default_config())
    return drain(c, select_nodes(c, [], selector), timeout)


def test_budget_paces_the_evictions_and_the_replacements_move_to_the_other_pool():
    r = run(cluster(pdb={"minAvailable": 3}))
    assert r.nodes == ["spot-1", "spot-2"]
    web = sorted((p for p in r.pods if p.owner.startswith("ReplicaSet/")), key=lambda p: p.evicted_at or 0)
    # one disruption allowed: the second eviction is refused until the first replacement runs,
    # and kubectl's retry comes 5 seconds later
    assert [(p.outcome, p.evicted_at) for p in web] == [("evicted", 0.0), ("evicted", 5.0)]
    assert (
        sorted((p.outcome, p.detail) for p in r.pods if p.owner == "DaemonSet/agent")
        == [("left", "DaemonSet-managed (--ignore-daemonsets)")] * 2
    )
    assert sorted(x.node or "" for x in r.replacements) == ["base-1", "base-2"]
    assert all(x.owner.startswith("ReplicaSet/web-") for x in r.replacements)
    assert r.fits and not r.blocked and not r.lost
    assert r.seconds == 5.0


def test_a_budget_that_allows_no_disruption_blocks_the_drain_until_the_timeout():
    r = run(cluster(pdb={"maxUnavailable": 0}), timeout=20.0)
    blocked = r.blocked
    assert len(blocked) == 2 and not r.replacements
    assert {p.detail for p in blocked} == {
        f"{VIOLATES} The disruption budget web needs 4 healthy pods and has 4 currently"
    }
    assert r.seconds == 20.0  # retried every 5 s: at 0, 5, 10, 15 and 20
    assert not r.fits


def test_replacements_that_fit_nowhere_are_explained_and_hold_the_budget():
    r = run(cluster(web_cpu="3", pdb={"minAvailable": 3}), timeout=60.0)
    assert [x.node for x in r.replacements] == [None]
    pending = r.pending[0]
    assert pending.reason == "Unschedulable"
    assert pending.message is not None and pending.message.startswith(
        "0/4 nodes are available: 2 Insufficient cpu, 2 node(s) were unschedulable."
    )
    # the first eviction took the one disruption allowed; its replacement never runs, so the
    # second pod's eviction is refused to the end
    assert [p.outcome for p in r.pods if p.owner.startswith("ReplicaSet/")] in (
        ["evicted", "blocked"],
        ["blocked", "evicted"],
    )
    assert not r.fits


def test_a_pod_without_controller_is_evicted_and_named_as_not_recreated():
    r = run(cluster(extra=(bare_pod("debug", "spot-1"),)))
    debug = next(p for p in r.pods if p.name == "debug")
    assert (debug.outcome, debug.owner) == ("evicted", "")
    assert debug.detail == "no controller: not recreated (--force); local storage (--delete-emptydir-data)"
    assert [p.name for p in r.lost] == ["debug"]
    assert not any(x.name == "debug" for x in r.replacements)
    assert r.fits  # the replicated pods all found a place


@pytest.mark.parametrize(
    ("names", "selector", "message"),
    [
        (["nope"], None, "no such node: nope"),
        ([], "pool=none", "no node matches 'pool=none'"),
        ([], "pool in (a", "unable to parse requirement"),
        ([], None, "name the nodes to drain"),
    ],
)
def test_node_selection_errors(names, selector, message):
    c = build([Manifest(node("a", "p"), "<test>", 0)], default_config())
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        select_nodes(c, names, selector)


def test_cli_json_and_exit_codes(tmp_path: Path):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(cluster(pdb={"minAvailable": 3})))
    ok = subprocess.run([*KUBESCHED, "drain", str(path), "-l", "karpenter.sh/nodepool=spot", "-o", "json"],
                        capture_output=True, text=True, timeout=120)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert (doc["fits"], doc["evicted"], doc["left"], doc["replacementsPlaced"]) == (True, 2, 2, 2)
    path.write_text(yaml.safe_dump_all(cluster(pdb={"maxUnavailable": 0})))
    blocked = subprocess.run([*KUBESCHED, "drain", str(path), "--node", "spot-1", "--timeout", "10s"],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert blocked.returncode == 1
    assert "1 refused by a disruption budget" in blocked.stdout
    assert "their pods do not all fit elsewhere" in blocked.stdout
    bad = subprocess.run([*KUBESCHED, "drain", str(path), "--node", "spot-1", "--timeout", "soon"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.strip() == 'kubesched: error: field --timeout: Invalid value: "soon": time: invalid duration'
    zero = subprocess.run([*KUBESCHED, "drain", str(path), "--node", "spot-1", "--timeout", "0s"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert zero.returncode == 2
    assert zero.stderr.strip() == "kubesched: error: field --timeout: Invalid value: '0s': must be greater than 0"


def test_a_statefulset_pod_whose_volume_is_bound_to_its_node_cannot_move():
    """The default StorageClass is provisioned as under ``kubesched up`` (the hollow CSI driver's
    volumes belong to one node): the evicted ordinal comes back with its claim, which holds it to
    the cordoned node."""
    root = Path(__file__).resolve().parent.parent / "examples" / "workloads" / "statefulset.yaml"
    objs = [node("spot-1", "spot"), node("spot-2", "spot"), node("base-1", "base"), node("base-2", "base")]
    objs += list(yaml.safe_load_all(root.read_text()))
    r = run(objs, timeout=30.0)
    db = sorted((p for p in r.pods if p.owner == "StatefulSet/db"), key=lambda p: p.name)
    assert len(db) == 2 and all(p.outcome == "evicted" for p in db)  # two ordinals were on the spot pool
    # OrderedReady: the lower ordinal comes back with its name and its claim, which holds it to its
    # old node; the controller waits for it to run before it recreates the other
    assert [(x.name, x.node) for x in r.replacements] == [(db[0].name, None)]
    assert r.awaited == {"StatefulSet/db": 1}
    message = r.pending[0].message or ""
    assert message.startswith(
        "0/4 nodes are available: 2 node(s) didn't match PersistentVolume's node affinity, "
        "2 node(s) were unschedulable."
    ), message
    assert not r.fits


def test_pods_a_job_creates_meanwhile_are_no_replacements():
    """A Job on the other pool starts its next pod as each one completes (2 s each): those pods
    are reported apart, not counted as the drained pods' replacements."""
    template = {
        "metadata": {"annotations": {"kubesched.io/run-seconds": "2"}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"karpenter.sh/nodepool": "base"},
            "containers": [{"name": "c", "image": "img", "resources": {"requests": {"cpu": "100m"}}}],
        },
    }
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "batch", "namespace": "default"},
           "spec": {"completions": 500, "parallelism": 1, "template": template}}  # fmt: skip
    r = run(cluster(pdb={"minAvailable": 3}, extra=(job,)))
    assert sorted(x.owner.split("-")[0] for x in r.replacements) == ["ReplicaSet/web"] * 2
    assert sorted(x.node or "" for x in r.replacements) == ["base-1", "base-2"]
    assert r.others and {x.owner for x in r.others} == {"Job/batch"}
    assert all(x.node in ("base-1", "base-2") for x in r.others)
    out = r.to_json()
    assert (out["replacementsPlaced"], out["otherPodsCreated"]) == (2, len(r.others))
    assert r.fits
