"""Whole histories, not snapshots, judged by upstream's binaries: random histories
(``tests/random_histories.py``: Jobs' pods that finish, pods deleted and terminating, preemption
whose victims take time to go, nodes cordoned, tainted, NotReady, deleted and back, pods placed
by others, some on a node that is gone) replayed on kube-apiserver v1.37.2 for kube-scheduler
v1.37.2 and for ``kubesched scheduler`` side by side (``tests/histories.py``). After every step,
every pod of the history must be in the same state on both sides: bound or not, nominated where,
terminating or not, and its PodScheduled message word for word. ``scripts/histories.py`` runs
thousands; this bounded run is part of the test command."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from tests.histories import HISTORY_SETTINGS, Replay, difference, nominations, one_retry_apart, prepare
from tests.live import Server
from tests.random_histories import History, Step, make_history, shrunk
from tests.upstream import ControlPlane, both_schedulers

SEED = 66
HISTORIES = 6


# what ``kubesched up`` runs beside its scheduler for the histories: no node lifecycle, pod garbage
# collector, disruption or resource claim controller, as kube-apiserver runs none beside
# kube-scheduler here (the histories' own steps do their work: taints, budgets' verdicts, claims
# released), and no hollow kubelet (the kubelet step stops terminating pods)
UP_ARGS = ["--no-kubelet", "--controllers", "*,-node-lifecycle,-pod-garbage-collector,-disruption,-resourceclaim"]
UP_HISTORIES = 2


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory):
    """A kube-apiserver v1.37.2 per side: kube-scheduler's and kubesched's, so that neither
    scheduler sees the other side's pods (a victim deleted on one side would requeue the
    other's preemptor)."""
    root = tmp_path_factory.mktemp("histories")
    planes: dict[str, ControlPlane] = {}
    try:
        for side, folder in (("up", "upstream"), ("ks", "kubesched")):  # one after the other: their ports apart
            planes[side] = ControlPlane(root / folder).start()
            prepare(planes[side])
        with both_schedulers(planes["up"], root, HISTORY_SETTINGS, ours_on=planes["ks"]):
            yield planes
    finally:
        for p in planes.values():
            p.stop()


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory):
    """``kubesched up``, its embedded API server and scheduler, set as the histories' schedulers."""
    root = tmp_path_factory.mktemp("histories-up")
    config = root / "kubesched.yaml"
    header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    config.write_text(header + HISTORY_SETTINGS)
    (root / "up").mkdir()
    server = Server(root / "up", command="up", args=[*UP_ARGS, "--config", str(config), "--no-results"]).start()
    try:
        prepare(server)
        yield server
    finally:
        server.stop()


def test_both_schedulers_agree_after_every_step_of_random_histories(plane):
    """The histories replay side by side; one that disagrees is replayed again alone (under a
    number of its own), and only a disagreement it shows alone fails the test: beside other
    histories, their events requeue its pods at moments the two schedulers see apart, which the
    large run (scripts/histories.py) reports and docs/fidelity.md counts."""
    histories = [make_history(SEED * 1000 + i) for i in range(HISTORIES)]
    replays = [Replay(plane, h, SEED * 1000 + i) for i, h in enumerate(histories)]
    with ThreadPoolExecutor(len(replays)) as pool:
        found = list(pool.map(Replay.run, replays))
    for r in replays:
        r.clean()
    disagreements = []
    for i, (why, history) in enumerate(zip(found, histories, strict=True)):
        if not why:
            continue
        alone = Replay(plane, history, SEED * 1000 + 500 + i)
        try:
            again = alone.run()
        finally:
            alone.clean()
        if again:
            disagreements.append(f"{again}\n  beside the others: {why}\n  {history}")
        else:
            print(f"beside the others only: {why}")
    assert not disagreements, "\n".join(disagreements)
    # the histories did what they are for: pods finished, were terminating, were preempted
    steps = [s.op for h in histories for s in h.steps]
    assert {"probe", "run", "kubelet", "terminate"} <= set(steps)
    assert any(s.startswith("finish-") for s in steps)


def test_histories_through_kubesched_up_agree_with_kube_scheduler(plane, up):
    """The same histories with kubesched's side on ``kubesched up`` (its own API server, the
    scheduler inside it) and upstream's on kube-apiserver with kube-scheduler: every step alike,
    and every FailedScheduling event."""
    histories = [make_history(SEED * 1000 + 700 + i) for i in range(UP_HISTORIES)]
    replays = [Replay({"up": plane["up"], "ks": up}, h, SEED * 1000 + 700 + i) for i, h in enumerate(histories)]
    with ThreadPoolExecutor(len(replays)) as pool:
        found = list(pool.map(Replay.run, replays))
    for r in replays:
        r.clean()
    disagreements = [f"{why}\n  {h}" for why, h in zip(found, histories, strict=True) if why]
    assert not disagreements, "\n".join(disagreements)
    assert sum(len(h.steps) for h in histories) >= 12


RUN = {"cpu": "1500m", "priority": "low", "port": False}


def scripted(*steps: Step, nodes: int = 1) -> History:
    return History([{"name": f"n{i}", "cpu": "2", "pods": "110"} for i in range(nodes)], list(steps))


