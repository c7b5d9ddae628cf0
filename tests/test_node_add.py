"""``kubesched up`` on an empty cluster makes three hollow nodes and says so in its first line;
``kubesched node add`` makes more, by name, by count after the highest node-N, or from a Node
template, and refuses a name that is taken with the API server's message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from live import free_port, wait_for

KUBESCHED = [sys.executable, "-m", "kubesched"]
TEMPLATE = Path(__file__).resolve().parents[1] / "examples" / "planning" / "m5-2xlarge.yaml"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("nodeadd")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [*KUBESCHED, "up", "--data-dir", str(tmp / "data"), "--port", str(free_port()), "--ui-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().rstrip()
        yield first, tmp / "data" / "kubeconfig"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def node_cmd(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KUBESCHED, "node", *args, "--kubeconfig", str(kubeconfig)], capture_output=True, text=True, timeout=60
    )


def names(kubeconfig: Path) -> list[str]:
    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
    return sorted(n.metadata.name for n in api.list_node().items)


def test_up_says_it_made_three_nodes(cluster) -> None:
    first, kubeconfig = cluster
    assert first.endswith("; 3 hollow nodes of 4 CPU, 32Gi (node-0 to node-2), `kubesched node add` makes more")
    assert names(kubeconfig) == ["node-0", "node-1", "node-2"]


def test_node_add(cluster) -> None:
    _, kubeconfig = cluster
    one = node_cmd(kubeconfig, "add")
    assert (one.returncode, one.stdout) == (0, "node/node-3 created\n")
    two = node_cmd(kubeconfig, "add", "--count", "2")
    assert two.stdout.splitlines() == ["node/node-4 created", "node/node-5 created"]
    big = node_cmd(kubeconfig, "add", "big-1", "--template", str(TEMPLATE))
    assert big.returncode == 0, big.stderr
    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
    node = api.read_node("big-1")
    assert node.status.allocatable["cpu"] == "8" and node.metadata.labels["kubernetes.io/hostname"] == "big-1"
    assert node.metadata.labels["node.kubernetes.io/instance-type"] == "m5.2xlarge"
    wait_for(
        lambda: any(c.type == "Ready" and c.status == "True" for c in (api.read_node("big-1").status.conditions or []))
    )
    taken = node_cmd(kubeconfig, "add", "node-0")
    assert taken.returncode == 2
    assert taken.stderr.strip().endswith('nodes "node-0" already exists')
    assert names(kubeconfig) == ["big-1", "node-0", "node-1", "node-2", "node-3", "node-4", "node-5"]


def test_the_node_commands_start_without_the_scheduler() -> None:
    """``kubesched node add/stop/start`` make a request or two: they import the client and the
    hollow node's shape, never the scheduler (whose imports made each take over a second)."""
    probe = (
        "import sys, kubesched.cli.cmd_node, kubesched.app.nodes; "
        "print(sorted(m for m in sys.modules if m.startswith(('kubesched.scheduler', 'kubesched.app.scheduler'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
