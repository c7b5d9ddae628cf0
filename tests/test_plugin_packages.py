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
