"""The scheduler's view of a living cluster, as kube-scheduler's informers and cache give it
(``pkg/scheduler/scheduler.go`` newPodInformer, ``eventhandlers.go``, ``backend/cache``): a pod
that has finished is not in the cache (its requests, ports, pod slot and labels freed), a
terminating one still is, and so are pods of other schedulers and pods on a node that is gone.
Each rule is a row, judged in process, by upstream's scheduler (the oracle), and, in
``test_upstream_histories.py``, by kube-scheduler v1.37.2 on kube-apiserver v1.37.2."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from tests.helpers import make_node, make_pod, make_priority_class, make_waiting_nominated
from tests.oracle import disagreement, kubesched, upstream
from tests.test_oracle_tables import cluster
from tests.upstream import binaries

from kubesched.api.fields import fields_match, parse_field_selector, predicate
from kubesched.api.pod import PodInfo
from kubesched.api.watch import ADDED, DELETED, MODIFIED, selected_type
from kubesched.client.inprocess import InProcessClient
from kubesched.framework import Code, CycleState, PermitPlugin, Status
from kubesched.scheduler.informers import FIELD_SELECTORS, POD_FIELD_SELECTOR, informed_pod
from kubesched.testing import Cluster, in_tree_registry


def finished(pod: dict[str, Any], phase: str) -> dict[str, Any]:
    return {**pod, "status": {**(pod.get("status") or {}), "phase": phase}}


def set_phase(c: Cluster, name: str, phase: str) -> None:
    c.store.mutate("Pod", "default", name, lambda o: {**o, "status": {**(o.get("status") or {}), "phase": phase}})


def message(c: Cluster, name: str) -> str:
    pod = c.store.get("Pod", "default", name)
    return next(
        (
            x.get("message") or ""
            for x in (pod.get("status") or {}).get("conditions") or []
            if x["type"] == "PodScheduled"
        ),
        "",
    )


ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}


def labelled(pod: dict[str, Any], **labels: str) -> dict[str, Any]:
    return {**pod, "metadata": {**pod["metadata"], "labels": labels}}


def on_port(pod: dict[str, Any], port: int) -> dict[str, Any]:
    spec = dict(pod["spec"])
    spec["containers"] = [{**spec["containers"][0], "ports": [{"containerPort": port, "hostPort": port}]}]
    return {**pod, "spec": spec}


NODE = make_node("n1", cpu="2", pods="3", labels={"kubernetes.io/hostname": "n1"})

NODE2 = make_node("n2", cpu="2", labels={"kubernetes.io/hostname": "n2"})
# a web pod held to n1 that spreads over both nodes by hostname (nodeAffinityPolicy Ignore: n2
# is a domain though the pod cannot go there), so a web pod counted on n1 leaves it no room
SPREAD = {
    "nodeSelector": {"kubernetes.io/hostname": "n1"},
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "nodeAffinityPolicy": "Ignore",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ],
}


def terminating(pod: dict[str, Any]) -> dict[str, Any]:
    """A pod whose deletion is under way, held by a finalizer (or by a kubelet yet to stop it)."""
    meta = {
        **pod["metadata"],
        "finalizers": ["example.com/hold"],
        "deletionTimestamp": "2026-01-01T00:00:00Z",
        "deletionGracePeriodSeconds": 30,
    }
    return {**pod, "metadata": meta}


# a preemptor nominated to n1 and held there by name (NodeAffinity's PreFilter narrows to n1)
NOMINATED = {
    **make_pod(
        "probe",
        cpu="1",
        priority_class="high",
        spec={
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                        ]
                    }
                }
            }
        },
    ),
    "status": {"nominatedNodeName": "n1"},
}

# (name, what is on the node before the probe, the probe, whether the probe is bound)
RULES = [
    (
        "a Succeeded pod frees its cpu",
        [finished(make_pod("done", cpu="1500m", node="n1"), "Succeeded")],
        make_pod("probe", cpu="1"),
        True,
    ),
    (
        "a Failed pod frees its cpu",
        [finished(make_pod("done", cpu="1500m", node="n1"), "Failed")],
        make_pod("probe", cpu="1"),
        True,
    ),
    (
        "a Running pod holds its cpu",
        [finished(make_pod("run", cpu="1500m", node="n1"), "Running")],
        make_pod("probe", cpu="1"),
        False,
    ),
    (
        "a finished pod frees its pod slot",
        [finished(make_pod(f"done{i}", node="n1"), "Succeeded") for i in range(3)],
        make_pod("probe"),
        True,
    ),
    (
        "a finished pod frees its host port",
        [on_port(finished(make_pod("done", node="n1"), "Succeeded"), 8080)],
        on_port(make_pod("probe"), 8080),
        True,
    ),
    (
        "a running pod holds its host port",
        [on_port(finished(make_pod("run", node="n1"), "Running"), 8080)],
        on_port(make_pod("probe"), 8080),
        False,
    ),
    (
        "a finished pod's labels are not matched by anti-affinity",
        [labelled(finished(make_pod("db0", node="n1"), "Succeeded"), app="db")],
        {
            **make_pod("probe", spec={"affinity": ANTI}),
            "metadata": {"name": "probe", "namespace": "default", "uid": "u-probe"},
        },
        True,
    ),
    (
        "a running pod's labels are matched by anti-affinity",
        [labelled(finished(make_pod("db0", node="n1"), "Running"), app="db")],
        {
            **make_pod("probe", spec={"affinity": ANTI}),
            "metadata": {"name": "probe", "namespace": "default", "uid": "u-probe"},
        },
        False,
    ),
    (
        "a pod of another scheduler counts",
        [make_pod("other", cpu="1500m", node="n1", spec={"schedulerName": "someone-else"})],
        make_pod("probe", cpu="1"),
        False,
    ),
    (
        "a terminating pod's requests count until it is deleted",
        [terminating(make_pod("going", cpu="1500m", node="n1"))],
        make_pod("probe", cpu="1"),
        False,
    ),
    (
        "a terminating pod is not counted by topology spread",
        [NODE2, labelled(terminating(make_pod("web0", node="n1")), app="web")],
        labelled(make_pod("probe", spec=SPREAD), app="web"),
        True,
    ),
    (
        "a running pod is counted by topology spread",
        [NODE2, labelled(make_pod("web0", node="n1"), app="web")],
        labelled(make_pod("probe", spec=SPREAD), app="web"),
        False,
    ),
    (
        "a finished pod is not counted by topology spread",
        [NODE2, labelled(finished(make_pod("web0", node="n1"), "Succeeded"), app="web")],
        labelled(make_pod("probe", spec=SPREAD), app="web"),
        True,
    ),
]


@pytest.mark.parametrize(("before", "probe", "bound"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_what_holds_a_node_when_the_scheduler_starts(before, probe, bound):
    c = Cluster(NODE, *before, probe)
    c.settle()
    assert (c.node_of("probe") == "n1") is bound, message(c, "probe")


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_pod_that_finishes_leaves_the_cache_and_the_pending_pod_it_blocked_is_scheduled(phase):
    c = Cluster(NODE, make_pod("job", cpu="1500m"))
    c.settle()
    assert c.node_of("job") == "n1"
    c.create(make_pod("probe", cpu="1"))
    c.settle()
    assert c.node_of("probe") is None
    assert message(c, "probe").startswith("0/1 nodes are available: 1 Insufficient cpu.")
    set_phase(c, "job", phase)
    c.settle()  # the pod leaving the informer is an AssignedPodDelete: the probe is moved and placed at once
    assert c.node_of("probe") == "n1"
    assert c.sched.cache.pod("uid-default-job") is None
    assert c.sched.cache.counts()["pods"] == 1


def test_a_finished_pod_deleted_later_is_no_second_removal():
    c = Cluster(NODE, make_pod("job", cpu="1500m"), make_pod("other", cpu="400m"))
    c.settle()
    set_phase(c, "job", "Succeeded")
    c.settle()
    c.store.delete("Pod", "default", "job")
    c.settle()
    assert c.sched.cache.counts()["pods"] == 1
    assert c.sched.cache.table.requested[c.sched.cache.table.res_index["cpu"]][0] == 400


def test_a_pending_pod_that_fails_leaves_the_queue():
    c = Cluster(make_pod("lonely", cpu="1"))
    c.settle()
    assert c.sched.queue.where("uid-default-lonely") == "backoff"  # no nodes: the error backoff
    set_phase(c, "lonely", "Failed")
    c.settle()
    assert c.sched.queue.where("uid-default-lonely") == ""  # in no sub-queue


def test_a_pod_that_found_no_nodes_waits_out_its_backoff_not_for_a_node():
    """``ErrNoNodesAvailable`` blames no plugin (``schedulingCycle``, schedule_one.go): the pod goes
    to the error backoff queue, which neither an event nor SchedulerPopFromBackoffQ takes a pod
    from early, and is retried when its backoff is over. A node that joins meanwhile, tainted
    not-ready as kube-apiserver admits it (TaintNodesByCondition) until the taint is lifted, is
    never tried with its taint (history 435 of the large run, judged by kube-scheduler)."""
    c = Cluster(make_pod("p", cpu="100m"))
    c.settle()
    assert c.sched.queue.where("uid-default-p") == "backoff"
    assert message(c, "p") == "no nodes available to schedule pods"
    node = {**NODE, "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}}
    c.create(node)
    c.settle()
    assert c.node_of("p") is None
    assert c.sched.queue.where("uid-default-p") == "backoff"
    c.store.mutate("Node", "", "n1", lambda o: {**o, "spec": {}})  # the node lifecycle controller lifts it
    c.settle()
    assert c.node_of("p") is None  # still backing off
    c.advance(2)
    assert c.node_of("p") == "n1"
    assert set(c.events("FailedScheduling")) == {"no nodes available to schedule pods"}


def test_a_simulation_without_nodes_does_not_wait_out_the_retries(tmp_path):
    """Upstream retries a pod that found no nodes after each backoff, forever; on the virtual
    clock that is a week of retries that cannot end otherwise: simulate stops after the first."""
    from kubesched.simulate.runner import simulate

    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(make_pod("lonely", cpu="100m")))
    result = simulate([str(path)])
    assert [p["message"] for p in result.pods] == ["no nodes available to schedule pods"]
    assert result.stats["attempts"] == 1 and result.stats["virtualSeconds"] == 0


def test_a_pod_on_a_node_that_is_gone_counts_when_the_node_comes_back():
    c = Cluster(make_pod("ghost", cpu="1500m", node="n1"))
    c.settle()
    c.create(NODE, make_pod("probe", cpu="1"))
    c.settle()
    assert c.node_of("probe") is None
    assert message(c, "probe").startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_the_scheduler_lists_and_watches_pods_with_newpodinformers_field_selector():
    assert FIELD_SELECTORS == {"Pod": "status.phase!=Succeeded,status.phase!=Failed"}
    assert informed_pod({"status": {"phase": "Running"}}) and informed_pod({})
    assert not informed_pod({"status": {"phase": "Succeeded"}})
    c = Cluster(NODE, finished(make_pod("done", node="n1"), "Succeeded"), make_pod("live", node="n1"), config=None)
    listed, watch = InProcessClient(c.store).list_and_watch(["Pod", "Node"], FIELD_SELECTORS)
    assert [p["metadata"]["name"] for p in listed["Pod"]] == ["live"]
    assert len(listed["Node"]) == 1
    set_phase(c, "live", "Succeeded")
    c.store.delete("Pod", "default", "done")  # gone while out of the selection: not seen
    c.store.create("Pod", make_pod("new"))
    seen = [(ev.type, ev.obj["metadata"]["name"]) for ev in watch.drain()]
    assert seen == [(DELETED, "live"), (ADDED, "new")]


RUNNING, DONE = {"status": {"phase": "Running"}}, {"status": {"phase": "Succeeded"}}


@pytest.mark.parametrize(
    ("ev_type", "obj", "old", "seen"),
    [
        (ADDED, RUNNING, None, ADDED),
        (ADDED, DONE, None, None),
        (MODIFIED, RUNNING, RUNNING, MODIFIED),
        (MODIFIED, DONE, RUNNING, DELETED),  # leaves the selection: a deletion with the new state
        (MODIFIED, RUNNING, DONE, ADDED),  # enters it
        (MODIFIED, DONE, DONE, None),
        (DELETED, DONE, DONE, None),  # already gone from the watcher's view
        (DELETED, RUNNING, RUNNING, DELETED),
    ],
)
def test_a_watch_with_a_selector_sees_objects_enter_and_leave_it(ev_type, obj, old, seen):
    matcher = parse_field_selector(POD_FIELD_SELECTOR, "Pod")
    assert selected_type(ev_type, obj, old, lambda o: all(r.matches(o) for r in matcher)) == seen


def test_a_deleted_nominated_pod_moves_the_pods_its_nomination_held_back():
    """``deletePodFromSchedulingQueue``: a nominated pod's room counted for lower-priority pods
    as if assigned; its deletion is an AssignedPodDelete for them, not a five-minute wait."""
    c = Cluster(
        make_node("n1", cpu="2"),
        make_priority_class("never100", 100, preemptionPolicy="Never"),
        make_waiting_nominated("big", "n1", cpu="1500m"),
    )
    c.settle()
    c.create(make_pod("small", cpu="1"))
    c.settle()
    assert c.node_of("small") is None
    assert c.sched.queue.where("uid-default-small") == "unschedulable"
    c.store.delete("Pod", "default", "big")
    c.advance(2)  # its backoff
    assert c.node_of("small") == "n1"


class WaitAtPermit(PermitPlugin):
    name = "WaitAtPermit"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return (Status(Code.WAIT), 600.0) if pod.labels.get("wait") else (None, 0.0)


def test_an_assumed_pod_whose_deletion_begins_frees_its_node_at_once():
    """``handleAssumedPodDeletion``: a pod waiting at Permit when its deletion begins is
    rejected there (its binding cycle forgets it) and the pods it blocked are moved."""
    registry = in_tree_registry()
    registry.register("WaitAtPermit", WaitAtPermit)
    cfg = {"profiles": [{"plugins": {"permit": {"enabled": [{"name": "WaitAtPermit"}]}}}]}
    waiting = labelled(make_pod("waiting", cpu="1500m"), wait="yes")
    waiting["metadata"]["finalizers"] = ["example.com/hold"]  # deleted, it stays while terminating
    c = Cluster(make_node("n1", cpu="2"), waiting, config=cfg, registry=registry)
    c.settle()
    assert c.sched.cache.is_assumed("uid-default-waiting")
    c.create(make_pod("next", cpu="1"))
    c.settle()
    assert c.node_of("next") is None
    c.store.delete("Pod", "default", "waiting")
    assert c.store.get("Pod", "default", "waiting")["metadata"].get("deletionTimestamp")
    c.advance(2)
    assert not c.sched.cache.is_assumed("uid-default-waiting")
    assert c.node_of("next") == "n1"
    assert c.node_of("waiting") is None


def test_the_rules_judged_by_upstreams_scheduler(tmp_path):
    """Each row through kube-scheduler v1.37.2's scheduler (the oracle, its fake clientset made to
    apply the pod informer's field selector as kube-apiserver does) and ``kubesched simulate``:
    the same placement and messages, and the row's expectation."""
    paths = []
    for i, (_, before, probe, _) in enumerate(RULES):
        path = tmp_path / f"rule-{i}.yaml"
        path.write_text(yaml.safe_dump_all(cluster([NODE], before, probe), default_style='"'))
        paths.append(path)
    theirs = upstream(binaries() / "oracle", paths)
    for (name, _, _, bound), path, t in zip(RULES, paths, theirs, strict=True):
        up = next(r for r in t if r["pod"] == "default/probe")
        mine = kubesched(path, "default/probe")
        assert not disagreement(up, mine), (name, disagreement(up, mine))
        assert (up.get("node") == "n1") is bound, (name, up)


