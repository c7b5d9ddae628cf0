"""The template memo (``framework/template_memo.py``): PreFilter and PreScore outcomes replayed for
the next pods of one template give the same decisions, statuses, messages, events and metrics as
calling every plugin in every cycle; and the cluster changes each guard watches end a replay."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import node_features
from kubesched.api.pod import PodInfo, pod_info_from
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import FilterPlugin, PreFilterPlugin, ScorePlugin
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.template_memo import LIVE, Templates
from kubesched.testing import Cluster, in_tree_registry

ZONE = "topology.kubernetes.io/zone"


def node(i: int, cpu: int, zone: int, disk: bool) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": f"n{i}", ZONE: f"z{zone}"}
    if disk:
        labels["disk"] = "ssd"
    alloc = {"cpu": str(cpu), "memory": "8Gi", "pods": "20"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"n{i}", "labels": labels},
        "status": {"capacity": alloc, "allocatable": alloc, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def term(app: str, key: str) -> dict[str, Any]:
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}


# (cpu, labels, spec fields): every default PreFilter/PreScore plugin's Skip and non-Skip paths;
# most are labelled app=web, which the Service selects when it exists (default spreading then applies)
TEMPLATES: list[tuple[str, dict[str, str], dict[str, Any]]] = [
    ("200m", {}, {}),
    ("300m", {"app": "web"}, {}),  # default spreading once a Service selects app=web
    ("100m", {"app": "db"}, {"nodeSelector": {"disk": "ssd"}}),
    ("250m", {"app": "web"}, {"tolerations": [{"key": "soft", "operator": "Exists", "effect": "PreferNoSchedule"}]}),
    (
        "150m",
        {"app": "web"},
        {
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 5, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}
                    ]
                }
            }
        },
    ),
    (
        "100m",
        {"app": "lonely"},
        {
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [term("lonely", "kubernetes.io/hostname")]
                }
            }
        },
    ),
    (
        "100m",
        {"app": "near"},
        {
            "affinity": {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 3, "podAffinityTerm": term("web", ZONE)}
                    ]
                }
            }
        },
    ),
    (
        "200m",
        {"app": "spread"},
        {
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "spread"}},
                }
            ]
        },
    ),
    ("100m", {"app": "web"}, {"volumes": [{"name": "scratch", "emptyDir": {}}]}),
    ("100m", {"app": "web"}, {"ports": 8080}),
    ("1500m", {"app": "web"}, {}),  # big: fills nodes, fails, preempts nothing (equal priority)
]

LONELY = 5  # the template with a required anti-affinity term

WEB_SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
}


def templated(name: str, index: int, scheduler: str = "default-scheduler") -> dict[str, Any]:
    cpu, labels, spec = TEMPLATES[index]
    spec = copy.deepcopy(spec)
    port = spec.pop("ports", None)
    container: dict[str, Any] = {
        "name": "c",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu}},
    }
    if port is not None:
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": dict(labels)},
        "spec": {"containers": [container], "schedulerName": scheduler, **spec},
    }


# steps: a cluster change (none, a deletion, a new taint on a node, the Service created or deleted,
# a node label, a pod with required anti-affinity bound to a node), then pods of one of a few templates (so that
# pods of one template often come again after a change)
CHANGES = ["none", "delete", "taint", "service", "label", "lonely"]
STEPS = st.lists(
    st.tuples(st.sampled_from(CHANGES), st.integers(0, 100), st.integers(1, 6)),
    min_size=2,
    max_size=8,
)


class Witness(FilterPlugin, ScorePlugin):
    """Notes, at Filter and at Score, what PreFilter and PreScore left in CycleState: the plugins
    they skipped and each entry (plain values in full, others by type). Passes every node and
    scores every node 0, so it decides nothing."""

    name = "Witness"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        self.seen: list[tuple[Any, ...]] = []

    def _note(self, point: str, state: CycleState, pod: PodInfo, skipped: set[str]) -> None:
        entries = state.snapshot()
        shown = {
            k: repr(v) if v is None or isinstance(v, (int, tuple, frozenset, np.ndarray)) else type(v).__name__
            for k, v in entries.items()
        }
        self.seen.append((point, pod.name, sorted(skipped), sorted(shown.items())))

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Any) -> None:
        self._note("Filter", state, pod, state.skip_filter)
        return None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Any, rows: np.ndarray) -> np.ndarray:
        self._note("Score", state, pod, state.skip_score)
        return np.zeros(len(rows), np.int64)


def frameworks(c: Cluster) -> list[Framework]:
    return list(c.sched.profiles.values())


def metric_samples(c: Cluster) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every metric sample but the durations' buckets and sums (wall time differs run to run)."""
    out = {}
    for metric in c.sched.metrics.collect():
        for s in metric.samples:
            timed = "duration" in s.name or "seconds" in s.name
            if timed and (s.name.endswith("_bucket") or s.name.endswith("_sum")):
                continue
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def run(
    nodes: list[dict[str, Any]], palette: list[int], steps: list[tuple[str, int, int]], memo: bool, profile: str
) -> tuple[Any, ...]:
    registry = in_tree_registry()
    registry[Witness.name] = Witness
    plugins = {"filter": {"enabled": [{"name": Witness.name}]}, "score": {"enabled": [{"name": Witness.name}]}}
    profiles = [{"schedulerName": "default-scheduler"}, {"schedulerName": "witnessed", "plugins": plugins}]
    c = Cluster(*copy.deepcopy(nodes), config={"profiles": profiles}, registry=registry)
    if not memo:
        for fw in frameworks(c):
            fw.use_template_memo(False)
    made: list[str] = []
    for what, a, b in steps:
        if what == "delete" and made:
            if c.store.try_get("Pod", "default", made[a % len(made)]) is not None:
                c.store.delete("Pod", "default", made[a % len(made)], 0)
        elif what == "taint":
            obj = copy.deepcopy(c.store.get("Node", "", f"n{a % len(nodes)}"))
            effect = "NoSchedule" if a % 2 else "PreferNoSchedule"
            obj.setdefault("spec", {}).setdefault("taints", []).append({"key": f"t{a}", "value": "x", "effect": effect})
            c.store.update("Node", obj)
        elif what == "service":
            if c.store.try_get("Service", "default", "web") is None:
                c.store.create("Service", copy.deepcopy(WEB_SERVICE))
            else:
                c.store.delete("Service", "default", "web", 0)
        elif what == "label":
            obj = copy.deepcopy(c.store.get("Node", "", f"n{a % len(nodes)}"))
            obj["metadata"]["labels"]["disk"] = "ssd"
            c.store.update("Node", obj)
        elif what == "lonely":  # bound already (another scheduler's, or from before this one)
            made.append(f"p{len(made):03d}")
            obj = templated(made[-1], LONELY, profile)
            obj["spec"]["nodeName"] = f"n{a % len(nodes)}"
            c.create(obj)
        c.settle()
        for _ in range(b):
            made.append(f"p{len(made):03d}")
            c.create(templated(made[-1], palette[a % len(palette)], profile))
        c.settle()
    pods = {}
    for name in made:
        obj = c.store.try_get("Pod", "default", name)
        if obj is not None:
            conditions = [
                (x.get("type"), x.get("status"), x.get("reason"), x.get("message"))
                for x in (obj.get("status") or {}).get("conditions") or []
            ]
            pods[name] = (obj["spec"].get("nodeName"), (obj.get("status") or {}).get("nominatedNodeName"), conditions)
    events = sorted(
        repr(
            (
                e["involvedObject"].get("name"),
                e.get("reason"),
                e.get("message"),
                e.get("count"),
                (e.get("series") or {}).get("count"),
            )
        )
        for e in c.store.list("Event")[0]
    )
    witness = c.sched.profiles["witnessed"].plugins[Witness.name]
    assert isinstance(witness, Witness)
    return pods, events, metric_samples(c), witness.seen


