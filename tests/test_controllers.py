"""The workload controllers on a virtual clock (``kubesched.testing.Cluster(workloads=True)``: the
real scheduler, hollow kubelet and controllers in one process), against the behaviour of
kube-controller-manager's: rolling-update steps within maxSurge/maxUnavailable, proportional
scaling (the Kubernetes documentation's worked example), Recreate, deletion order, StatefulSet
ordering and claims, DaemonSet placement, Job completion and failure, the garbage collector's
three propagation policies and graceful namespace deletion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.controllers.deployment import fenceposts
from kubesched.controllers.replicaset import deletion_order
from kubesched.kubelet.node import default_storage_class, fake_node
from kubesched.testing import Cluster


def node(name: str, **kw: Any) -> dict[str, Any]:
    n = {**fake_node(name), "kind": "Node"}
    for k, v in kw.items():
        n.setdefault("spec", {})[k] = v
    return n


def deployment(name: str, replicas: int, image: str = "nginx", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
            **spec,
        },
    }


def set_template(c: Cluster, kind: str, name: str, **pod_spec: Any) -> None:
    def put(o: dict[str, Any]) -> dict[str, Any]:
        template = o["spec"]["template"]
        return {**o, "spec": {**o["spec"], "template": {**template, "spec": {**template["spec"], **pod_spec}}}}

    c.store.mutate(kind, "default", name, put)


def rs_sizes(c: Cluster, app: str) -> list[tuple[int, str]]:
    """(spec.replicas, image) of each of the app's ReplicaSets, oldest first."""
    rss = [r for r in c.store.list("ReplicaSet")[0] if r["metadata"]["labels"].get("app") == app]
    rss.sort(key=lambda r: int(r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]))
    return [(r["spec"]["replicas"], r["spec"]["template"]["spec"]["containers"][0]["image"]) for r in rss]


def pods(c: Cluster, **labels: str) -> list[dict[str, Any]]:
    return [
        p
        for p in c.store.list("Pod")[0]
        if all(p["metadata"].get("labels", {}).get(k) == v for k, v in labels.items())
        and not p["metadata"].get("deletionTimestamp")
    ]


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "want"),
    [
        (10, None, None, (3, 2)),  # 25% of 10: surge rounds up, unavailable down
        (1, None, None, (1, 0)),
        (4, None, None, (1, 1)),
        (3, 0, 0, (0, 1)),  # both zero: one may be unavailable
        (10, "50%", "30%", (5, 3)),
        (2, 1, 5, (1, 2)),  # no more unavailable than there are replicas
    ],
)
def test_fenceposts(replicas, surge, unavailable, want):
    rolling = {k: v for k, v in (("maxSurge", surge), ("maxUnavailable", unavailable)) if v is not None}
    d = deployment("d", replicas, strategy={"type": "RollingUpdate", "rollingUpdate": rolling})
    assert fenceposts(d) == want


def test_rolling_update_steps_within_surge_and_unavailable():
    """maxSurge 1, maxUnavailable 0, minReadySeconds 10: one new pod at a time, an old one
    removed only once it is available, as ``rolloutRolling`` steps."""
    c = Cluster(*[node(f"n{i}") for i in range(4)], workloads=True)
    rolling = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    c.create(deployment("web", 3, strategy=rolling, minReadySeconds=10))
    c.settle()
    c.advance(10)
    assert rs_sizes(c, "web") == [(3, "nginx")]
    set_template(c, "Deployment", "web", containers=[{"name": "c", "image": "nginx:2"}])
    c.settle()
    steps = [rs_sizes(c, "web")]
    for _ in range(4):
        c.advance(10)
        steps.append(rs_sizes(c, "web"))
    assert steps == [
        [(3, "nginx"), (1, "nginx:2")],
        [(2, "nginx"), (2, "nginx:2")],
        [(1, "nginx"), (3, "nginx:2")],
        [(0, "nginx"), (3, "nginx:2")],
        [(0, "nginx"), (3, "nginx:2")],
    ]
    d = c.store.get("Deployment", "default", "web")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    st = d["status"]
    assert (st["replicas"], st["updatedReplicas"], st["availableReplicas"]) == (3, 3, 3)
    progressing = next(x for x in st["conditions"] if x["type"] == "Progressing")
    assert progressing["reason"] == "NewReplicaSetAvailable"
    assert len(pods(c, app="web")) == 3


