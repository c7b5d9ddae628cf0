"""The scheduler's Prometheus metrics: upstream's names, labels and help, the values a known
simulation must produce, and /metrics on a running `kubesched up` (bearer token required)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import generate_latest

from kubesched.framework.interface import NodeVerdicts
from kubesched.framework.status import Code, Status
from kubesched.scheduler.metrics import SchedulerMetrics, _status_of, exponential_buckets
from kubesched.simulate.runner import simulate
from live import Server, wait_for

ROOT = Path(__file__).resolve().parent.parent


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample of the exposition text (labels in any order)."""
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        m = re.match(r"^([a-z_:]+)(?:\{(.*)\})? (\S+)$", line)
        if m is None or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if got == labels:
            return float(m.group(3))
    return None


def test_names_labels_and_buckets_are_upstreams():
    m = SchedulerMetrics()
    m.pod_scheduled("default-scheduler", 0.003)
    m.pod_unschedulable("default-scheduler", 0.5)
    m.pod_bound(3, 12.0)
    m.pod_bound(20, 0.02)
    m.preemption_victims.observe(3)
    m.queue_incoming.inc("active", "PodAdd")
    text = generate_latest(m.registry).decode()
    # the help starts with the stability level, as component-base writes it
    assert (
        "# HELP scheduler_schedule_attempts_total [STABLE] Number of attempts to schedule pods, by the result." in text
    )
    assert "# HELP scheduler_scheduling_algorithm_duration_seconds [BETA] Scheduling algorithm latency" in text
    assert "# HELP scheduler_pending_pods [STABLE] Number of pending pods, by the queue type." in text
    assert "# TYPE scheduler_schedule_attempts_total counter" in text
    # label names in Go's order (sorted), as client_golang writes them
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0' in text
    assert sample(text, "scheduler_schedule_attempts_total", profile="default-scheduler", result="unschedulable") == 1
    bounds = re.findall(r'scheduler_scheduling_attempt_duration_seconds_bucket\{(?:[^}]*,)?le="([^"]+)"[^}]*\}', text)
    assert [float(b) for b in bounds[: len(bounds) // 2]] == pytest.approx(
        [*exponential_buckets(0.001, 2, 15), float("inf")]
    )
    series = {"profile": "default-scheduler", "result": "scheduled"}
    name = "scheduler_scheduling_attempt_duration_seconds_bucket"
    assert sample(text, name, le="0.002", **series) == 0
    assert sample(text, name, le="0.004", **series) == 1  # 3 ms
    assert sample(text, name, le="+Inf", **series) == 1
    # the SLI's attempts label stops at "15+"
    assert sample(text, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="3") == 1
    assert sample(text, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="15+") == 1
    assert sample(text, "scheduler_pod_scheduling_attempts_bucket", le="4") == 1
    assert sample(text, "scheduler_preemption_victims_bucket", le="2") == 0
    assert sample(text, "scheduler_preemption_victims_bucket", le="4") == 1
    assert sample(text, "scheduler_queue_incoming_pods_total", event="PodAdd", queue="active") == 1
    # a histogram series made in advance but never observed is not exposed
    assert "scheduler_framework_extension_point_duration_seconds_bucket" not in text


def test_a_preemption_is_counted():
    r = simulate([str(ROOT / "examples" / "preemption")])
    m = r.metrics
    assert m["scheduleAttempts"] == {"scheduled/default-scheduler": 1.0, "unschedulable/default-scheduler": 1.0}
    assert m["preemptionAttempts"] == 1.0
    assert m["preemptionVictims"] == 2.0  # etl-1 and etl-2
    # the preemptor waited out the victims' 10 s grace period (virtual time): its SLI says so
    assert 10 <= m["podSchedulingSLISeconds"]["p99"] <= 10.24
    assert m["extensionPoints"]["PostFilter"]["count"] == 1
    assert m["extensionPoints"]["Filter"]["count"] >= 2


def test_metrics_endpoint_of_kubesched_up(tmp_path):
    s = Server(tmp_path / "data", command="up", nodes=2).start()
    try:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}]},
        }
        assert s.request("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
        assert wait_for(lambda: s.request("GET", "/api/v1/namespaces/default/pods/p")[1]["spec"].get("nodeName"), 20)

        def scheduled() -> float | None:
            code, body = s.request("GET", "/metrics", raw=True)
            assert code == 200
            return sample(
                body.decode(), "scheduler_schedule_attempts_total", profile="default-scheduler", result="scheduled"
            )

        assert wait_for(lambda: scheduled() == 1.0, 10)
        text = s.request("GET", "/metrics", raw=True)[1].decode()
        assert sample(text, "scheduler_pending_pods", queue="active") == 0
        assert sample(text, "scheduler_cache_size", type="nodes") == 2
        assert s.last_headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert s.request("GET", "/metrics", raw=True, token="")[0] == 401
    finally:
        assert s.stop() == 0


def test_simulate_json_carries_the_metrics_without_wall_time():
    import json
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "kubesched", "simulate", str(ROOT / "examples" / "preemption"), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["metrics"]["preemptionVictims"] == 2.0
    assert "attemptDurationSeconds" not in doc["metrics"] and "timing" not in doc
    assert {n["name"] for n in doc["nodes"]} == {"node-a", "node-b"}


@pytest.mark.parametrize(
    ("codes", "label"),
    [
        ([0, 0, 0], "Success"),
        ([0, 2, 0], "Unschedulable"),
        ([3, 2, 0], "UnschedulableAndUnresolvable"),
        ([2, 1, 3], "Error"),
    ],
)
def test_a_filter_plugins_verdicts_are_labelled_with_a_status_code(codes, label):
    """scheduler_plugin_execution_duration_seconds' status label of a vectorized Filter call is a
    Code's name (it was the verdict array printed, "[0 2 0]", before)."""
    verdicts = NodeVerdicts(np.array(codes, np.int8), 0, lambda _id: ("x",))
    assert _status_of(verdicts) == label
    assert _status_of(None) == "Success"
    assert _status_of((None, Status.of(Code.UNSCHEDULABLE, "no"))) == "Unschedulable"


def _cluster_metrics(pods: list[tuple[str, str]]) -> str:
    """The exposition text after scheduling ``pods`` (name, cpu) on two 2-CPU nodes in process.
    PodTopologySpread has no default constraints, so that the pods can be signed (batched)."""
    from kubesched.client import InProcessClient
    from kubesched.clock import VirtualClock
    from kubesched.cluster import admission
    from kubesched.cluster.store import Store
    from kubesched.scheduler.config import parse_config
    from kubesched.scheduler.scheduler import Scheduler

    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
                }
            ],
        }
    )

    store = Store(VirtualClock())
    admission.install(store)
    for i in range(2):
        cap = {"cpu": "2", "memory": "4Gi", "pods": "110"}
        store.create("Node", {"metadata": {"name": f"n{i}"}, "status": {"capacity": cap, "allocatable": cap}})
    sched = Scheduler(InProcessClient(store), config, store.clock)
    sched.start()
    for name, cpu in pods:
        container = {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}
        store.create("Pod", {"metadata": {"name": name, "namespace": "default"}, "spec": {"containers": [container]}})
    sched.process_events()
    while sched.schedule_one():
        sched.process_events()
    return generate_latest(sched.metrics.registry).decode()