@settings(max_examples=300, deadline=None)
@given(
    cpus=st.lists(st.sampled_from([1, 2, 4]), min_size=2, max_size=8),
    disks=st.lists(st.booleans(), min_size=8, max_size=8),
    palette=st.lists(st.integers(0, len(TEMPLATES) - 1), min_size=1, max_size=3),
    steps=STEPS,
    profile=st.sampled_from(["witnessed", "default-scheduler"]),
)
def test_same_decisions_messages_events_and_metrics_with_and_without_the_memo(
    cpus: list[int], disks: list[bool], palette: list[int], steps: list[tuple[str, int, int]], profile: str
) -> None:
    """Random clusters and random sequences of cluster changes (deletions, new taints, a Service
    coming and going, node labels, pods with anti-affinity), each followed by pods of one of
    a few templates drawn from eleven: every placement, nomination, condition, event
    (with its series count) and metric sample is the same with the memo as without it, in the
    default profile and in one with a witness plugin, where so is what PreFilter and PreScore
    leave for Filter and Score in every cycle."""
    nodes = [node(i, cpu, i % 3, disks[i]) for i, cpu in enumerate(cpus)]
    assert run(nodes, palette, steps, True, profile) == run(nodes, palette, steps, False, profile)


def pre_filter_outcome(fw: Framework, c: Cluster, obj: dict[str, Any]) -> tuple[Any, ...]:
    """One PreFilter over the pod, as the scheduling cycle runs it: what it returns and what it
    leaves in CycleState."""
    state = CycleState()
    result, status, plugins = fw.run_pre_filter(
        state, pod_info_from(c.store.get("Pod", "default", obj["metadata"]["name"])), c.sched.cache.table
    )
    return (
        result.node_names,
        None if status is None else (status.code, status.reasons),
        plugins,
        sorted(state.skip_filter),
        sorted(state.snapshot()),
    )