def preempted_victim() -> dict[str, Any]:
    """A 1500m pod on n1 terminating as the preemption that nominated the probe left it."""
    victim = terminating(make_pod("victim", cpu="1500m", node="n1"))
    victim["status"] = {
        "phase": "Running",
        "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}],
    }
    return victim


# a preemptor nominated to n1 and held there by name, its victim still terminating: (what else is
# there, the first reasons, the plugin named beside NodeAffinity in the other nodes' status)
NOMINATED_NODE_CASES = [
    pytest.param([], NOMINATED, "1 Insufficient cpu", "NodeResourcesFit", id="its cpu"),
    pytest.param(
        [
            make_priority_class("never2000", 2000, preemptionPolicy="Never"),
            on_port(make_waiting_nominated("big", "n1", cpu="100m", priority_class="never2000"), 8080),
        ],
        on_port(NOMINATED, 8080),
        "1 node(s) didn't have free ports for the requested pod ports",
        "NodePorts",
        id="a port a pod nominated there holds",
    ),
]


@pytest.mark.parametrize(("extra", "probe", "reasons", "plugin"), NOMINATED_NODE_CASES)
def test_a_preemptor_held_by_name_names_its_nominated_nodes_rejection_for_the_others(extra, probe, reasons, plugin):
    """The nominated node is filtered first (``evaluateNominatedNode``), with the nominated pods of
    equal or higher priority added, and the plugin that rejected it joins NodeAffinity in the other
    nodes' status, as upstream's shared plugin set makes it (found by the history differential
    against kube-scheduler v1.37.2)."""
    c = Cluster(make_priority_class("high", 1000), NODE, NODE2, preempted_victim(), *extra, probe)
    c.settle()
    assert c.node_of("probe") is None
    assert message(c, "probe") == (
        f"0/2 nodes are available: {reasons}, 1 node(s) didn't satisfy plugin(s) [NodeAffinity {plugin}]."
        " preemption: not eligible due to a terminating pod on the nominated node."
    )


