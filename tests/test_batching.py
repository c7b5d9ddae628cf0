"""Opportunistic Batching (KEP-5598): signing, hints and every invalidation reason, as upstream's
``framework/runtime/batch_test.go`` and ``test/integration/scheduler/batch/batch_test.go`` test them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.pod import pod_info_from
from kubesched.errors import InputError
from kubesched.features import OPPORTUNISTIC_BATCHING, FeatureGates
from kubesched.framework.interface import FilterPlugin, SignFragment, SignPlugin
from kubesched.framework.status import Code, Status
from kubesched.scheduler.config import parse_config
from kubesched.scheduler.framework.batch import (
    ATTEMPT_HINT_NOT_USED,
    ATTEMPT_HINT_USED,
    ATTEMPT_NO_HINT,
    FLUSH_EMPTY_LIST,
    FLUSH_EXPIRED,
    FLUSH_NODE_MISSING,
    FLUSH_NODE_NOT_FULL,
    FLUSH_POD_INCOMPATIBLE,
    FLUSH_POD_NOT_BATCHABLE,
    FLUSH_POD_SKIPPED,
    OpportunisticBatch,
    SortedNodes,
)
from kubesched.scheduler.plugins import in_tree_registry
from kubesched.testing import Cluster

# ---------------------------------------------------------------------------------------------
# the batch on its own (batch_test.go)


@dataclass
class BatchCase:
    name: str
    first_sig: Any = (("sig", 1),)  # a PodSignature: compiled, the batch takes nothing else
    first_chosen: str = "n1"
    first_other: list[str] | None = field(default_factory=lambda: ["n2"])
    first_scheduled: bool = True
    skip_pod: bool = False
    second_sig: Any = (("sig", 1),)
    last_node_exists: bool = True
    last_node_full: bool = True
    age: float = 0.0
    expected_hint: str = ""
    expected_remaining: list[str] | None = None  # the list after the second pod's hint
    expected_flush: str | None = None


BATCH_CASES = [
    BatchCase("match one", expected_hint="n2", expected_remaining=[]),
    BatchCase(
        "match multi", first_chosen="n3", first_other=["n1", "n2"], expected_hint="n1", expected_remaining=["n2"]
    ),
    BatchCase("first pod failed: its cycle never stored", first_scheduled=False, expected_flush=None),
    BatchCase("a pod came between", skip_pod=True, expected_flush=FLUSH_POD_SKIPPED),
    BatchCase("different signature", second_sig=(("other", 1),), expected_flush=FLUSH_POD_INCOMPATIBLE),
    BatchCase("unsignable pod", second_sig=None, expected_flush=FLUSH_POD_INCOMPATIBLE),
    BatchCase("the node taken is gone", last_node_exists=False, expected_flush=FLUSH_NODE_MISSING),
    BatchCase("the node taken still fits", last_node_full=False, expected_flush=FLUSH_NODE_NOT_FULL),
    BatchCase("older than maxBatchAge", age=0.6, expected_flush=FLUSH_EXPIRED),
    BatchCase("just within maxBatchAge", age=0.5, expected_hint="n2", expected_remaining=[]),
    BatchCase("empty list", first_other=[], expected_flush=None),
    BatchCase("no list (one feasible node)", first_other=None, expected_flush=None),
]


class Recorder:
    def __init__(self) -> None:
        self.now = 100.0
        self.counts: list[tuple[str, str, str]] = []

    def count(self, metric: str, profile: str, label: str) -> None:
        self.counts.append((metric, profile, label))


@pytest.mark.parametrize("case", BATCH_CASES, ids=lambda c: c.name)
def test_batch_hints(case: BatchCase) -> None:
    rec = Recorder()
    batch = OpportunisticBatch("default-scheduler", lambda: rec.now, rec.count)

    def exists(name: str) -> bool:
        return case.last_node_exists

    def rejects(name: str) -> bool:
        assert name == case.first_chosen
        return case.last_node_full

    assert batch.get_node_hint(case.first_sig, 1, exists, rejects) == ""
    if case.first_scheduled:
        other = None if case.first_other is None else SortedNodes(case.first_other)
        batch.store_schedule_results(case.first_sig, "", case.first_chosen, other, 1)
    rec.counts.clear()
    rec.now += case.age
    hint = batch.get_node_hint(case.second_sig, 3 if case.skip_pod else 2, exists, rejects)
    assert hint == case.expected_hint
    if case.expected_remaining is not None:
        assert batch.state is not None and len(batch.state.sorted_nodes) == len(case.expected_remaining)
        assert [batch.state.sorted_nodes.pop() for _ in case.expected_remaining] == case.expected_remaining
    flushes = [label for metric, _, label in rec.counts if metric == "flushed"]
    assert flushes == ([case.expected_flush] if case.expected_flush else [])
    attempts = [label for metric, _, label in rec.counts if metric == "attempts"]
    assert attempts == ([] if hint else [ATTEMPT_NO_HINT])


def test_store_results_records_hint_use_and_keeps_the_shorter_list() -> None:
    rec = Recorder()
    batch = OpportunisticBatch("p", lambda: rec.now, rec.count)
    batch.store_schedule_results(("sig",), "", "n1", SortedNodes(["n2", "n3", "n4"]), 1)
    hint = batch.get_node_hint(("sig",), 2, lambda n: True, lambda n: True)
    assert hint == "n2"
    batch.store_schedule_results(("sig",), hint, "n2", None, 2)
    assert ("attempts", "p", ATTEMPT_HINT_USED) in rec.counts
    assert batch.batched_pods == 1
    # the list is the one of the first pod, one shorter; its age still counts from then
    assert batch.state is not None and len(batch.state.sorted_nodes) == 2
    # a hint the pod did not take (its nominated node went first): the new results replace the list
    hint = batch.get_node_hint(("sig",), 3, lambda n: True, lambda n: True)
    assert hint == "n3"
    batch.store_schedule_results(("sig",), hint, "n9", SortedNodes(["n5"]), 3)
    assert ("attempts", "p", ATTEMPT_HINT_NOT_USED) in rec.counts
    assert batch.state is not None and batch.state.sorted_nodes.pop() == "n5"
    # an unsigned pod scheduled by scoring drops the list
    batch.store_schedule_results(None, "", "n7", SortedNodes(["n8"]), 4)
    assert batch.state is None and ("flushed", "p", FLUSH_POD_NOT_BATCHABLE) in rec.counts
    batch.store_schedule_results(("sig",), "", "n7", SortedNodes([]), 5)
    assert ("flushed", "p", FLUSH_EMPTY_LIST) in rec.counts


# ---------------------------------------------------------------------------------------------
# signatures (the framework's SignPod and the in-tree plugins' fragments)

NO_DEFAULT_SPREADING = {
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
        }
    ]
}


def test_sorted_nodes_by_row_keep_their_names_when_a_node_goes() -> None:
    """The sorted nodes are kept as rows of the node table and named as they are popped; a node
    removed meanwhile (rows after it move down) leaves the names they had."""
    from tests.helpers import make_node, table

    t = table([make_node(n) for n in ("a", "b", "c", "d")])
    rest = SortedNodes(t.names, np.array([3, 1, 2]))
    t.remove_node("a")
    assert t.names == ["b", "c", "d"]
    assert [rest.pop() for _ in range(len(rest))] == ["d", "b", "c"]


def pod(name: str, *, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", None)
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "img", "resources": {"requests": {"cpu": cpu}}}], **spec},
    }


def node(name: str, *, pods: int = 110, cpu: str = "100", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": str(pods)}},
    }


def signature(c: Cluster, obj: dict[str, Any], profile: str = "default-scheduler") -> Any:
    return c.sched.profiles[profile].signer.sign_pod(pod_info_from(obj))


def test_the_default_profile_signs_no_pod() -> None:
    """PodTopologySpread's System defaulting has default constraints: no pod is signable, so v1.36's
    default profile never batches."""
    c = Cluster()
    assert signature(c, pod("a")) is None


SIGN_CASES = [
    # (name, second pod's spec changes, same signature as the plain pod?)
    ("identical", {}, True),
    ("another name and labels only matter to InterPodAffinity", {"labels": {"app": "x"}}, False),
    ("other requests", {"cpu": "2"}, False),
    ("node selector", {"nodeSelector": {"zone": "a"}}, False),
    ("tolerations", {"tolerations": [{"key": "k", "operator": "Exists"}]}, False),
    ("another scheduler name", {"schedulerName": "other"}, False),
]


@pytest.mark.parametrize(("name", "change", "same"), SIGN_CASES, ids=[c[0] for c in SIGN_CASES])
def test_signatures(name: str, change: dict[str, Any], same: bool) -> None:
    c = Cluster(config=NO_DEFAULT_SPREADING)
    base = signature(c, pod("a"))
    assert base is not None
    assert (signature(c, pod("b", **change)) == base) is same


UNSIGNABLE = [
    (
        "topology spread constraints",
        {
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}
            ]
        },
    ),
    ("pod affinity", {"affinity": {"podAffinity": {}}}),
    ("pod anti-affinity", {"affinity": {"podAntiAffinity": {}}}),
    ("resource claims", {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]}),
]


@pytest.mark.parametrize(("name", "spec"), UNSIGNABLE, ids=[c[0] for c in UNSIGNABLE])
def test_unsignable_pods(name: str, spec: dict[str, Any]) -> None:
    c = Cluster(config=NO_DEFAULT_SPREADING)
    assert signature(c, pod("a", **spec)) is None


class NoSign(FilterPlugin):
    """A Filter plugin written before KEP-5598: it turns signatures off for its profile."""

    name = "NoSign"

    def filter_nodes(self, state: Any, pod: Any, nodes: Any) -> None:
        return None


class EmptySign(FilterPlugin, SignPlugin):
    """A plugin that signs no pod (upstream's testPluginEmptySign)."""

    name = "EmptySign"

    def filter_nodes(self, state: Any, pod: Any, nodes: Any) -> None:
        return None

    def sign_pod(self, pod: Any) -> tuple[list[SignFragment], Status | None]:
        return [], Status(Code.UNSCHEDULABLE)


def _profiles() -> dict[str, Any]:
    base = NO_DEFAULT_SPREADING["profiles"][0]
    return {
        "profiles": [
            base,
            {**base, "schedulerName": "mysched"},
            {**base, "schedulerName": "nosign", "plugins": {"filter": {"enabled": [{"name": "NoSign"}]}}},
            {**base, "schedulerName": "emptysign", "plugins": {"filter": {"enabled": [{"name": "EmptySign"}]}}},
        ]
    }


def _registry() -> Any:
    registry = in_tree_registry()
    registry.register("NoSign", NoSign)
    registry.register("EmptySign", EmptySign)
    return registry


def test_profiles_that_cannot_sign() -> None:
    c = Cluster(config=_profiles(), registry=_registry())
    assert signature(c, pod("a")) is not None
    assert signature(c, pod("a", schedulerName="nosign"), "nosign") is None
    assert c.sched.profiles["nosign"].signer.unsigned == ["NoSign"]
    assert signature(c, pod("a", schedulerName="emptysign"), "emptysign") is None


# ---------------------------------------------------------------------------------------------
# whole scheduling (test/integration/scheduler/batch/batch_test.go's scenarios)


@dataclass
class PodDef:
    name: str
    expected_node: str
    affinity: list[str] = field(default_factory=list)  # preferred nodes, the first weighted most
    node_selector: dict[str, str] | None = None
    expect_batched: bool = False
    scheduler: str = "default-scheduler"


def batch_pod(d: PodDef) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": d.scheduler}
    if d.affinity:
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": len(d.affinity) - i,
                        "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]},
                    }
                    for i, name in enumerate(d.affinity)
                ]
            }
        }
    if d.node_selector:
        spec["nodeSelector"] = d.node_selector
    return pod(d.name, cpu="10m", **spec)