def test_a_finished_jobs_pod_frees_its_node_for_both(plane):
    """The issue's first report, judged by both: a pod that fits only in the room a finished
    pod held is scheduled as soon as it finishes."""
    history = scripted(
        Step("run", "job", {"name": "job", "node": "n0", **RUN}),
        Step("probe", "p", {"name": "p", "node": "n0", "cpu": "1", "priority": "low", "port": False}),
        Step("finish-Succeeded", "job"),
    )
    replay = Replay(plane, history, 9001)
    try:
        assert replay.run() == ""
        before, after = replay.observed[1]["ks"]["p"], replay.observed[2]["ks"]["p"]
        assert before[0] == "" and before[4].startswith("0/* nodes are available: 1 Insufficient cpu")
        assert after[0] == "n0"
    finally:
        replay.clean()


def test_preemption_waits_for_its_terminating_victim_on_both(plane):
    """A high-priority pod preempts; its victim terminates slowly (no kubelet stops it), so the
    preemptor stays nominated (nothing that happens meanwhile is an event that retries it); once
    the kubelet step removes the victim it binds there."""
    history = scripted(
        Step("run", "victim", {"name": "victim", "node": "n0", **RUN}),
        Step("probe", "boss", {"name": "boss", "node": "n0", "cpu": "1", "priority": "high", "port": False}),
        Step("kubelet"),
    )
    replay = Replay(plane, history, 9002)
    try:
        assert replay.run() == ""
        victim, boss = replay.observed[1]["ks"]["victim"], replay.observed[1]["ks"]["boss"]
        assert victim[3] is True  # terminating
        assert boss[:2] == ("", "n0")
        assert boss[4].endswith("preemption: found a potential placement for pod on node n0, preempting 1 victims")
        assert replay.observed[2]["ks"]["boss"][0] == "n0"
        assert nominations(replay, "ks")["boss"] == nominations(replay, "up")["boss"] == ["n0"]
    finally:
        replay.clean()


def test_with_more_workers_than_histories_each_history_stays_its_own():
    """The generator: histories are reproducible from their seed, only pods created and not yet
    deleted are finished, deleted or rolled out, and the life of a cluster is drawn: rollouts,
    budgets, classes added, claims released."""
    ops: set[str] = set()
    for i in range(300):
        a, b = make_history(i), make_history(i)
        assert str(a) == str(b)
        alive: set[str] = set()
        for s in a.steps:
            ops.add(s.op)
            if s.op in ("run", "probe", "add-class"):
                assert s.target not in alive
                alive.add(s.target)
            elif s.op.startswith("finish-"):
                assert s.target in alive
            elif s.op == "terminate":
                assert s.target in alive
                alive.discard(s.target)
            elif s.op in ("pdb", "delete-pdb"):
                assert s.target in ("a", "b")
    assert {"add-class", "pdb", "delete-pdb", "release", "kubelet", "ungate", "recreate-node"} <= ops
    claims = [s for i in range(300) for s in make_history(i).steps if s.pod.get("claim")]
    assert claims and all(s.op in ("probe", "add-class") for s in claims)


def test_a_seeds_history_replays_through_hypothesis_and_shrinks():
    """``--shrink``'s machinery without the binaries (the judge here is a stand-in that calls a
    history disagreeing when a pod asks for a GPU): hypothesis first replays the seed's own history,
    then shrinks it to one that still disagrees, smaller in steps."""
    number = next(i for i in range(100) if any(s.pod.get("claim") for s in make_history(i).steps))

    def judge(history: History) -> str:
        return "a claim" if any(s.pod.get("claim") for s in history.steps) else ""

    found = shrunk(number, judge, seconds=60)
    assert str(found[0][0]) == str(make_history(number))
    smallest = found[-1][0]
    assert judge(smallest) and len(smallest.steps) < len(make_history(number).steps)
    assert len(smallest.steps) <= 2  # a pod placed by another component, and the one with the claim


def test_a_preemptor_one_attempt_later_is_the_same_state():
    """The one allowance the comparison makes (``one_retry_apart``): a preemptor nominated to n1
    whose victim still terminates reads ``found a potential placement`` after its preemption and
    ``not eligible`` after the next attempt; anything else that differs is a disagreement."""
    placed = (
        "0/* nodes are available: 1 Insufficient cpu, * node(s) didn't satisfy plugin(s) [NodeAffinity]."
        " preemption: found a potential placement for pod on node n1, preempting 1 victims"
    )
    waiting = (
        "0/* nodes are available: 1 Insufficient cpu, * node(s) didn't satisfy plugin(s)"
        " [NodeAffinity NodeResourcesFit]. preemption: not eligible due to a terminating pod on the nominated node."
    )
    a, b = ("", "n1", "Pending", False, placed), ("", "n1", "Pending", False, waiting)
    assert one_retry_apart(a, b) and one_retry_apart(b, a)
    assert difference({"p": a}, {"p": b}) == ""
    assert not one_retry_apart(a, ("", "n0", "Pending", False, waiting))  # another node
    other = waiting.replace("1 Insufficient cpu", "1 Too many pods")
    assert difference({"p": a}, {"p": ("", "n1", "Pending", False, other)}).startswith("p message:")
