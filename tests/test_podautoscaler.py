"""HorizontalPodAutoscalers (autoscaling/v2) on the cluster's clock: a Deployment whose pods use
twice their CPU request (``kubesched.io/cpu-usage``) against a 50 % target grows as upstream's
controller grows it (at most double or four more per 15 s period, up to maxReplicas), shrinks only
once the five-minute downscale window has passed, and the autoscaler's status, conditions, events
and ``kubectl get hpa`` row say so; ``kubectl top`` reads the same usage."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from helpers import make_node
from live import Server, kubectl_binaries, temp_home, wait_for

BINARIES = kubectl_binaries()
KUBECTL = BINARIES.get("1.37") or next(iter(BINARIES.values()), None)


def deployment(usage: str, replicas: int = 2) -> dict[str, Any]:
    container = {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"kubesched.io/cpu-usage": usage}},
                "spec": {"containers": [container]},
            },
        },
    }


def autoscaler(max_replicas: int = 10) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": max_replicas,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
        },
    }


def test_scale_up_in_limited_steps_then_down_after_the_window() -> None:
    from kubesched.testing import Cluster

    cluster = Cluster(*(make_node(f"n{i}", cpu="8") for i in range(3)), workloads=True)
    cluster.create(deployment("200m"), autoscaler())
    cluster.settle()

    def replicas() -> int:
        return int(cluster.store.get("Deployment", "default", "web")["spec"]["replicas"])

    assert replicas() == 2
    cluster.advance(15)  # 200 % of request against 50 %: 8 wanted, 2 × 2 or 2 + 4 = 6 allowed
    assert replicas() == 6
    hpa = cluster.store.get("HorizontalPodAutoscaler", "default", "web")
    assert hpa["spec"]["minReplicas"] == 1  # defaulted
    conditions = {c["type"]: (c["status"], c["reason"]) for c in hpa["status"]["conditions"]}
    assert conditions == {
        "AbleToScale": ("True", "SucceededRescale"),
        "ScalingActive": ("True", "ValidMetricFound"),
        "ScalingLimited": ("True", "ScaleUpLimit"),
    }
    assert hpa["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 200
    cluster.advance(15)  # 6 running at 200 %: 24 wanted, capped at maxReplicas
    assert replicas() == 10
    assert "New size: 6; reason: cpu resource utilization (percentage of request) above target" in cluster.events(
        "SuccessfulRescale"
    )
    # the load falls to 10 %: 2 pods suffice, but the last five minutes' highest recommendation holds
    cluster.store.mutate(
        "Deployment",
        "default",
        "web",
        lambda d: {**d, "spec": {**d["spec"], "template": deployment("10m")["spec"]["template"]}},
    )
    cluster.settle()
    cluster.advance(120)
    assert replicas() == 10
    cluster.advance(300)
    assert replicas() == 2
    assert "New size: 2; reason: All metrics below target" in cluster.events("SuccessfulRescale")


def test_a_missing_target_is_said() -> None:
    from kubesched.testing import Cluster

    cluster = Cluster(make_node("n0"), workloads=True)
    cluster.create(autoscaler())
    cluster.settle()
    cluster.advance(15)
    hpa = cluster.store.get("HorizontalPodAutoscaler", "default", "web")
    (condition,) = hpa["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == ("AbleToScale", "False", "FailedGetScale")
    assert condition["message"] == (
        'the HPA controller was unable to get the target\'s current scale: deployments "web" not found'
    )


def test_two_autoscalers_of_one_deployment_scale_nothing_and_say_why() -> None:
    """Two HPAs whose targets select the same pods (they flapped the Deployment 2 <-> 6 between
    them): neither scales, each says AmbiguousSelector, as upstream's controller does."""
    from kubesched.testing import Cluster

    cluster = Cluster(*(make_node(f"n{i}", cpu="8") for i in range(3)), workloads=True)
    other = autoscaler(max_replicas=3)
    other["metadata"]["name"] = "web-too"
    other["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] = 400
    cluster.create(deployment("200m"), autoscaler(), other)
    cluster.settle()
    for _ in range(4):
        cluster.advance(15)
        assert int(cluster.store.get("Deployment", "default", "web")["spec"]["replicas"]) == 2
    for name in ("web", "web-too"):
        hpa = cluster.store.get("HorizontalPodAutoscaler", "default", name)
        active = next(c for c in hpa["status"]["conditions"] if c["type"] == "ScalingActive")
        assert (active["status"], active["reason"]) == ("False", "AmbiguousSelector")
        assert active["message"] == (
            "pods by selector app=web are controlled by more than one HPA (e.g. [default/web default/web-too])"
        )
    assert cluster.events("AmbiguousSelector")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    s = Server(tmp_path_factory.mktemp("hpa") / "data", command="up", nodes=2).start()
    try:
        yield s
    finally:
        s.stop()


@pytest.mark.skipif(KUBECTL is None, reason="no kubectl (scripts/build_upstream.sh builds v1.37.2)")
def test_kubectl_autoscale_and_top(server: Server) -> None:
    env = {"HOME": temp_home(), "KUBECONFIG": str(server.kubeconfig), "PATH": "/usr/bin:/bin"}

    def kubectl(*args: str) -> list[list[str]]:
        done = subprocess.run([str(KUBECTL), *args], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        return [line.split() for line in done.stdout.splitlines()]

    assert server.request("POST", "/apis/apps/v1/namespaces/default/deployments", deployment("150m", 1))[0] == 201
    kubectl("autoscale", "deployment", "web", "--cpu-percent=50", "--min=1", "--max=3")
    # TARGETS reads "cpu: 150%/50%": two words once split
    rows = wait_for(
        lambda: (r := kubectl("get", "hpa", "web")) and r[1][2:5] == ["cpu:", "150%/50%", "1"] and r, timeout=40
    )
    assert rows[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert rows[1][:2] == ["web", "Deployment/web"] and rows[1][5] == "3"
    top = wait_for(lambda: [r for r in kubectl("top", "pod", "-l", "app=web")[1:] if r], timeout=30)
    assert all(r[1] == "150m" for r in top)


def test_a_malformed_autoscaler_is_logged_and_the_others_go_on() -> None:
    """One autoscaler whose target utilization is not a number (a store written past validation):
    its error is counted against it and retried; the other autoscaler still scales its Deployment."""
    from kubesched.testing import Cluster

    cluster = Cluster(*(make_node(f"n{i}", cpu="8") for i in range(2)), workloads=True)
    bad = autoscaler()
    bad["metadata"]["name"] = "a-bad"
    bad["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] = "lots"
    bad["spec"]["scaleTargetRef"]["name"] = "other"  # its own Deployment: two on one are ambiguous
    other = deployment("200m")
    other["metadata"]["name"] = "other"
    other["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    other["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    cluster.create(deployment("200m"), other, bad, autoscaler())
    cluster.settle()
    cluster.advance(15)
    assert int(cluster.store.get("Deployment", "default", "web")["spec"]["replicas"]) == 6
    assert cluster.controllers is not None
    state = cluster.controllers.health.loops["horizontal-pod-autoscaler-controller"]
    assert state.errors >= 1 and state.last_error.startswith("HorizontalPodAutoscaler default/a-bad: ValueError")