def pre_score_outcome(fw: Framework, c: Cluster, obj: dict[str, Any]) -> tuple[Any, ...]:
    """PreFilter, then PreScore over every node: the status and what PreScore skipped and wrote."""
    state = CycleState()
    pod = pod_info_from(c.store.get("Pod", "default", obj["metadata"]["name"]))
    table = c.sched.cache.table
    fw.run_pre_filter(state, pod, table)
    status = fw.run_pre_score(state, pod, table, np.arange(table.n))
    return status, sorted(state.skip_score), sorted(state.snapshot())


def test_plain_pods_replay_every_plugin_at_once() -> None:
    """scheduler_perf's pods: after the first, the whole PreFilter and PreScore are replayed."""
    c = Cluster(*[node(i, 4, i % 3, False) for i in range(4)])
    for i in range(3):
        c.create(templated(f"p{i}", 0))
    c.settle()
    fw = frameworks(c)[0]
    assert fw.pre_filter_memo is not None and fw.pre_filter_memo.replaying()
    assert fw.pre_score_memo is not None and fw.pre_score_memo.replaying()
    c.create(templated("x", 0))
    replayed = pre_filter_outcome(fw, c, templated("x", 0))
    assert fw.calls(CycleState()) is not fw.point_calls  # an unwatched cycle's calls go through the memo
    fw.use_template_memo(False)
    assert fw.calls(CycleState()) is fw.point_calls
    assert replayed == pre_filter_outcome(fw, c, templated("x", 0))
    assert replayed[3] == [
        "DynamicResources",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeDeclaredFeatures",
        "NodePorts",
        "NodeVolumeLimits",
        "PodTopologySpread",
        "VolumeBinding",
        "VolumeRestrictions",
        "VolumeZone",
    ]


def test_interleaved_templates_are_each_replayed() -> None:
    """Pods of two templates arriving in turn (a trace's shapes, two Deployments scaling at
    once): each template's outcomes are recorded on its second pod and replayed from its third,
    whichever template came in between, with what the full path gives."""
    c = Cluster(*[node(i, 4, i % 3, False) for i in range(4)])
    for i in range(3):
        for t in (0, 2):
            c.create(templated(f"t{t}-{i}", t))
            c.settle()
    fw = frameworks(c)[0]
    memo = fw.pre_filter_memo
    assert memo is not None
    for t in (0, 2):
        c.create(templated(f"x{t}", t))
        replayed = pre_filter_outcome(fw, c, templated(f"x{t}", t))
        assert memo.replaying(), t
        fw.use_template_memo(False)
        assert replayed == pre_filter_outcome(fw, c, templated(f"x{t}", t))
        fw.use_template_memo(True)
    templates = Templates()
    a, b = pod_info_from(templated("a", 0)), pod_info_from(templated("b", 2))
    assert templates.of(a) != templates.of(b)
    assert templates.of(pod_info_from(templated("a2", 0))) == templates.of(a)
    assert templates.of(pod_info_from(templated("b2", 2))) == templates.of(b)


def test_a_service_selecting_the_template_ends_the_replay() -> None:
    """Pods labelled app=web skip PodTopologySpread until a Service selects them; the pod after
    the Service gets the default constraints (its guard, the listers' selector epoch, moved)."""
    c = Cluster(*[node(i, 4, i % 3, False) for i in range(3)])
    for i in range(3):
        c.create(templated(f"w{i}", 1))
    c.settle()
    fw = frameworks(c)[0]
    c.create(templated("before", 1))
    assert fw.pre_score_memo is not None and fw.pre_score_memo.replaying()
    assert "PodTopologySpread" in pre_score_outcome(fw, c, templated("before", 1))[1]
    c.store.create("Service", copy.deepcopy(WEB_SERVICE))
    c.settle()
    after = pre_score_outcome(fw, c, templated("before", 1))
    assert "PodTopologySpread" not in after[1]
    assert "PreScorePodTopologySpread" in after[2]
    fw.use_template_memo(False)
    assert pre_score_outcome(fw, c, templated("before", 1))[1:] == after[1:]