SCENARIOS = [
    ("one pod one node", [PodDef("p1", "n1")], [("n1", 1, None)]),
    (
        "distinct pods on distinct nodes",
        [
            PodDef("p1", "n1", node_selector={"forpod": "1"}),
            PodDef("p2", "n2", node_selector={"forpod": "2"}),
            PodDef("p3", "n3", node_selector={"forpod": "3"}),
        ],
        [("n3", 10, {"forpod": "3"}), ("n2", 10, {"forpod": "2"}), ("n1", 10, {"forpod": "1"})],
    ),
    (
        "three pod batch",
        [
            PodDef("p1", "n1", ["n1", "n2", "n3"]),
            PodDef("p2", "n2", ["n1", "n2", "n3"], expect_batched=True),
            PodDef("p3", "n3", ["n1", "n2", "n3"], expect_batched=True),
        ],
        [("n3", 1, None), ("n2", 1, None), ("n1", 1, None)],
    ),
    (
        "two consecutive batches",
        [
            PodDef("p1", "n1", ["n1", "n2"]),
            PodDef("p2", "n2", ["n1", "n2"], expect_batched=True),
            PodDef("p3", "n4", ["n4", "n3"]),
            PodDef("p4", "n3", ["n4", "n3"], expect_batched=True),
        ],
        [("n4", 1, None), ("n3", 1, None), ("n2", 1, None), ("n1", 1, None)],
    ),
    (
        "multiple pods per node means no batching",
        [
            PodDef("p1", "n1", ["n1", "n2"]),
            PodDef("p2", "n1", ["n1", "n2"]),
            PodDef("p3", "n4", ["n4", "n3"]),
            PodDef("p4", "n4", ["n4", "n3"]),
        ],
        [("n4", 2, None), ("n3", 2, None), ("n2", 2, None), ("n1", 2, None)],
    ),
    (
        "no batching between schedulers",
        [PodDef("p1", "n1", ["n1", "n2", "n3"]), PodDef("p2", "n2", ["n1", "n2", "n3"], scheduler="mysched")],
        [("n3", 1, None), ("n2", 1, None), ("n1", 1, None)],
    ),
    (
        "no batching missing sign",
        [
            PodDef("p1", "n1", ["n1", "n2", "n3"], scheduler="nosign"),
            PodDef("p2", "n2", ["n1", "n2", "n3"], scheduler="nosign"),
        ],
        [("n3", 1, None), ("n2", 1, None), ("n1", 1, None)],
    ),
    (
        "no batching empty sign",
        [
            PodDef("p1", "n1", ["n1", "n2", "n3"], scheduler="emptysign"),
            PodDef("p2", "n2", ["n1", "n2", "n3"], scheduler="emptysign"),
        ],
        [("n3", 1, None), ("n2", 1, None), ("n1", 1, None)],
    ),
]


