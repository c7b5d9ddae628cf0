"""The FGD paper simulator's tie-break: its ``syncClusterResourceList`` renames the nodes (sorted by
name) with a ``%04d-`` prefix from ``rand.Perm``, drawn from the workload's seeded stream after the
workload's draws, and its ``selectHost`` keeps the smallest name among the best. Here both are
ported line by line and compared with kubesched's ``permutation`` tie-break."""

from __future__ import annotations

import csv
import random

import numpy as np
import pytest

from gpu_trace import write_nodes, write_pods
from kubesched.replay import trace
from kubesched.replay.runner import replay, tune
from kubesched.replay.tiebreak import go_perm, paper_names
from kubesched.scheduler.schedule_pod import Algorithm
from kubesched.testing import Cluster

pytest.importorskip(
    "kubesched_gpushare", reason="the plugins/gpushare package is not installed (pip install -e plugins/gpushare)"
)


class Scripted(random.Random):
    """A stream whose draws are given: ``randrange(k)`` returns the next scripted value."""

    def __init__(self, values: list[int]) -> None:
        super().__init__(0)
        self.values = list(values)

    def randrange(self, k, *args, **kwargs):  # type: ignore[override]
        v = self.values.pop(0)
        assert 0 <= v < k
        return v


def sync_cluster_resource_list(names: list[str], rng: random.Random) -> list[str]:
    """simulator.go, syncClusterResourceList, line by line: sort.Slice by name, rand.Perm, rename."""
    nodes = sorted(names)
    # rand.Perm(n): m := make([]int, n); for i: j := r.Intn(i + 1); m[i] = m[j]; m[j] = i
    random_index = [0] * len(nodes)
    for i in range(len(nodes)):
        j = rng.randrange(i + 1)
        random_index[i] = random_index[j]
        random_index[j] = i
    for i in range(len(random_index)):
        idx = random_index[i]
        nodes[i] = "%04d-" % idx + nodes[i]  # noqa: UP031 (Go's fmt.Sprintf("%04d-", idx))
    return nodes


def select_host(node_score_list: list[tuple[str, int]]) -> str:
    """The fork's genericScheduler.selectHost, line by line."""
    max_score = node_score_list[0][1]
    selected = node_score_list[0][0]
    for name, score in node_score_list[1:]:
        if score > max_score:
            max_score = score
            selected = name
        elif score == max_score and name < selected:
            selected = name
    return selected


def test_perm_is_gos_inside_out_shuffle() -> None:
    assert go_perm(Scripted([0, 0, 0, 0]), 4) == [3, 0, 1, 2]  # every draw 0
    assert go_perm(Scripted([0, 1, 2, 3]), 4) == [0, 1, 2, 3]  # every draw i
    assert go_perm(Scripted([0, 0, 1]), 3) == [1, 2, 0]
    p = go_perm(random.Random(7), 500)
    assert sorted(p) == list(range(500)) and p == go_perm(random.Random(7), 500)


def test_the_renaming_is_the_simulators(tmp_path) -> None:
    names = [f"openb-node-{i:04d}" for i in range(0, 240, 3)]
    random.Random(1).shuffle(names)
    renamed = sync_cluster_resource_list(names, random.Random(5))
    ours = paper_names(names, random.Random(5))
    assert sorted(ours.values()) == sorted(renamed)
    assert all(ours[n].endswith("-" + n) for n in names)


def test_select_host_equals_the_port_on_a_slice_of_a_trace(tmp_path) -> None:
    # nodes of a trace-shaped cluster, scores with many ties as the paper's integer scores have
    path = write_nodes(tmp_path / "nodes.csv")
    with path.open() as f:
        names = [row["sn"] for row in csv.DictReader(f)]
    c = Cluster(*[{"kind": "Node", "metadata": {"name": n}, "status": {"allocatable": {"cpu": "1"}}} for n in names])
    nodes = c.sched.cache.table
    rng = random.Random(42)
    renamed = sync_cluster_resource_list(names, random.Random(42))
    by_original = {r.split("-", 1)[1]: r for r in renamed}
    algo = Algorithm(0, random.Random(0))
    algo.picker.break_ties_by(paper_names(names, rng))
    draws = np.random.default_rng(3)
    for _ in range(300):
        k = int(draws.integers(2, len(names) + 1))
        feasible = np.sort(draws.choice(nodes.n, size=k, replace=False)).astype(np.int64)
        total = draws.integers(0, 4, size=k).astype(np.int64) * 10  # few distinct values: ties
        pick = nodes.names[int(feasible[algo.picker.select(nodes, feasible, total)])]
        scored = [(by_original[nodes.names[int(r)]], int(t)) for r, t in zip(feasible, total, strict=True)]
        expected = select_host(scored)
        assert by_original[pick] == expected


def _rename_cluster(src, dst, seed: int, pods_path, load: float):
    """The cluster CSV as the simulator would name it for ``seed``: the stream consumed by the
    workload's draws first, then the renaming."""
    with src.open() as f:
        rows = list(csv.DictReader(f))
    names = [r["sn"] for r in rows]
    arrivals = trace.load_workload(str(pods_path), trace.DEFAULT_NAMESPACE)
    capacity = sum(int(r["gpu"]) for r in rows) * 1000
    rng = random.Random(seed)
    tune(arrivals, capacity, load, rng)
    renamed = dict(zip(sorted(names), sync_cluster_resource_list(names, rng), strict=True))
    with dst.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({**r, "sn": renamed[r["sn"]]})
    return dst


@pytest.mark.parametrize("policy", ["GpuPacking", "FGD"])
def test_a_replay_breaks_ties_as_the_renamed_cluster_by_name(tmp_path, policy) -> None:
    nodes = write_nodes(tmp_path / "nodes.csv")
    pods = write_pods(tmp_path / "pods.csv", n=150, seed=11)
    renamed = _rename_cluster(nodes, tmp_path / "renamed.csv", 43, pods, 1.3)
    ours = replay(str(pods), [str(nodes)], mode="arrivals", policy=policy, seed=43)
    port = replay(str(pods), [str(renamed)], mode="arrivals", policy=policy, seed=43, tie_break="name")
    assert ours.params["tieBreak"] == "permutation"  # the default for the paper's policies
    assert ours.curve == port.curve and ours.summary["bound"] == port.summary["bound"]
    # each node's allocation at the end (the CSVs list the nodes in the same order)
    assert ours.nodes["allocatedPct"] == port.nodes["allocatedPct"]
    by_name = replay(str(pods), [str(nodes)], mode="arrivals", policy=policy, seed=43, tie_break="name")
    assert by_name.nodes["allocatedPct"] != ours.nodes["allocatedPct"]  # the tie-break decides placements


def test_kube_schedulers_profile_keeps_its_random_pick(tmp_path) -> None:
    nodes = write_nodes(tmp_path / "nodes.csv")
    pods = write_pods(tmp_path / "pods.csv", n=40, seed=2)
    assert replay(str(pods), [str(nodes)], mode="arrivals", seed=1).params["tieBreak"] == "random"