def _point_count(text: str, point: str, status: str = "Success") -> float | None:
    return sample(
        text,
        "scheduler_framework_extension_point_duration_seconds_count",
        extension_point=point,
        profile="default-scheduler",
        status=status,
    )


def test_every_extension_point_is_observed_once_per_cycle_and_filter_once_per_search():
    """framework_extension_point_duration_seconds as upstream records it: each Run*Plugins call
    once, and Filter once per node search (``findNodesThatPassFilters``), not for the Filter
    runs Opportunistic Batching makes on the previous pod's node before it (three pods of one
    signature here: the second and third each check it)."""
    text = _cluster_metrics([("a", "100m"), ("b", "100m"), ("c", "100m")])
    for point in ("PreFilter", "Filter", "PreScore", "Score", "Reserve", "Permit", "PreBind", "Bind", "PostBind"):
        assert _point_count(text, point) == 3, point
    assert _point_count(text, "PostFilter") is None
    assert sample(text, "scheduler_batch_cache_flushed_total", profile="default-scheduler", reason="node_not_full")


def test_an_unschedulable_pods_cycle_is_labelled_by_what_each_point_returned():
    """No node has 3 CPUs: PreFilter and the search succeed (the nodes' rejections are not the
    search's status), PostFilter's preemption finds nothing (Unschedulable), and nothing after
    Filter runs."""
    text = _cluster_metrics([("big", "3")])
    assert _point_count(text, "PreFilter") == 1
    assert _point_count(text, "Filter") == 1
    assert _point_count(text, "PostFilter", "Unschedulable") == 1
    for point in ("PreScore", "Score", "Reserve", "Bind"):
        assert _point_count(text, point) is None, point