@pytest.mark.parametrize(("name", "pods", "nodes"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_batch_scenarios(name: str, pods: list[PodDef], nodes: list[tuple[str, int, Any]]) -> None:
    c = Cluster(*(node(n, pods=p, labels=lb) for n, p, lb in nodes), config=_profiles(), registry=_registry())
    batch = c.sched.profiles["default-scheduler"].batch
    for d in pods:
        before = batch.batched_pods
        c.create(batch_pod(d))
        c.settle()
        assert c.node_of(d.name) == d.expected_node, d.name
        assert (batch.batched_pods > before) is d.expect_batched, d.name


def test_batched_pods_are_counted_in_metrics_and_can_be_switched_off() -> None:
    nodes = [node(f"n{i}", pods=1) for i in range(4)]
    defs = [PodDef(f"p{i}", "", ["n0", "n1", "n2", "n3"]) for i in range(4)]
    on = Cluster(*nodes, config=NO_DEFAULT_SPREADING)
    on.create(*(batch_pod(d) for d in defs))
    on.settle()
    attempts = on.sched.metrics.batch_attempts.series
    assert attempts[("default-scheduler", ATTEMPT_HINT_USED)] == 3
    assert [on.node_of(d.name) for d in defs] == ["n0", "n1", "n2", "n3"]
    off = Cluster(*nodes, config={**NO_DEFAULT_SPREADING, "featureGates": {OPPORTUNISTIC_BATCHING: False}})
    off.create(*(batch_pod(d) for d in defs))
    off.settle()
    assert off.sched.profiles["default-scheduler"].batch.batched_pods == 0
    assert not off.sched.metrics.batch_attempts.series
    assert [off.node_of(d.name) for d in defs] == ["n0", "n1", "n2", "n3"]


@settings(max_examples=25, deadline=None)
@given(
    cpus=st.lists(st.integers(2, 64), min_size=2, max_size=12),
    n_pods=st.integers(1, 14),
)
def test_batching_decides_as_a_full_search(cpus: list[int], n_pods: int) -> None:
    """1-pod-per-node pods of one shape, every node scored and ties broken by name: each pod placed
    from a hint lands where a full search and scoring would put it."""
    nodes = [node(f"n{i:02d}", pods=1, cpu=str(c)) for i, c in enumerate(cpus)]
    pods = [pod(f"p{i:02d}", cpu="1") for i in range(n_pods)]
    placed: dict[bool, list[str | None]] = {}
    for on in (True, False):
        config = {
            **NO_DEFAULT_SPREADING,
            "percentageOfNodesToScore": 100,
            "featureGates": {OPPORTUNISTIC_BATCHING: on},
        }
        c = Cluster(*nodes, config=config)
        c.sched.algorithm.picker.tie_break = "name"
        for p in pods:  # one at a time, as a stream of arrivals
            c.create(p)
            c.settle()
        placed[on] = [c.node_of(p["metadata"]["name"]) for p in pods]
        if on and n_pods > 1 and len(cpus) > 1:
            assert c.sched.profiles["default-scheduler"].batch.batched_pods > 0
    assert placed[True] == placed[False]


def test_max_batch_age_follows_the_scheduler_clock() -> None:
    c = Cluster(*(node(f"n{i}", pods=1) for i in range(3)), config=NO_DEFAULT_SPREADING)
    batch = c.sched.profiles["default-scheduler"].batch
    c.create(batch_pod(PodDef("p0", "", ["n0", "n1", "n2"])))
    c.settle()
    c.clock.advance_to(c.clock.now() + 1)  # a second of virtual time: the list expired
    c.create(batch_pod(PodDef("p1", "", ["n0", "n1", "n2"])))
    c.settle()
    assert batch.batched_pods == 0
    assert c.sched.metrics.batch_cache_flushed.series[("default-scheduler", FLUSH_EXPIRED)] == 1
    assert c.node_of("p1") == "n1"


# ---------------------------------------------------------------------------------------------
# the feature gate


def test_feature_gates_flag_syntax() -> None:
    assert not FeatureGates.parse("OpportunisticBatching=false").enabled(OPPORTUNISTIC_BATCHING)
    assert FeatureGates.parse("").enabled(OPPORTUNISTIC_BATCHING)  # beta, on by default
    with pytest.raises(InputError, match=r"^unrecognized feature gate: Foo$"):
        FeatureGates.parse("Foo=true")
    with pytest.raises(InputError, match=r'parsing "maybe": invalid syntax'):
        FeatureGates.parse("OpportunisticBatching=maybe")
    with pytest.raises(InputError, match="missing bool value for OpportunisticBatching"):
        FeatureGates.parse("OpportunisticBatching")


def test_feature_gates_in_the_configuration() -> None:
    base = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cfg = parse_config({**base, "featureGates": {"OpportunisticBatching": False}})
    assert not cfg.feature_gates.enabled(OPPORTUNISTIC_BATCHING)
    assert cfg.feature_gates.merged(FeatureGates.parse("OpportunisticBatching=true")).enabled(OPPORTUNISTIC_BATCHING)
    with pytest.raises(InputError) as err:
        parse_config({**base, "featureGates": {"Nope": True}}, "cfg.yaml")
    assert err.value.field == "featureGates.Nope" and "unrecognized feature gate: Nope" in str(err.value)


# ---------------------------------------------------------------------------------------------
# the command line


def _gpu_cluster(tmp_path: Any) -> str:
    """Whole-node GPU jobs (the typical batch): 6 nodes of 8 GPUs, 4 jobs of 8 GPUs."""
    import yaml

    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        **NO_DEFAULT_SPREADING,
    }
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"gpu-{i}"},
            "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"}},
        }
        for i in range(6)
    ]
    jobs = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"train-{i}", "namespace": "default"},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "trainer",
                        "resources": {"requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}},
                    }
                ]
            },
        }
        for i in range(4)
    ]
    path = tmp_path / "gpu.yaml"
    path.write_text(yaml.safe_dump_all([config, *nodes, *jobs]))
    return str(path)