def test_a_failed_attempt_reports_a_node_as_filtered_with_its_nominated_pods():
    """``RunFilterPluginsWithNominatedPods`` keeps the verdict of the pass with the nominated pods
    of equal or higher priority when it fails: n1 lacks cpu either way, and with the nominated
    pod added it has too many pods as well (found by the history differential)."""
    c = Cluster(
        make_priority_class("never100", 100, preemptionPolicy="Never"),
        make_node("n1", cpu="2", pods="3"),
        make_pod("a", cpu="1", node="n1"),
        make_pod("b", cpu="1", node="n1"),
        make_waiting_nominated("big", "n1", cpu="300m"),
    )
    c.settle()
    c.create(make_pod("probe", cpu="1"))
    c.settle()
    assert message(c, "probe").startswith("0/1 nodes are available: 1 Insufficient cpu, 1 Too many pods.")


def test_a_pod_nominated_by_another_profile_holds_its_room():
    """One queue and one nominator serve every profile (``scheduler.go``): a pod of the second
    profile nominated to n1 holds its room from the first profile's pods of lower priority."""
    big = make_waiting_nominated("big", "n1", cpu="1500m")
    big["spec"]["schedulerName"] = "second"
    profiles = {"profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "second"}]}
    c = Cluster(
        make_priority_class("never100", 100, preemptionPolicy="Never"),
        make_node("n1", cpu="2"),
        big,
        make_pod("probe", cpu="1"),
        config=profiles,
    )
    c.settle()
    assert c.node_of("probe") is None
    assert message(c, "probe").startswith("0/1 nodes are available: 1 Insufficient cpu.")
    c.store.delete("Pod", "default", "big")
    c.advance(2)
    assert c.node_of("probe") == "n1"


PHASES = ["", "Pending", "Running", "Succeeded", "Failed"]
TERM = st.tuples(
    st.sampled_from(["status.phase", "spec.nodeName"]), st.sampled_from(["=", "!="]), st.sampled_from([*PHASES, "n1"])
)


@given(
    terms=st.lists(TERM, min_size=1, max_size=4),
    phase=st.sampled_from(PHASES),
    node=st.sampled_from(["", "n1", "n2"]),
)
def test_a_selectors_predicate_matches_as_its_terms_do(terms, phase, node):
    """``predicate`` reads each field once and must agree with the terms read one by one."""
    matcher = parse_field_selector(",".join(f"{f}{op}{v}" for f, op, v in terms), "Pod")
    obj = {"spec": {"nodeName": node}, "status": {"phase": phase}}
    assert predicate(matcher)(obj) == fields_match(matcher, obj)


def test_a_nominated_pod_does_not_hide_the_node_only_filter_that_rejected_the_node():
    """``RunFilterPluginsWithNominatedPods`` runs every filter, in order, with the nominated pods
    added: on a cordoned node holding a higher-priority nominated pod the verdict is still
    NodeUnschedulable's, and preemption is not helpful. kubesched re-filtered such a node as if it
    had passed (only the filters that read pods) and wrote ``1 Insufficient cpu`` (history 1 of the
    differential, judged by kube-scheduler v1.37.2)."""
    c = Cluster(
        make_node("n0", cpu="2"),
        make_priority_class("boss", 1000, preemptionPolicy="Never"),  # its failures keep its nomination
        make_priority_class("low", 10),
        make_waiting_nominated("nominated", "n0", cpu="1500m", priority_class="boss"),
        make_pod("bound", cpu="300m", node="n0"),
    )
    c.settle()

    def cordon(o: dict[str, Any]) -> dict[str, Any]:
        taint = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
        return {**o, "spec": {**(o.get("spec") or {}), "unschedulable": True, "taints": [taint]}}

    c.store.mutate("Node", "", "n0", cordon)
    c.create(make_pod("late", cpu="1500m", priority_class="low"))
    c.settle()
    assert message(c, "late") == (
        "0/1 nodes are available: 1 node(s) were unschedulable. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_a_port_two_pods_shared_is_free_once_one_of_them_goes():
    """A node's used host ports are a set, as upstream's ``HostPortInfo``: two pods placed by
    another component share hostPort 8080 on n0; once one of them is deleted kube-scheduler
    (v1.37.2, judged on kube-apiserver) binds a pending pod asking for 8080 to n0, though the
    other still holds it: ``RemovePod`` removed the port outright. The same in preemption's dry
    run, where a victim's removal frees a port another pod also holds (history 338)."""

    def on_8080(pod: dict[str, Any]) -> dict[str, Any]:
        pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
        return pod

    c = Cluster(
        make_node("n0"),
        on_8080(make_pod("r0", node="n0")),
        on_8080(make_pod("r7", node="n0")),
    )
    c.settle()
    c.create(on_8080(make_pod("late")))
    c.settle()
    assert c.node_of("late") is None
    assert message(c, "late").startswith("0/1 nodes are available: 1 node(s) didn't have free ports")
    c.store.delete("Pod", "default", "r0", 0)
    c.settle()
    assert c.node_of("late") == "n0"