def test_proportional_scaling_matches_the_documentation_example():
    """concepts/workloads/controllers/deployment, "Proportional scaling": 10 replicas, maxSurge 3,
    maxUnavailable 2, a rollout stuck on pods that cannot run (old 8, new 5); scaled to 15, the 5
    extra go 3 to the old ReplicaSet and 2 to the new one."""
    c = Cluster(*[node(f"n{i}") for i in range(4)], workloads=True)
    rolling = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    c.create(deployment("web", 10, strategy=rolling))
    c.settle()
    set_template(c, "Deployment", "web", containers=[{"name": "c", "image": "nginx:bad"}], nodeSelector={"no": "node"})
    c.settle()
    assert rs_sizes(c, "web") == [(8, "nginx"), (5, "nginx:bad")]
    c.store.mutate("Deployment", "default", "web", lambda o: {**o, "spec": {**o["spec"], "replicas": 15}})
    c.settle()
    assert rs_sizes(c, "web") == [(11, "nginx"), (7, "nginx:bad")]
    d = c.store.get("Deployment", "default", "web")
    available = next(x for x in d["status"]["conditions"] if x["type"] == "Available")
    # availableReplicas >= replicas - maxUnavailable fails: 11 < 15 - 2
    assert (available["status"], available["reason"]) == ("False", "MinimumReplicasUnavailable")


def test_recreate_scales_old_to_zero_before_the_new_replicaset_exists():
    c = Cluster(*[node(f"n{i}") for i in range(2)], workloads=True)
    c.create(deployment("web", 2, strategy={"type": "Recreate"}))
    c.settle()
    set_template(c, "Deployment", "web", containers=[{"name": "c", "image": "nginx:2"}])
    c.settle()
    assert rs_sizes(c, "web") == [(0, "nginx"), (2, "nginx:2")]
    events = c.events("ScalingReplicaSet")
    old = next(r for r in c.store.list("ReplicaSet")[0] if r["spec"]["replicas"] == 0)["metadata"]["name"]
    new = next(r for r in c.store.list("ReplicaSet")[0] if r["spec"]["replicas"] == 2)["metadata"]["name"]
    assert events.index(f"Scaled down replica set {old} from 2 to 0") < events.index(
        f"Scaled up replica set {new} from 0 to 2"
    )
    assert {p["spec"]["containers"][0]["image"] for p in pods(c, app="web")} == {"nginx:2"}


def _pod(name: str, node: str = "", phase: str = "Running", ready: bool = True, created: str = "2026-01-01T00:00:00Z"):
    conds = [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": created}]
    return {
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase, "conditions": conds},
    }


def test_replicaset_deletes_unscheduled_pending_unready_and_crowded_pods_first():
    running = _pod("running", "n1")
    crowded = _pod("crowded", "n2")
    crowded_peer = _pod("crowded-peer", "n2", created="2026-01-01T00:00:05Z")
    unready = _pod("unready", "n3", ready=False)
    pending = _pod("pending", "n4", phase="Pending", ready=False)
    unscheduled = _pod("unscheduled", phase="Pending", ready=False)
    order = deletion_order(
        [running, crowded, crowded_peer, unready, pending, unscheduled],
        [running, crowded, crowded_peer, unready, pending, unscheduled],
    )
    assert [p["metadata"]["name"] for p in order] == [
        "unscheduled",
        "pending",
        "unready",
        "crowded-peer",  # two on n2, the newer first
        "crowded",
        "running",
    ]


def statefulset(name: str, replicas: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "db"}]}},
            **spec,
        },
    }