def test_simulate_with_and_without_batching(tmp_path: Any) -> None:
    import json

    from click.testing import CliRunner

    from kubesched.cli import main

    path = _gpu_cluster(tmp_path)
    runner = CliRunner()
    on = runner.invoke(main, ["simulate", path, "-o", "json", "--explain", "default/train-3"])
    assert on.exit_code == 0, on.output
    result = json.loads(on.output)
    assert result["metrics"]["batchAttempts"]["hint_used/default-scheduler"] == 3  # train-1..3 from hints
    explained = result["explain"]["default/train-3"]
    assert explained["batchHint"] == explained["selectedNode"]
    assert explained["score-result"] == {}  # placed from the hint: nothing scored
    off = runner.invoke(
        main,
        [
            "simulate",
            path,
            "-o",
            "json",
            "--explain",
            "default/train-3",
            "--feature-gates",
            "OpportunisticBatching=false",
        ],
    )
    assert off.exit_code == 0, off.output
    assert "batchAttempts" not in json.loads(off.output)["metrics"]
    explained = json.loads(off.output)["explain"]["default/train-3"]
    assert "batchHint" not in explained and len(explained["score-result"]) == 3  # the three free nodes scored
    bad = runner.invoke(main, ["simulate", path, "--feature-gates", "OpportunisticBatch=true"])
    assert bad.exit_code == 2
    assert bad.output.strip().splitlines()[-1] == "kubesched: error: unrecognized feature gate: OpportunisticBatch"


