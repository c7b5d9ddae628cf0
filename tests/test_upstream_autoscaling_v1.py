"""autoscaling/v1 HorizontalPodAutoscalers, judged against kube-apiserver v1.37.2: the same HPA
read through either version (the CPU target in v1's field, every other metric and the behavior in
the round-trip annotations), written through v1 (no metric: the CPU at 80%), and kubectl 1.32's
``autoscale``, which writes autoscaling/v1 (a 404 before)."""

from __future__ import annotations

import copy
import os
import subprocess
from typing import Any

import pytest
from tests.live import Server, kubectl_binaries, temp_home
from tests.upstream import ControlPlane

V1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
V2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
KUBECTL_132 = kubectl_binaries().get("1.32")
# written by the autoscaler controller, which runs beside kubesched's API server and not here
BY_THE_CONTROLLER = ("autoscaling.alpha.kubernetes.io/conditions", "autoscaling.alpha.kubernetes.io/current-metrics")

TWO: dict[str, Any] = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "two", "annotations": {"keep": "me"}},
    "spec": {
        "scaleTargetRef": REF,
        "minReplicas": 2,
        "maxReplicas": 5,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}},
            },
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
            },
            {
                "type": "Pods",
                "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}},
            },
            {
                "type": "External",
                "external": {
                    "metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
                    "target": {"type": "Value", "value": "30"},
                },
            },
            {
                "type": "Object",
                "object": {
                    "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "s"},
                    "metric": {"name": "hits"},
                    "target": {"type": "Value", "value": "5"},
                },
            },
        ],
        "behavior": {
            "scaleDown": {
                "stabilizationWindowSeconds": 60,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 30}],
            }
        },
    },
}


def v1(name: str, cpu: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"scaleTargetRef": REF, "maxReplicas": 4}
    if cpu is not None:
        spec["targetCPUUtilizationPercentage"] = cpu
    return {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name}, "spec": spec}


def seen(obj: dict[str, Any]) -> dict[str, Any]:
    """What must agree: the object without its server-made metadata and status."""
    out = copy.deepcopy(obj)
    meta = out.get("metadata") or {}
    for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"):
        meta.pop(key, None)
    out.pop("status", None)
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in BY_THE_CONTROLLER}
    meta.pop("annotations", None)
    if annotations:
        meta["annotations"] = annotations
    return out


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory):
    plane = ControlPlane(tmp_path_factory.mktemp("upstream-hpa")).start()
    server = Server(tmp_path_factory.mktemp("kubesched-hpa") / "data").start()
    try:
        yield plane, server
    finally:
        server.stop()
        plane.stop()


def test_one_hpa_through_both_versions_as_kube_apiserver_converts_it(sides) -> None:
    answers = []
    for side in sides:
        steps: list[Any] = [side.request("POST", V2, copy.deepcopy(TWO))[0]]
        steps.append(seen(side.request("GET", V1 + "/two")[1]))
        steps.append(side.request("POST", V1, v1("one", 60))[0])
        steps.append(side.request("POST", V1, v1("bare", None))[0])
        steps.append(seen(side.request("GET", V2 + "/one")[1]))
        steps.append(seen(side.request("GET", V2 + "/bare")[1]))
        steps.append(seen(side.request("GET", V1 + "/bare")[1]))
        current = side.request("GET", V1 + "/two")[1]
        current["spec"]["maxReplicas"] = 9
        steps.append(side.request("PUT", V1 + "/two", current)[0])
        steps.append(seen(side.request("GET", V2 + "/two")[1]))
        answers.append(steps)
    theirs, ours = answers
    for i, (want, got) in enumerate(zip(theirs, ours, strict=True)):
        assert got == want, i
    assert theirs[1]["spec"]["targetCPUUtilizationPercentage"] == 50
    assert "autoscaling.alpha.kubernetes.io/metrics" in theirs[1]["metadata"]["annotations"]
    assert theirs[-1]["spec"]["maxReplicas"] == 9 and len(theirs[-1]["spec"]["metrics"]) == 5


@pytest.mark.skipif(KUBECTL_132 is None, reason="no kubectl 1.32 on this machine")
def test_kubectl_132_autoscale_writes_autoscaling_v1(sides) -> None:
    """kubectl 1.32 writes the HPA through autoscaling/v1; both servers store the same one."""
    got = []
    for side in sides:
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "scaled"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "scaled"}},
                "template": {
                    "metadata": {"labels": {"app": "scaled"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                },
            },
        }
        assert side.request("POST", "/apis/apps/v1/namespaces/default/deployments", deployment)[0] == 201
        env = {**os.environ, "HOME": temp_home(), "KUBECONFIG": str(side.kubeconfig)}
        done = subprocess.run(
            [str(KUBECTL_132), "autoscale", "deployment", "scaled", "--cpu-percent=50", "--min=2", "--max=7"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "autoscaled" in done.stdout
        got.append(seen(side.request("GET", V2 + "/scaled")[1]))
    theirs, ours = got
    assert ours == theirs
    assert theirs["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 50


def test_watchers_of_either_version_each_get_their_own(sides) -> None:
    """A watch line is encoded once per event and version: a v1 watcher and a v2 watcher of the
    same HPA each get it in their version (they shared one line before, whichever came first)."""
    import json as json_module
    import threading
    import time

    _, server = sides
    lines: dict[str, bytes] = {}

    def watch(path: str) -> None:
        lines[path] = server.request("GET", f"{path}?watch=1&timeoutSeconds=3", raw=True)[1]

    threads = [threading.Thread(target=watch, args=(path,)) for path in (V1, V2)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    assert server.request("POST", V2, {**copy.deepcopy(TWO), "metadata": {"name": "watched"}})[0] == 201
    for t in threads:
        t.join(timeout=30)
    for path, version in ((V1, "autoscaling/v1"), (V2, "autoscaling/v2")):
        events = [json_module.loads(x) for x in lines[path].splitlines() if x.strip()]
        watched = [e["object"] for e in events if e["object"]["metadata"]["name"] == "watched"]
        assert watched and all(o["apiVersion"] == version for o in watched), (path, watched)