def test_an_anti_affinity_pod_ends_the_replay_of_inter_pod_affinity() -> None:
    """A plain pod skips InterPodAffinity until some pod has a required anti-affinity term."""
    c = Cluster(*[node(i, 4, i % 3, False) for i in range(3)])
    c.create(templated("a", 0))
    c.create(templated("b", 0))
    c.settle()
    fw = frameworks(c)[0]
    c.create(templated("c", 0))
    assert "InterPodAffinity" in pre_filter_outcome(fw, c, templated("c", 0))[3]
    c.create(templated("lonely", 5))
    c.settle()
    assert c.node_of("lonely") is not None
    assert "InterPodAffinity" not in pre_filter_outcome(fw, c, templated("c", 0))[3]


def test_a_template_with_terms_is_not_replayed_by_inter_pod_affinity() -> None:
    """Pods preferring to be near app=web, then a web pod, then another of the first: its
    PreScore is no Skip any more (a web pod exists now), which nothing but every pod's labels
    tells, so InterPodAffinity calls it afresh (the memo's falsifying example once templates
    were remembered past the previous pod's)."""
    nodes = [node(i, 1, i % 3, False) for i in range(2)]
    steps = [("none", 0, 2), ("none", 98, 1), ("none", 0, 1)]  # two "near", one "web", one "near"
    assert run(nodes, [6, 0, 1], steps, True, "witnessed") == run(nodes, [6, 0, 1], steps, False, "witnessed")


def test_a_pod_with_volumes_calls_the_volume_plugins() -> None:
    """A pod with a volume is not replayed by the plugins that skip only pods without one."""
    c = Cluster(*[node(i, 4, i % 3, False) for i in range(3)])
    for i in range(3):
        c.create(templated(f"v{i}", 8))
    c.settle()
    memo = frameworks(c)[0].pre_filter_memo
    assert memo is not None and not memo.replaying()
    plan = memo.current()
    assert plan is not None
    live = [name for name, entry in zip(memo.names, plan.entries, strict=True) if entry is LIVE]
    assert live == ["VolumeRestrictions", "VolumeBinding"]


def test_a_resized_pod_is_another_template() -> None:
    """Two pods of one spec, the second with the kubelet's allocated resources (an in-place
    resize): their requests differ, so they are not one template (nothing of the first is
    replayed for the second)."""
    plain = templated("a", 0)
    resized = templated("b", 0)
    resized["status"] = {"containerStatuses": [{"name": "c", "allocatedResources": {"cpu": "700m"}}]}
    templates = Templates()
    first, second = pod_info_from(plain), pod_info_from(resized)
    assert first.requests != second.requests
    assert templates.of(first) != templates.of(second)
    assert templates.of(second) == templates.of(
        pod_info_from({**resized, "metadata": {**resized["metadata"], "name": "c"}})
    )


def test_the_feature_registry_guard_moves_when_the_registry_is_replaced() -> None:
    before = node_features.registry_version()
    with node_features.registry_replaced(["MockFeature"], lambda spec: True):
        inside = node_features.registry_version()
    assert len({before, inside, node_features.registry_version()}) == 3


class _NotAMemo(PreFilterPlugin):
    name = "NotAMemo"
    pre_filter_memo = True

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> tuple[None, None]:
        return None, None


def test_a_memo_attribute_that_is_not_a_memo_is_refused_with_the_plugins_name() -> None:
    registry = in_tree_registry()
    registry[_NotAMemo.name] = _NotAMemo
    plugins = {"preFilter": {"enabled": [{"name": _NotAMemo.name}]}}
    with pytest.raises(InputError) as err:
        Cluster(config={"profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}]}, registry=registry)
    assert str(err.value).endswith('plugin "NotAMemo": pre_filter_memo must be a kubesched.framework.Memo, not bool')
    assert err.value.field == "profiles[0].plugins"


def test_a_pod_whose_annotation_is_no_string_still_gets_a_template() -> None:
    """The template's lookup key holds the annotations; a value the API would refuse (an object,
    unhashable), from a pod built in process, gets a number of its own instead of an error."""
    templates = Templates()
    odd = templated("odd", 0)
    odd["metadata"]["annotations"] = {"x": {"y": 1}}
    first = templates.of(pod_info_from(odd))
    again = pod_info_from({**odd, "metadata": {**odd["metadata"], "name": "odd2"}})
    assert templates.of(again) == first  # the previous pod's template, as before
    plain = templates.of(pod_info_from(templated("plain", 0)))
    assert plain != first
    assert templates.of(again) not in (first, plain)  # not looked up: a new number
