"""Plugins shipped as Python packages: ``examples/plugins`` installed with pip (into a scratch
directory on PYTHONPATH) is found through its ``kubesched.plugins`` entry points by ``kubesched
simulate``; clashing names and broken packages are one clear line each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.live import KUBESCHED

ROOT = Path(__file__).resolve().parent.parent
CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - plugins:
      filter: {enabled: [{name: AvoidNodeLabel}]}
      score: {enabled: [{name: PreferNodeLabel, weight: 10}]}
    pluginConfig:
      - {name: PreferNodeLabel, args: {key: disk, values: [ssd]}}
      - {name: AvoidNodeLabel, args: {key: maintenance, value: "true"}}
"""
CLUSTER = """apiVersion: v1
kind: Node
metadata: {name: a, labels: {maintenance: "true"}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: b, labels: {disk: ssd}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: c}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: default}
spec: {containers: [{name: c, image: i, resources: {requests: {cpu: 100m}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: p2, namespace: default}
spec: {containers: [{name: c, image: i, resources: {requests: {cpu: 100m}}}]}
"""


def simulate(tmp_path: Path, site: Path, config: str = CONFIG) -> subprocess.CompletedProcess[str]:
    (tmp_path / "config.yaml").write_text(config)
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(
        [
            *KUBESCHED,
            "simulate",
            "--config",
            str(tmp_path / "config.yaml"),
            "--output",
            "json",
            str(tmp_path / "cluster.yaml"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(ROOT / "examples" / "plugins"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return target


def test_an_installed_plugin_package_is_found_by_name(tmp_path, site):
    out = simulate(tmp_path, site)
    assert out.returncode == 0, out.stderr
    pods = {p["name"]: p["nodeName"] for p in json.loads(out.stdout)["pods"]}
    assert pods == {"p1": "b", "p2": "b"}  # a is filtered out, b preferred


def test_without_the_package_the_plugin_name_is_unknown(tmp_path):
    out = simulate(tmp_path, tmp_path / "empty")
    assert out.returncode == 2
    assert 'plugin "AvoidNodeLabel" does not exist' in out.stderr and "Traceback" not in out.stderr


def _fake_dist(site: Path, dist: str, entry: str) -> None:
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[kubesched.plugins]\n{entry}\n")


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        (
            [("shadow", "NodeResourcesFit = shadow:Fit")],
            'plugin "NodeResourcesFit" of package "shadow" has the name of an in-tree plugin',
        ),
        ([("one", "Same = one:P"), ("two", "Same = two:P")], 'plugin "Same" is provided by two packages'),
        (
            [("broken", "Broken = no_such_module:P")],
            'cannot load plugin "Broken" (no_such_module:P) of package "broken"',
        ),
    ],
)
def test_clashes_and_broken_packages_are_one_line(tmp_path, entries, message):
    site = tmp_path / "site"
    for dist, entry in entries:
        _fake_dist(site, dist, entry)
    config = CONFIG.replace("AvoidNodeLabel}]", "Broken}]") if "Broken" in message else CONFIG
    out = simulate(tmp_path, site, config)
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_plugin_reads_its_own_custom_resource_under_kubesched_up(tmp_path, site):
    """examples/crd as a user runs it: ``kubesched up`` with the installed example package, the
    PodGroup CRD applied with kubectl, pods of a group held until their PodGroup exists."""
    from kubernetes import client, config
    from tests.live import UPSTREAM_KUBECTL, Server, wait_for

    example = ROOT / "examples" / "crd"
    server = Server(
        tmp_path / "data",
        command="up",
        nodes=1,
        args=["--config", str(example / "config.yaml")],
        env={"PYTHONPATH": str(site)},
    ).start()
    try:

        def kubectl(*args: str) -> str:
            out = subprocess.run(
                [str(UPSTREAM_KUBECTL), "--kubeconfig", str(server.kubeconfig), *args],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert out.returncode == 0, out.stderr
            return out.stdout

        assert "customresourcedefinition.apiextensions.k8s.io/podgroups.scheduling.x-k8s.io created" in kubectl(
            "apply", "-f", str(example / "podgroup-crd.yaml")
        )
        # (scheduling.k8s.io has a PodGroup too: the group's version names this one)
        explained = kubectl("explain", "podgroups.spec.minMember", "--api-version=scheduling.x-k8s.io/v1alpha1")
        assert "The least number of pods that must run at once." in explained
        kubectl("apply", "-f", str(example / "training.yaml"))
        events = lambda: kubectl("get", "events", "--field-selector", "reason=FailedScheduling", "-o", "name")  # noqa: E731
        wait_for(lambda: len(events().split()) == 2)
        assert 'PodGroup "default/training" not found' in kubectl(
            "get", "events", "--field-selector", "reason=FailedScheduling"
        )
        kubectl("apply", "-f", str(example / "podgroup.yaml"))
        wait_for(
            lambda: kubectl("get", "pods", "-o", "jsonpath={.items[*].spec.nodeName}").split() == ["node-0", "node-0"]
        )
        table = kubectl("get", "pg").splitlines()
        assert table[0].split() == ["NAME", "MINMEMBER", "PHASE", "AGE"]
        assert table[1].split()[:2] == ["training", "2"]
        # the official Python client reads it as any custom object
        api = client.CustomObjectsApi(config.new_client_from_config(str(server.kubeconfig)))
        group = api.get_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", "default", "podgroups", "training")
        assert group["spec"] == {"minMember": 2, "scheduleTimeoutSeconds": 60}
        bad = {**group, "metadata": {"name": "bad"}, "spec": {"minMember": 0}}
        with pytest.raises(client.ApiException) as refused:
            api.create_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", "default", "podgroups", bad)
        assert refused.value.status == 422
        assert (
            "spec.minMember in body should be greater than or equal to 1" in json.loads(refused.value.body)["message"]
        )
    finally:
        server.stop()