@pytest.mark.parametrize("sampled", [True, False])
def test_a_sampled_cycle_times_its_plugins_and_only_it(sampled: bool) -> None:
    """``ShouldRecordPluginMetrics``: the cycle's state says whether its plugin calls are timed
    (``plugin_execution_duration_seconds``); the plugins themselves are never wrapped."""
    from kubesched.testing import Cluster

    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]},
    }
    c = Cluster(node)
    c.sched.metrics._rng.random = lambda: 0.0 if sampled else 0.99  # type: ignore[method-assign]
    c.create(pod)
    c.settle()
    assert c.node_of("p") == "n1"
    timed = {(plugin, point) for plugin, point, _ in c.sched.metrics.plugin_duration.series}
    if sampled:
        assert {("NodeResourcesFit", "PreFilter"), ("NodeResourcesFit", "Filter"), ("DefaultBinder", "Bind")} <= timed
    else:
        assert timed == set()
    fwk = c.sched.profiles["default-scheduler"]
    assert all("filter_nodes" not in vars(p) and "pre_filter" not in vars(p) for p in fwk.plugins.values())


def test_the_algorithm_duration_is_observed_for_a_failed_attempt_too():
    """``scheduler_scheduling_algorithm_duration_seconds``: schedulingAlgorithm's deferred
    observation counts every attempt that ran the algorithm, a pod that fits nowhere too
    (filters, then PostFilter), as upstream's ``schedulingAlgorithm`` does."""
    from helpers import make_node, make_pod
    from kubesched.testing import Cluster

    c = Cluster(make_node("n1", cpu="1"))
    c.create(make_pod("fits", cpu="500m"), make_pod("too-big", cpu="2"))
    c.settle()
    assert c.node_of("fits") == "n1" and c.node_of("too-big") is None
    text = generate_latest(c.sched.metrics.registry).decode()
    assert sample(text, "scheduler_scheduling_algorithm_duration_seconds_count") == 2


def test_unschedulable_pods_are_counted_by_rejecting_and_gating_plugin_until_popped_again():
    """``scheduler_unschedulable_pods``: a pod counts under the plugins that rejected its last
    attempt, and a gated pod under its gating plugin (upstream's ``runPreEnqueuePlugin`` increments
    ``UnschedulableReason`` too), until the pod is popped again; a pod that fits is not counted."""
    from helpers import make_node, make_pod
    from kubesched.testing import Cluster

    gated = make_pod("gated", cpu="100m")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    c = Cluster(make_node("n1", cpu="1"))
    c.create(make_pod("fits", cpu="500m"), make_pod("too-big", cpu="2"), gated)
    c.settle()
    text = generate_latest(c.sched.metrics.registry).decode()
    profile = "default-scheduler"
    assert sample(text, "scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile=profile) == 1
    assert sample(text, "scheduler_unschedulable_pods", plugin="SchedulingGates", profile=profile) == 1