def test_extenders_turn_signatures_off() -> None:
    config = {
        **NO_DEFAULT_SPREADING,
        "extenders": [{"urlPrefix": "http://127.0.0.1:9", "filterVerb": "filter", "nodeCacheCapable": True}],
    }
    c = Cluster(config=config)
    assert signature(c, pod("a")) is None  # computeBatchablePlugins: a profile with extenders


def test_a_nominated_node_goes_before_the_hint() -> None:
    """evaluateNominatedNode tries the nominated node, not the hint; the hint was taken from the
    list all the same, so the attempt counts as hint_not_used and the list is dropped."""
    c = Cluster(*(node(f"n{i}", pods=1) for i in range(4)), config=NO_DEFAULT_SPREADING)
    prefer = ["n0", "n1", "n2", "n3"]
    c.create(batch_pod(PodDef("p0", "", prefer)))
    c.settle()
    assert c.node_of("p0") == "n0"
    nominated = batch_pod(PodDef("p1", "", prefer))
    nominated["status"] = {"nominatedNodeName": "n3"}
    c.create(nominated)
    c.settle()
    assert c.node_of("p1") == "n3"
    assert c.sched.metrics.batch_attempts.series[("default-scheduler", ATTEMPT_HINT_NOT_USED)] == 1
    assert c.sched.profiles["default-scheduler"].batch.state is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["scheduler", "--kubeconfig", "/nonexistent", "--feature-gates", "Nope=true"],
            "unrecognized feature gate: Nope",
        ),
        (
            ["up", "--data-dir", "{tmp}", "--feature-gates", "OpportunisticBatching=x"],
            'invalid value of OpportunisticBatching=x, err: strconv.ParseBool: parsing "x": invalid syntax',
        ),
    ],
)
def test_feature_gates_flag_on_the_servers(tmp_path: Any, args: list[str], message: str) -> None:
    """A bad gate is refused before anything starts or is written, as kube-scheduler's flag parsing does."""
    from click.testing import CliRunner

    from kubesched.cli import main

    data = tmp_path / "data"
    out = CliRunner().invoke(main, [a.replace("{tmp}", str(data)) for a in args])
    assert out.exit_code == 2
    assert out.output.strip().splitlines()[-1] == f"kubesched: error: {message}"
    assert not data.exists()
