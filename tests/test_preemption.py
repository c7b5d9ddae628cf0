"""DefaultPreemption: eligibility, victim selection with PDBs and reprieve, candidate choice,
and the whole flow on the embedded cluster (victims evicted with their grace period, the
preemptor bound on its nominated node)."""

from __future__ import annotations

import json
import math

import pytest

from helpers import make_node, make_pod, make_priority_class, pod
from kubesched.api.pod import pod_info_from
from kubesched.api.selectors import parse_label_selector
from kubesched.scheduler.preemption.candidates import MAX_INT32, Candidate, pick_one_node
from kubesched.scheduler.preemption.pdb import PDBInfo, violating
from kubesched.testing import Cluster

CLASSES = (
    make_priority_class("low", 10),
    make_priority_class("mid", 100),
    make_priority_class("high", 1000),
    make_priority_class("high-never", 1000, preemptionPolicy="Never"),
)
HOST = "kubernetes.io/hostname"


def node(name: str, cpu: str = "4") -> dict:
    return make_node(name, cpu=cpu, labels={HOST: name})


def running(name: str, node_name: str, cpu: str, cls: str = "low", grace: int = 30, labels: dict | None = None) -> dict:
    p = make_pod(name, cpu=cpu, node=node_name, priority_class=cls, spec={"terminationGracePeriodSeconds": grace})
    if labels:
        p["metadata"]["labels"] = labels
    return p


def pdb(name: str, match: dict, allowed: int) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": match}, "maxUnavailable": allowed},
    }


# -- the whole flow ------------------------------------------------------------------------------
def test_preemptor_evicts_the_fewest_and_binds_on_its_nominated_node() -> None:
    c = Cluster(*CLASSES, node("n1"), running("a", "n1", "1"), running("b", "n1", "2"), running("c", "n1", "1"))
    c.create(make_pod("hi", cpu="3", priority_class="high"))
    c.settle()
    hi = c.store.get("Pod", "default", "hi")
    assert hi["status"]["nominatedNodeName"] == "n1"
    # 3 cpu are needed: "b" (2) alone is not enough with 0 free, the reprieve keeps the one it can
    preempted = sorted(e for e in c.events("Preempted"))
    assert len(preempted) == 2
    assert all(e == f"Preempted by pod {hi['metadata']['uid']} on node n1" for e in preempted)
    assert c.sched.last_message["default/hi"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    c.advance(30)  # the victims' grace period
    assert c.node_of("hi") == "n1"
    remaining = {p["metadata"]["name"] for p in c.store.list("Pod")[0]}
    assert len(remaining & {"a", "b", "c"}) == 1


def test_victims_get_the_disruption_target_condition_and_terminate_on_the_virtual_clock() -> None:
    c = Cluster(*CLASSES, node("n1", cpu="2"), running("v", "n1", "2", grace=10))
    c.create(make_pod("hi", cpu="2", priority_class="high"))
    c.settle()
    v = c.store.get("Pod", "default", "v")
    assert v["metadata"].get("deletionTimestamp")
    cond = next(x for x in v["status"]["conditions"] if x["type"] == "DisruptionTarget")
    assert (cond["status"], cond["reason"]) == ("True", "PreemptionByScheduler")
    assert cond["message"] == "default-scheduler: preempting to accommodate a higher priority pod"
    c.advance(9)
    assert c.store.try_get("Pod", "default", "v") is not None and c.node_of("hi") is None
    c.advance(1)
    assert c.store.try_get("Pod", "default", "v") is None
    assert c.node_of("hi") == "n1"


def test_not_eligible_again_while_victims_terminate() -> None:
    c = Cluster(*CLASSES, node("n1", cpu="2"), running("v", "n1", "2", grace=600))
    c.create(make_pod("hi", cpu="2", priority_class="high"))
    c.settle()
    # the 5-minute flush retries the pod while its victim is still terminating
    for _ in range(11):
        c.advance(30)
    assert c.sched.last_message["default/hi"].endswith(
        "preemption: not eligible due to a terminating pod on the nominated node."
    )
    assert len(c.events("Preempted")) == 1


def test_preemption_policy_never() -> None:
    c = Cluster(*CLASSES, node("n1", cpu="2"), running("v", "n1", "2"))
    c.create(make_pod("hi", cpu="2", priority_class="high-never"))
    c.settle()
    assert c.sched.last_message["default/hi"] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    )
    assert c.events("Preempted") == []


