"""``kubesched replay --gangs same-arrival``: a trace's multi-pod jobs (pods arriving the same second
with the same requests) scheduled all-or-nothing as PodGroup gangs, in both replay modes, and
``kubesched sweep --gangs`` comparing GPU allocation with and without."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_trace import POD_HEADER, write_nodes
from kubesched.errors import InputError
from kubesched.replay.gangs import units
from kubesched.replay.runner import replay
from kubesched.replay.trace import load_pods_csv

TWO_8GPU_NODES = [(96000, 393216, 8, "G2"), (96000, 393216, 8, "G2")]


def write(path: Path, rows: list[tuple[str, int, int, int, int]]) -> Path:
    """rows: (name, gpus, creation, deletion, cpu_milli)."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(POD_HEADER)
        for name, gpus, created, deleted, cpu in rows:
            w.writerow([name, cpu, 1024, gpus, 1000 if gpus else 0, "", "LS", "Running", created, deleted, created])
    return path


@pytest.fixture
def job_of_three(tmp_path: Path) -> tuple[Path, Path]:
    """Three 8-GPU workers arriving at t=10 (one job), and a lone 8-GPU pod at t=5 on a cluster
    of two 8-GPU nodes: after the lone pod one node is left, so the job cannot run whole."""
    nodes = write_nodes(tmp_path / "nodes.csv", TWO_8GPU_NODES)
    pods = write(
        tmp_path / "pods.csv",
        [
            ("lone", 8, 5, 1000, 4000),
            ("worker-0", 8, 10, 1000, 8000),
            ("worker-1", 8, 10, 1000, 8000),
            ("worker-2", 8, 10, 1000, 8000),
        ],
    )
    return nodes, pods


def test_units_group_same_arrival_and_shape(job_of_three):
    _, pods = job_of_three
    got = units(load_pods_csv(pods), "same-arrival", "openb")
    assert [(u.name, len(u.arrivals), u.pod_group is not None) for u in got] == [
        ("lone", 1, False),
        ("worker-0", 3, True),
    ]
    group = got[1].pod_group
    assert group is not None
    assert group["metadata"]["name"] == "gang-worker-0"
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert all(a.pod["spec"]["schedulingGroup"] == {"podGroupName": "gang-worker-0"} for a in got[1].arrivals)


def test_timed_replay_holds_the_gang_back(job_of_three):
    """Timed: without gangs one worker starts on the node the lone pod left free, holding its GPUs
    for nothing; as a gang no worker starts, and the gang waits until its pods leave."""
    nodes, pods = job_of_three
    plain = replay(str(pods), [str(nodes)], mode="timed", samples=10)
    ganged = replay(str(pods), [str(nodes)], mode="timed", samples=10, gangs="same-arrival")
    assert plain.summary["bound"] == 2  # the lone pod, and one worker on the other node
    assert ganged.summary["bound"] == 1
    assert ganged.summary["gangs"] == {
        "gangs": 1,
        "pods": 3,
        "admitted": 0,
        "failed": 0,
        "waiting": 1,
        "preempted": 0,
    }
    assert ganged.params["gangs"] == "same-arrival"


def test_arrivals_replay_drops_a_gang_whole(job_of_three):
    """The arrivals method tries each unit once: a gang that does not fit is dropped whole."""
    nodes, pods = job_of_three
    ganged = replay(str(pods), [str(nodes)], mode="arrivals", load=0, gangs="same-arrival", seed=1)
    g = ganged.summary["gangs"]
    assert (g["gangs"], g["pods"]) == (1, 3)
    assert g["admitted"] + g["failed"] == 1
    if g["failed"]:  # the lone pod came first: none of the workers run
        assert ganged.summary["bound"] == 1 and ganged.summary["failed"] == 3
    else:  # the gang came first: it cannot fit either (3 workers, 2 nodes)
        pytest.fail("a gang of three 8-GPU workers cannot fit two 8-GPU nodes")


def test_gangs_need_arrival_times(tmp_path):
    nodes = write_nodes(tmp_path / "nodes.csv", TWO_8GPU_NODES)
    pods = write(tmp_path / "pods.csv", [("a", 1, 0, 10, 1000), ("b", 1, 0, 10, 1000)])
    with pytest.raises(InputError, match="arrival times"):
        replay(str(pods), [str(nodes)], gangs="same-arrival")


def test_sweep_compares_with_and_without_gangs(job_of_three):
    """One command answers what all-or-nothing placement costs: a GANGS column, a row each."""
    nodes, pods = job_of_three
    done = subprocess.run(
        [
            sys.executable, "-m", "kubesched.cli", "sweep", str(pods), "--cluster", str(nodes),
            "--policies", "default", "--gangs", "none,same-arrival", "--seeds", "1", "--mode", "timed",
            "-o", "json", "-j", "1",
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["summary"]
    assert [(e["policy"], e["gangs"]) for e in summary] == [("default", "none"), ("default", "same-arrival")]
    runs = json.loads(done.stdout)["runs"]
    assert [r["gangsFailed"] for r in runs] == [None, 0]


def test_the_report_shows_the_gangs(job_of_three, tmp_path):
    from kubesched.report import write_replay_report

    nodes, pods = job_of_three
    result = replay(str(pods), [str(nodes)], mode="timed", samples=10, gangs="same-arrival")
    write_replay_report(result, str(tmp_path / "r.html"))
    html = (tmp_path / "r.html").read_text()
    assert "Gangs: admitted, failed (dropped), waiting at the end, preempted" in html