CLAIMS = [
    {
        "metadata": {"name": "data", "labels": {"tier": "db"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
]


@pytest.mark.parametrize(
    ("policy", "first_round"), [("OrderedReady", ["db-0"]), ("Parallel", ["db-0", "db-1", "db-2"])]
)
def test_statefulset_ordering(policy, first_round):
    c = Cluster(*[node(f"n{i}") for i in range(3)], workloads=True)
    c.create(statefulset("db", 3, podManagementPolicy=policy, minReadySeconds=10))
    c.settle()
    assert sorted(p["metadata"]["name"] for p in pods(c, app="db")) == first_round
    for _ in range(3):
        c.advance(10)
    names = sorted(p["metadata"]["name"] for p in pods(c, app="db"))
    assert names == ["db-0", "db-1", "db-2"]
    p1 = c.store.get("Pod", "default", "db-1")
    assert p1["spec"]["hostname"] == "db-1" and p1["spec"]["subdomain"] == "db"
    assert p1["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-1"
    assert p1["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"
    st = c.store.get("StatefulSet", "default", "db")["status"]
    assert (st["replicas"], st["readyReplicas"], st["availableReplicas"]) == (3, 3, 3)
    assert st["currentRevision"] == st["updateRevision"]


def test_statefulset_claims_scale_down_and_retention():
    c = Cluster(*[node(f"n{i}") for i in range(3)], {**default_storage_class(), "kind": "StorageClass"}, workloads=True)
    policy = {"whenDeleted": "Retain", "whenScaled": "Delete"}
    c.create(statefulset("db", 3, volumeClaimTemplates=CLAIMS, persistentVolumeClaimRetentionPolicy=policy))
    c.settle()
    claims = {x["metadata"]["name"]: x for x in c.store.list("PersistentVolumeClaim")[0]}
    assert sorted(claims) == ["data-db-0", "data-db-1", "data-db-2"]
    assert claims["data-db-1"]["metadata"]["labels"] == {"tier": "db", "app": "db"}
    assert all(x["status"]["phase"] == "Bound" for x in claims.values())
    c.store.mutate("StatefulSet", "default", "db", lambda o: {**o, "spec": {**o["spec"], "replicas": 1}})
    c.settle()
    assert sorted(p["metadata"]["name"] for p in pods(c, app="db")) == ["db-0"]
    assert sorted(x["metadata"]["name"] for x in c.store.list("PersistentVolumeClaim")[0]) == ["data-db-0"]
    deleted = [m for m in c.events("SuccessfulDelete")]
    assert deleted == ["delete Pod db-2 in StatefulSet db successful", "delete Pod db-1 in StatefulSet db successful"]


def daemonset(name: str, image: str = "agent", **pod_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {**pod_spec, "containers": [{"name": "c", "image": image}]},
            },
        },
    }


def test_daemonset_follows_nodes_selectors_and_taints():
    tainted = node("tainted", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    other = {**node("other"), "metadata": {**node("other")["metadata"], "labels": {"role": "other"}}}
    c = Cluster(node("n0"), node("n1"), tainted, other, workloads=True)
    ds = daemonset("agent", nodeSelector={"type": "kubesched"})
    c.create(ds)
    c.settle()
    assert sorted(p["spec"]["nodeName"] for p in pods(c, app="agent")) == ["n0", "n1"]
    c.create(node("n2"))
    c.settle()
    assert sorted(p["spec"]["nodeName"] for p in pods(c, app="agent")) == ["n0", "n1", "n2"]
    c.store.delete("Node", "", "n1")
    c.settle()
    st = c.store.get("DaemonSet", "default", "agent")["status"]
    assert (st["desiredNumberScheduled"], st["currentNumberScheduled"], st["numberReady"]) == (2, 2, 2)
    assert sorted(p["spec"]["nodeName"] for p in pods(c, app="agent")) == ["n0", "n2"]


@pytest.mark.parametrize(("generation", "kept"), [("1", True), ("7", False)], ids=["same-generation", "older"])
def test_a_daemon_pod_with_another_hash_counts_as_updated_by_its_template_generation(generation, kept):
    """``IsPodUpdated``: kube-controller-manager hashes a template otherwise than kubesched, so a
    snapshot's daemon pods carry hashes kubesched does not compute; the set's template generation
    (its annotation, 1 on create) on the pod's label still marks them current. A pod of neither is
    rolled (deleted and made again)."""
    c = Cluster(node("n0"), node("n1"), workloads=True)
    ds = daemonset("agent", image="a")
    c.create(ds)
    c.settle()
    stored = c.store.get("DaemonSet", "default", "agent")
    assert stored["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "1"}
    first = {p["metadata"]["name"] for p in pods(c, app="agent")}
    assert {p["metadata"]["labels"]["pod-template-generation"] for p in pods(c, app="agent")} == {"1"}

    def foreign(o: dict[str, Any]) -> dict[str, Any]:
        labels = {
            **o["metadata"]["labels"],
            "controller-revision-hash": "5d4b8f6c7",
            "pod-template-generation": generation,
        }
        return {**o, "metadata": {**o["metadata"], "labels": labels}}

    for name in sorted(first):
        c.store.mutate("Pod", "default", name, foreign)
    c.create(node("n2"))  # a resync of the set
    c.settle()
    now = {p["metadata"]["name"] for p in pods(c, app="agent")}
    assert len(now) == 3
    assert (first <= now) is kept and (not first & now) is not kept


def job(name: str, **spec: Any) -> dict[str, Any]:
    template = spec.pop("template", {})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "metadata": template.get("metadata", {}),
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            },
            **spec,
        },
    }


def test_job_runs_parallelism_at_a_time_until_completions():
    c = Cluster(*[node(f"n{i}") for i in range(3)], workloads=True, run_seconds=5)
    c.create(job("work", completions=5, parallelism=2))
    c.settle()
    active = []
    for _ in range(4):
        active.append(len([p for p in pods(c, **{"job-name": "work"}) if p["status"]["phase"] == "Running"]))
        c.advance(5)
    assert active == [2, 2, 1, 0]  # 2 done at 5 s, 4 at 10 s, the fifth at 15 s
    j = c.store.get("Job", "default", "work")
    assert j["status"]["succeeded"] == 5
    assert [x["type"] for x in j["status"]["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert j["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": j["metadata"]["uid"]}}


def test_indexed_job_and_backoff_and_deadline():
    c = Cluster(*[node(f"n{i}") for i in range(3)], workloads=True, run_seconds=1)
    c.create(job("idx", completions=4, parallelism=4, completionMode="Indexed"))
    c.settle()
    names = sorted(p["metadata"]["name"].rsplit("-", 1)[0] for p in pods(c, **{"job-name": "idx"}))
    assert names == ["idx-0", "idx-1", "idx-2", "idx-3"]
    c.advance(1)
    assert c.store.get("Job", "default", "idx")["status"]["completedIndexes"] == "0-3"

    failing = {"metadata": {"annotations": {"kubesched.io/exit-code": "1"}}}
    c.create(job("bad", backoffLimit=2, template=failing))
    c.settle()
    for _ in range(4):
        c.advance(1)
    j = c.store.get("Job", "default", "bad")
    assert j["status"]["failed"] == 3
    assert [(x["type"], x["reason"]) for x in j["status"]["conditions"]] == [
        ("FailureTarget", "BackoffLimitExceeded"),
        ("Failed", "BackoffLimitExceeded"),
    ]

    forever = {"metadata": {"annotations": {"kubesched.io/run-seconds": "-1"}}}
    c.create(job("slow", activeDeadlineSeconds=30, template=forever))
    c.settle()
    c.advance(31)
    j = c.store.get("Job", "default", "slow")
    assert j["status"]["conditions"][-1]["reason"] == "DeadlineExceeded"
    assert not pods(c, **{"job-name": "slow"})


@pytest.mark.parametrize(
    ("policy", "left"),
    [("Background", (0, 0)), ("Foreground", (0, 0)), ("Orphan", (1, 2))],
)
def test_garbage_collector_propagation(policy, left):
    c = Cluster(node("n0"), node("n1"), workloads=True)
    c.create(deployment("web", 2))
    c.settle()
    c.store.delete("Deployment", "default", "web", propagation=policy)
    if policy == "Foreground":
        d = c.store.get("Deployment", "default", "web")  # kept until its dependents are gone
        assert d["metadata"]["finalizers"] == ["foregroundDeletion"] and d["metadata"]["deletionTimestamp"]
    c.settle()
    assert c.store.try_get("Deployment", "default", "web") is None
    assert (len(c.store.list("ReplicaSet")[0]), len(pods(c, app="web"))) == left
    if policy == "Orphan":
        rs = c.store.list("ReplicaSet")[0][0]
        assert "ownerReferences" not in rs["metadata"]
        assert all(p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet" for p in pods(c, app="web"))


def test_namespace_deletion_waits_its_grace_then_empties_and_goes():
    c = Cluster(node("n0"), workloads=True)
    c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    web = deployment("web", 2)
    web["metadata"]["namespace"] = "shop"
    c.create(web)
    c.settle()
    c.store.delete("Namespace", "", "shop")
    c.settle()
    ns = c.store.get("Namespace", "", "shop")
    assert ns["status"]["phase"] == "Terminating" and len(c.store.list("Pod", "shop")[0]) == 2
    c.advance(5)
    assert c.store.try_get("Namespace", "", "shop") is None
    assert not c.store.list("Pod", "shop")[0] and not c.store.list("Deployment", "shop")[0]


def test_namespace_deletion_takes_its_custom_resources():
    """The namespace deleter finds custom resources through the CRDs, as its discovery does."""
    example = Path(__file__).resolve().parent.parent / "examples" / "crd"
    crd, group = (yaml.safe_load((example / f).read_text()) for f in ("podgroup-crd.yaml", "podgroup.yaml"))
    c = Cluster(node("n0"), crd, workloads=True)
    c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    c.create({**group, "metadata": {"name": "training", "namespace": "shop"}})
    assert c.store.get("podgroups.scheduling.x-k8s.io", "shop", "training")["spec"]["minMember"] == 2
    c.store.delete("Namespace", "", "shop")
    c.settle()
    c.advance(5)
    assert c.store.try_get("Namespace", "", "shop") is None
    assert not c.store.list("podgroups.scheduling.x-k8s.io", "shop")[0]


def test_stopped_node_goes_unknown_is_tainted_and_its_pods_evicted_after_their_toleration():
    """``kubesched node stop``: the Lease ages past --node-monitor-grace-period (50 s), the node
    lifecycle controller marks it Unknown and taints it unreachable; pods go after their
    tolerationSeconds (300 s from DefaultTolerationSeconds) and are replaced elsewhere."""
    c = Cluster(node("n0"), node("n1"), workloads=True)
    web = deployment("web", 4)
    web["spec"]["template"]["spec"]["nodeSelector"] = {"type": "kubesched"}
    c.create(web)
    c.settle()
    on_n0 = [p["metadata"]["name"] for p in pods(c, app="web") if p["spec"]["nodeName"] == "n0"]
    assert on_n0 and all(
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        in p["spec"]["tolerations"]
        for p in pods(c, app="web")
    )
    c.store.mutate(
        "Node",
        "",
        "n0",
        lambda o: {**o, "metadata": {**o["metadata"], "annotations": {"kubesched.io/kubelet-stopped": "true"}}},
    )
    c.settle()
    c.advance(45)
    assert c.store.get("Node", "", "n0")["status"]["conditions"][-1]["status"] == "True"
    c.advance(20)  # the Lease is now older than 50 s
    n0 = c.store.get("Node", "", "n0")
    ready = next(x for x in n0["status"]["conditions"] if x["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown",
        "NodeStatusUnknown",
        "Kubelet stopped posting node status.",
    )
    assert sorted((t["key"], t["effect"]) for t in n0["spec"]["taints"]) == [
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoSchedule"),
    ]
    assert all(
        next(x for x in c.store.get("Pod", "default", n)["status"]["conditions"] if x["type"] == "Ready")["status"]
        == "False"
        for n in on_n0
    )
    c.advance(200)
    assert all(not c.store.get("Pod", "default", n)["metadata"].get("deletionTimestamp") for n in on_n0)
    c.advance(110)  # 300 s after the taint: deleted, stuck Terminating on the stopped node
    for n in on_n0:
        p = c.store.get("Pod", "default", n)
        assert p["metadata"]["deletionTimestamp"]
        target = next(x for x in p["status"]["conditions"] if x["type"] == "DisruptionTarget")
        assert target["reason"] == "DeletionByTaintManager"
    assert "Marking for deletion Pod default/" + on_n0[0] in c.events("TaintManagerEviction")
    live = pods(c, app="web")
    assert len(live) == 4 and {p["spec"]["nodeName"] for p in live} == {"n1"}
    c.store.mutate("Node", "", "n0", lambda o: {**o, "metadata": {**o["metadata"], "annotations": {}}})
    c.settle()
    c.advance(5)
    n0 = c.store.get("Node", "", "n0")
    assert not n0["spec"].get("taints")
    assert next(x for x in n0["status"]["conditions"] if x["type"] == "Ready")["status"] == "True"
    assert all(c.store.try_get("Pod", "default", n) is None for n in on_n0)  # the kubelet confirmed them


@pytest.mark.parametrize(
    ("indexes", "text"),
    [(set(), ""), ({0}, "0"), ({1, 2}, "1,2"), ({0, 1, 2, 3}, "0-3"), ({1, 3, 4, 5, 7, 8}, "1,3-5,7,8")],
)
def test_completed_indexes_are_written_as_upstream_intervals(indexes, text):
    from kubesched.controllers.job import _ranges

    assert _ranges(indexes) == text


@pytest.mark.parametrize(
    ("value", "total", "up", "down"),
    [(3, 10, 3, 3), ("25%", 10, 3, 2), ("100%", 7, 7, 7), ("33%", 3, 1, 0), ("0%", 5, 0, 0)],
)
def test_intstr_scaled_value(value, total, up, down):
    from kubesched.api.intstr import scaled_value

    assert (scaled_value(value, total, round_up=True), scaled_value(value, total, round_up=False)) == (up, down)