def test_a_lower_priority_pod_cannot_take_the_room_made_for_a_nominated_one() -> None:
    # The preemptor backs off 10 s; its victim is gone after 5 s. A low pod arriving then sees
    # the free room but the nominated pod is counted there, so it must wait.
    cfg = {"podInitialBackoffSeconds": 10, "podMaxBackoffSeconds": 10}
    c = Cluster(*CLASSES, node("n1", cpu="2"), running("v", "n1", "2", grace=5), config=cfg)
    c.create(make_pod("hi", cpu="2", priority_class="high"))
    c.settle()
    c.advance(5)
    c.create(make_pod("thief", cpu="2", priority_class="mid"))
    c.settle()
    assert c.node_of("thief") is None
    assert c.sched.last_message["default/thief"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    c.advance(5)
    assert c.node_of("hi") == "n1"


def test_pdb_protected_pods_are_spared_when_another_node_allows_it() -> None:
    c = Cluster(
        *CLASSES,
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        running("guarded", "n1", "2", labels={"app": "db"}),
        running("free", "n2", "2", labels={"app": "web"}),
        pdb("db", {"app": "db"}, 0),
    )
    c.create(make_pod("hi", cpu="2", priority_class="high"))
    c.settle()
    assert c.store.get("Pod", "default", "hi")["status"]["nominatedNodeName"] == "n2"
    assert c.store.get("Pod", "default", "free")["metadata"].get("deletionTimestamp")
    assert not c.store.get("Pod", "default", "guarded")["metadata"].get("deletionTimestamp")


def test_simulate_lists_victims_in_deleted_pods(tmp_path) -> None:
    import yaml
    from click.testing import CliRunner

    from kubesched.cli import main

    docs = [*CLASSES, node("n1", cpu="2"), running("v", "n1", "2"), make_pod("hi", cpu="2", priority_class="high")]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    out = CliRunner().invoke(main, ["simulate", str(path), "--output", "json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["deletedPods"] == [
        {"namespace": "default", "name": "v", "nodeName": "n1", "reason": "PreemptionByScheduler"}
    ]
    pods = {p["name"]: p for p in doc["pods"]}
    assert pods["hi"]["nodeName"] == "n1" and pods["hi"]["message"] is None
    assert any(e["reason"] == "Preempted" and e["name"] == "v" for e in doc["events"])


def test_no_victims_message() -> None:
    c = Cluster(*CLASSES, node("n1", cpu="2"), running("same", "n1", "2", cls="high"))
    c.create(make_pod("hi", cpu="2", priority_class="high"))
    c.settle()
    assert c.sched.last_message["default/hi"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        ""
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_still_not_fitting_without_victims_reports_the_filter_reason() -> None:
    c = Cluster(*CLASSES, node("n1", cpu="4"), running("big", "n1", "3", cls="high"), running("v", "n1", "1"))
    c.create(make_pod("hi", cpu="2", priority_class="high"))
    c.settle()
    assert c.sched.last_message["default/hi"] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu."
    )
    assert c.events("Preempted") == []


# -- victims that free an inter-pod constraint (the PreFilter extensions' RemovePod / AddPod) --------
def preemptor(labels: dict, **spec: object) -> dict:
    p = make_pod("hi", cpu="100m", priority_class="high", spec=spec)
    p["metadata"]["labels"] = labels
    return p


def anti_affinity(**labels: str) -> dict:
    term = {"topologyKey": HOST, "labelSelector": {"matchLabels": labels}}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def preempted_and_placed(c: Cluster) -> tuple[set[str], str | None]:
    """The pods preempted for "hi" and where it runs once their grace period is over."""
    preempted = {p["metadata"]["name"] for p in c.store.list("Pod")[0] if p["metadata"].get("deletionTimestamp")}
    c.advance(30)
    return preempted, c.node_of("hi")


def test_victim_sharing_a_node_with_the_preemptors_anti_affinity_target() -> None:
    c = Cluster(
        *CLASSES,
        node("n1"),
        node("n2"),
        running("db", "n1", "100m", labels={"app": "db"}),
        running("web1", "n1", "100m", labels={"app": "web"}),  # low too, but kept by the reprieve
        running("db2", "n2", "100m", cls="high", labels={"app": "db"}),
    )
    c.create(preemptor({"app": "hi"}, affinity=anti_affinity(app="db")))
    c.settle()
    assert c.sched.last_message["default/hi"].startswith(
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
    )
    assert preempted_and_placed(c) == ({"db"}, "n1")


def test_victim_whose_anti_affinity_rejects_the_preemptor() -> None:
    loner = running("loner", "n1", "100m", labels={"app": "loner"})
    loner["spec"]["affinity"] = anti_affinity(app="hi")
    c = Cluster(
        *CLASSES,
        node("n1"),
        node("n2", cpu="1"),
        loner,
        running("web1", "n1", "100m", labels={"app": "web"}),
        running("full", "n2", "1", cls="high"),
    )
    c.create(preemptor({"app": "hi"}))
    c.settle()
    assert c.sched.last_message["default/hi"].startswith(
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't satisfy existing pods anti-affinity rules."
    )
    assert preempted_and_placed(c) == ({"loner"}, "n1")


def test_victim_whose_removal_brings_the_skew_down() -> None:
    spread = {
        "maxSkew": 1,
        "topologyKey": HOST,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    c = Cluster(
        *CLASSES,
        node("n1"),
        node("n2"),
        node("n3", cpu="1"),
        running("web1", "n1", "100m", labels={"app": "web"}),
        running("db1", "n1", "100m", labels={"app": "db"}),  # low, not matching: reprieved
        running("web2", "n2", "100m", cls="high", labels={"app": "web"}),
        running("full", "n3", "1", cls="high"),  # the empty domain, which nothing can join
    )
    c.create(preemptor({"app": "web"}, topologySpreadConstraints=[spread]))
    c.settle()
    assert c.sched.last_message["default/hi"].startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match pod topology spread constraints."
    )
    assert preempted_and_placed(c) == ({"web1"}, "n1")


# -- victim selection ----------------------------------------------------------------------------
def _labelled(name: str, prio: int, labels: dict) -> object:
    p = make_pod(name, priority=prio)
    p["metadata"]["labels"] = labels
    return pod_info_from(p)


def test_pdb_violation_counting_follows_importance_order() -> None:
    budget = PDBInfo("default", "b", parse_label_selector({"matchLabels": {"app": "x"}}, "s"), 1, frozenset({"gone"}))
    victims = [_labelled("p1", 5, {"app": "x"}), _labelled("gone", 4, {"app": "x"}), _labelled("p2", 3, {"app": "x"})]
    # p1 uses the one allowed disruption, "gone" is already counted by the API server, p2 violates
    assert violating(victims, [budget]) == [False, False, True]
    empty = PDBInfo("default", "e", parse_label_selector({}, "s"), 0, frozenset())
    assert violating(victims, [empty]) == [False, False, False]  # an empty selector matches nothing here
    other_ns = PDBInfo("other", "o", parse_label_selector({"matchLabels": {"app": "x"}}, "s"), 0, frozenset())
    assert violating(victims, [other_ns]) == [False, False, False]


def test_reprieve_keeps_the_most_important_pods_first() -> None:
    # node 4 cpu full with pods of priority 10 (1 cpu, oldest), 10 (1 cpu), 100 (2 cpu); the
    # preemptor needs 2: removing all frees 4, reprieving in importance order keeps "mid" (2)
    # and then no more room: both low pods are victims.
    c = Cluster(
        *CLASSES,
        node("n1"),
        running("l1", "n1", "1"),
        running("l2", "n1", "1"),
        running("m", "n1", "2", cls="mid"),
    )
    c.create(make_pod("hi", cpu="2", priority_class="high"))
    c.settle()
    assert {e.split()[3] for e in c.events("Preempted")} == {c.store.get("Pod", "default", "hi")["metadata"]["uid"]}
    deleting = {p["metadata"]["name"] for p in c.store.list("Pod")[0] if p["metadata"].get("deletionTimestamp")}
    assert deleting == {"l1", "l2"}


# -- choosing a candidate ------------------------------------------------------------------------
def cand(node: str, prios: list[int], violations: int = 0, starts: list[float] | None = None) -> Candidate:
    victims = [pod(f"{node}-{i}", priority=p) for i, p in enumerate(prios)]
    return Candidate(node, 0, victims, starts or [0.0] * len(prios), violations)


# (node, victims' priorities, PDB violations, victims' start times) per candidate, and the winner
PICK_ONE_NODE_CASES = [
    ([("a", [1], 1), ("b", [5, 5], 0)], "b"),  # fewest PDB violations
    ([("a", [7, 1]), ("b", [5, 5, 5])], "b"),  # lowest highest-priority victim
    ([("a", [5, 4]), ("b", [5, 1])], "b"),  # lowest priority sum
    ([("a", [-5, -5]), ("b", [-5])], "b"),  # sums offset: negative priorities still add up
    ([("a", [5, 1, 1]), ("b", [5, 2])], "b"),  # a: 5+1+1 offset sum is larger
    ([("a", [5, 5], 0, [10, 20]), ("b", [5, 5], 0, [30, 40])], "b"),  # latest start
    ([("a", [5]), ("b", [5])], "a"),  # then the first
    ([("a", [5]), ("b", [])], "b"),  # a node needing no eviction wins at once
]


@pytest.mark.parametrize(("candidates", "winner"), PICK_ONE_NODE_CASES)
def test_pick_one_node(candidates: list[tuple], winner: str) -> None:
    best = pick_one_node([cand(*c) for c in candidates], now=100.0)
    assert best is not None and best.node == winner


def test_fewest_victims_breaks_a_tie_on_sums() -> None:
    # Same highest victim (0) and the same offset sum: 2·(MaxInt32+1) for [0, 0] and
    # 3·(MaxInt32+1) − 2^31 for [0, −2^30, −2^30]; then fewer victims wins.
    a = cand("a", [0, 0])
    b = cand("b", [0, -(2**30), -(2**30)])
    assert sum(p.priority + MAX_INT32 + 1 for p in a.victims) == sum(p.priority + MAX_INT32 + 1 for p in b.victims)
    best = pick_one_node([b, a], now=0.0)
    assert best is not None and best.node == "a"


def test_not_started_victims_count_as_starting_now() -> None:
    a = cand("a", [5], starts=[math.nan])  # not started: "now" = 100
    b = cand("b", [5], starts=[50.0])
    assert pick_one_node([b, a], now=100.0).node == "a"


# -- arguments -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pct", "absolute", "nodes", "want"),
    [(10, 100, 1000, 100), (10, 100, 5000, 500), (10, 100, 50, 50), (50, 10, 100, 50), (0, 3, 100, 3)],
)
def test_num_candidates(pct: int, absolute: int, nodes: int, want: int) -> None:
    from kubesched.scheduler.preemption.evaluator import PreemptionArgs, num_candidates

    assert num_candidates(PreemptionArgs(pct, absolute), nodes) == want


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"minCandidateNodesPercentage": 101}, "minCandidateNodesPercentage: Invalid value: 101: not in valid range"),
        ({"minCandidateNodesAbsolute": -1}, "minCandidateNodesAbsolute: Invalid value: -1: not in valid range"),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "cannot be zero at the same time as minCandidateNodesAbsolute",
        ),
    ],
)
def test_invalid_preemption_args_name_the_field(args: dict, message: str) -> None:
    from kubesched.errors import InputError

    cfg = {"profiles": [{"pluginConfig": [{"name": "DefaultPreemption", "args": args}]}]}
    with pytest.raises(InputError) as err:
        Cluster(node("n1"), config=cfg)
    assert message in str(err.value)
    assert "pluginConfig[DefaultPreemption].args" in str(err.value)


# -- acting on the choice -----------------------------------------------------------------------
def test_lower_priority_nominations_on_the_node_are_cleared() -> None:
    # "mid" was nominated to n1 earlier (it may not preempt, so it keeps the nomination);
    # a higher-priority preemptor choosing n1 clears it.
    mid_never = make_priority_class("mid-never", 100, preemptionPolicy="Never")
    waiting = make_pod("mid", cpu="4", priority_class="mid-never", spec={"nodeSelector": {"pool": "none"}})
    waiting["status"] = {"nominatedNodeName": "n1"}
    c = Cluster(*CLASSES, mid_never, node("n1", cpu="2"), running("v", "n1", "2"), waiting)
    c.settle()
    assert c.store.get("Pod", "default", "mid")["status"].get("nominatedNodeName") == "n1"
    c.create(make_pod("hi", cpu="2", priority_class="high"))
    c.settle()
    assert c.store.get("Pod", "default", "hi")["status"]["nominatedNodeName"] == "n1"
    assert not c.store.get("Pod", "default", "mid")["status"].get("nominatedNodeName")
    assert c.sched.queue.nominated_node_of("uid-default-mid") == ""


def test_a_victim_waiting_at_permit_is_rejected_not_deleted() -> None:
    from kubesched.scheduler.plugins import in_tree_registry
    from test_framework import Gate

    registry = in_tree_registry()
    registry.register("Gate", Gate)
    cfg = {"profiles": [{"plugins": {"permit": {"enabled": [{"name": "Gate"}]}}}]}
    c = Cluster(*CLASSES, node("n1", cpu="2"), config=cfg, registry=registry)
    low = make_pod("low", cpu="2", priority_class="low")
    low["metadata"]["labels"] = {"wait": "600"}
    c.create(low)
    c.settle()
    assert c.sched.waiting_pods.get("uid-default-low") is not None
    c.create(make_pod("hi", cpu="2", priority_class="high"))
    c.settle()
    assert c.sched.waiting_pods.get("uid-default-low") is None
    assert "preempted" in c.events("FailedScheduling")
    assert not c.store.get("Pod", "default", "low")["metadata"].get("deletionTimestamp")
    assert c.events("Preempted") == ["Preempted by pod uid-default-hi on node n1 (in kube-scheduler memory)."]
    c.advance(1)
    assert c.node_of("hi") == "n1"


def test_a_failed_eviction_activates_the_preemptor(monkeypatch) -> None:
    """The goroutine's deferred ``Activate`` (executor.go): a victim's deletion that failed leaves
    no event to requeue the preemptor, so it is moved to activeQ at once, retried, and preempts
    again; no Preempted event is recorded for the eviction that failed."""
    from kubesched.api.errors import ApiError
    from kubesched.scheduler.preemption import executor

    c = Cluster(*CLASSES, node("n1", cpu="2"), running("v", "n1", "2", grace=0))
    c.settle()
    real_evict = executor.evict_victim
    failures = []

    def evict_failing_once(client, victim, scheduler_name, preemptor_type):
        if not failures:
            failures.append(victim.name)
            raise ApiError("etcdserver: request timed out")
        return real_evict(client, victim, scheduler_name, preemptor_type)

    monkeypatch.setattr(executor, "evict_victim", evict_failing_once)
    c.create(make_pod("hi", cpu="2", priority_class="high"))
    c.settle()  # no time passes: only the activation can bring the preemptor back
    assert failures == ["v"]
    assert c.events("Preempted") == ["Preempted by pod uid-default-hi on node n1"]
    assert c.node_of("hi") == "n1"


def test_preemptions_api_calls_run_off_the_scheduler_thread_and_a_waiting_victim_on_it(monkeypatch) -> None:
    """Against an API server preemption's goroutine runs where binding cycles run, so the next
    cycle does not wait for its patches and deletions (the order kube-scheduler's retries follow:
    histories 552 and 861); a victim waiting at Permit is the scheduler's own state and is
    rejected on its thread."""
    import threading
    import time

    from kubesched.scheduler.binding import ThreadedBinding
    from kubesched.scheduler.plugins import in_tree_registry
    from kubesched.scheduler.preemption import executor
    from test_framework import Gate

    registry = in_tree_registry()
    registry.register("Gate", Gate)
    cfg = {"profiles": [{"plugins": {"permit": {"enabled": [{"name": "Gate"}]}}}]}
    binding = ThreadedBinding(workers=2)
    c = Cluster(*CLASSES, node("n1", cpu="3"), running("v", "n1", "1"), config=cfg, registry=registry, binding=binding)
    waiting = make_pod("low", cpu="2", priority_class="low")
    waiting["metadata"]["labels"] = {"wait": "600"}
    c.create(waiting)
    c.settle()
    assert c.sched.waiting_pods.get("uid-default-low") is not None
    threads: dict[str, str] = {}
    real_evict, real_in_memory = executor.evict_victim, executor.Executor._preempt_in_memory

    def evict(client, victim, scheduler_name, preemptor_type):
        threads["evict"] = threading.current_thread().name
        return real_evict(client, victim, scheduler_name, preemptor_type)

    def in_memory(self, victim, pod, node):
        rejected = real_in_memory(self, victim, pod, node)
        if rejected:
            threads["reject"] = threading.current_thread().name
        return rejected

    monkeypatch.setattr(executor, "evict_victim", evict)
    monkeypatch.setattr(executor.Executor, "_preempt_in_memory", in_memory)
    c.create(make_pod("hi", cpu="3", priority_class="high"))
    c.settle()
    deadline = time.monotonic() + 10
    while binding.in_flight() and time.monotonic() < deadline:
        c.sched.process_events()
        time.sleep(0.005)
    assert threads["evict"].startswith("kubesched-bind")
    assert threads["reject"] == threading.current_thread().name
    assert sorted(c.events("Preempted")) == [
        "Preempted by pod uid-default-hi on node n1",
        "Preempted by pod uid-default-hi on node n1 (in kube-scheduler memory).",
    ]
    binding.close()
