"""InterPodAffinity: the three filter checks and their reasons, namespaceSelector, the first pod
of a group, exact raw and normalized scores (tables after upstream's
``interpodaffinity/filtering_test.go`` and ``scoring_test.go``), and end-to-end placements."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import make_node, make_pod, make_priority_class, make_waiting_nominated
from kubesched.errors import InputError
from kubesched.framework.status import Code
from kubesched.scheduler.plugins.interpodaffinity.common import parse_args
from kubesched.testing import Cluster

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"

NODES = [
    make_node("n1", labels={HOST: "n1", ZONE: "z1"}),
    make_node("n2", labels={HOST: "n2", ZONE: "z1"}),
    make_node("n3", labels={HOST: "n3", ZONE: "z2"}),
]


def term(key: str, ns_selector: dict | None = None, namespaces: list | None = None, **labels: str) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": key, "labelSelector": {"matchLabels": labels}}
    if ns_selector is not None:
        t["namespaceSelector"] = ns_selector
    if namespaces is not None:
        t["namespaces"] = namespaces
    return t


def labelled(name: str, labels: dict[str, str], on: str | None = None, ns: str = "default", **affinity: Any) -> dict:
    p = make_pod(name, node=on, ns=ns, spec={"affinity": affinity} if affinity else None)
    p["metadata"]["labels"] = labels
    return p


def required(*terms: dict) -> dict:
    return {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}


def preferred(*weighted: tuple[int, dict]) -> dict:
    return {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": w, "podAffinityTerm": t} for w, t in weighted]
    }


def namespace(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def run_filter(objects: list[dict], pod: dict, config: dict | None = None) -> dict[str, str]:
    got = Cluster(*NODES, *objects, config=config).filter_verdicts("InterPodAffinity", pod)
    for n, (code, reason) in got.items():  # affinity is unresolvable, the anti-affinity checks are not
        if code:
            assert code == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE if reason == AFFINITY else Code.UNSCHEDULABLE), n
    return {n: reason for n, (_, reason) in got.items()}


DB_ON_N1 = labelled("db", {"app": "db"}, on="n1")


FILTER_CASES = [
    (
        "required affinity: the zone holding a match",
        [DB_ON_N1],
        labelled("p", {}, podAffinity=required(term(ZONE, app="db"))),
        {"n3": AFFINITY},
    ),
    (
        "required affinity by hostname",
        [DB_ON_N1],
        labelled("p", {}, podAffinity=required(term(HOST, app="db"))),
        {"n2": AFFINITY, "n3": AFFINITY},
    ),
    (
        "an existing pod must match all the terms",
        [DB_ON_N1, labelled("cache", {"app": "cache"}, on="n3")],
        labelled("p", {}, podAffinity=required(term(ZONE, app="db"), term(ZONE, app="cache"))),
        {"n1": AFFINITY, "n2": AFFINITY, "n3": AFFINITY},
    ),
    (
        "first pod of a group matching its own terms goes anywhere",
        [],
        labelled("p", {"app": "db"}, podAffinity=required(term(ZONE, app="db"))),
        {},
    ),
    (
        "first pod of a group not matching its own terms goes nowhere",
        [],
        labelled("p", {"app": "web"}, podAffinity=required(term(ZONE, app="db"))),
        {"n1": AFFINITY, "n2": AFFINITY, "n3": AFFINITY},
    ),
    (
        "a node missing the topology key never satisfies affinity",
        [DB_ON_N1],
        labelled("p", {}, podAffinity=required(term("rack", app="db"))),
        {"n1": AFFINITY, "n2": AFFINITY, "n3": AFFINITY},
    ),
    (
        "required anti-affinity by hostname",
        [labelled("web", {"app": "web"}, on="n1")],
        labelled("p", {}, podAntiAffinity=required(term(HOST, app="web"))),
        {"n1": ANTI},
    ),
    (
        "required anti-affinity by zone",
        [labelled("web", {"app": "web"}, on="n1")],
        labelled("p", {}, podAntiAffinity=required(term(ZONE, app="web"))),
        {"n1": ANTI, "n2": ANTI},
    ),
    (
        "existing pod's anti-affinity keeps the incoming pod out of its zone",
        [labelled("loner", {}, on="n1", podAntiAffinity=required(term(ZONE, app="web")))],
        labelled("p", {"app": "web"}),
        {"n1": EXISTING, "n2": EXISTING},
    ),
    (
        "existing pod's anti-affinity toward other labels does not matter",
        [labelled("loner", {}, on="n1", podAntiAffinity=required(term(ZONE, app="db")))],
        labelled("p", {"app": "web"}),
        {},
    ),
    (
        "pods in other namespaces do not match a term without namespaces",
        [labelled("db", {"app": "db"}, on="n1", ns="team-a")],
        labelled("p", {}, podAffinity=required(term(ZONE, app="db"))),
        {"n1": AFFINITY, "n2": AFFINITY, "n3": AFFINITY},
    ),
    (
        "namespaceSelector picks namespaces by label",
        [namespace("team-a", team="a"), labelled("db", {"app": "db"}, on="n1", ns="team-a")],
        labelled("p", {}, podAffinity=required(term(ZONE, ns_selector={"matchLabels": {"team": "a"}}, app="db"))),
        {"n3": AFFINITY},
    ),
    (
        "an empty namespaceSelector means every namespace",
        [labelled("db", {"app": "db"}, on="n3", ns="team-b")],
        labelled("p", {}, podAffinity=required(term(ZONE, ns_selector={}, app="db"))),
        {"n1": AFFINITY, "n2": AFFINITY},
    ),
    (
        "namespaces list",
        [labelled("db", {"app": "db"}, on="n3", ns="team-b")],
        labelled("p", {}, podAffinity=required(term(ZONE, namespaces=["team-b"], app="db"))),
        {"n1": AFFINITY, "n2": AFFINITY},
    ),
    (
        "mismatchLabelKeys: only other tenants' pods repel",
        [
            labelled("w1", {"app": "web", "tenant": "a"}, on="n1"),
            labelled("w2", {"app": "web", "tenant": "b"}, on="n3"),
        ],
        labelled(
            "p",
            {"tenant": "a"},
            podAntiAffinity=required({**term(ZONE, app="web"), "mismatchLabelKeys": ["tenant"]}),
        ),
        {"n3": ANTI},
    ),
]


@pytest.mark.parametrize(("name", "objects", "pod", "want"), FILTER_CASES)
def test_filter(name: str, objects: list, pod: dict, want: dict[str, str]) -> None:
    got = run_filter(objects, pod)
    assert got == {n: want.get(n, "") for n in got}, name


def run_score(objects: list[dict], pod: dict, config: dict | None = None) -> tuple[dict, dict] | None:
    return Cluster(*NODES, *objects, config=config).plugin_scores("InterPodAffinity", pod)


def _hard(weight: int) -> dict:
    return {"hardPodAffinityWeight": weight}


# (name, pods on the nodes, the pod, InterPodAffinity's args, raw scores, normalized scores); after
# upstream's scoring_test.go
SCORE_CASES = [
    (
        "preferred affinity",
        [DB_ON_N1, labelled("db2", {"app": "db"}, on="n2")],
        labelled("p", {}, podAffinity=preferred((5, term(ZONE, app="db")))),
        None,
        {"n1": 10, "n2": 10, "n3": 0},
        {"n1": 100, "n2": 100, "n3": 0},
    ),
    (
        "preferred anti-affinity",
        [labelled("web", {"app": "web"}, on="n1")],
        labelled("p", {}, podAntiAffinity=preferred((3, term(HOST, app="web")))),
        None,
        {"n1": -3, "n2": 0, "n3": 0},
        {"n1": 0, "n2": 100, "n3": 100},
    ),
    (
        # affinity 4 to db (zone) and anti-affinity 1 to web (hostname): n1 4-1=3, n2 4, n3 0
        "mixed terms: min and max",
        [DB_ON_N1, labelled("web", {"app": "web"}, on="n1")],
        labelled(
            "p",
            {},
            podAffinity=preferred((4, term(ZONE, app="db"))),
            podAntiAffinity=preferred((1, term(HOST, app="web"))),
        ),
        None,
        {"n1": 3, "n2": 4, "n3": 0},
        {"n1": 75, "n2": 100, "n3": 0},
    ),
    *(
        (
            f"an existing pod's required affinity counts hardPodAffinityWeight ({weight})",
            [labelled("fan", {}, on="n3", podAffinity=required(term(ZONE, app="web")))],
            labelled("p", {"app": "web"}),
            args,
            want,
            {"n1": 0, "n2": 0, "n3": 100},
        )
        for weight, args, want in ((1, None, {"n1": 0, "n2": 0, "n3": 1}), (7, _hard(7), {"n1": 0, "n2": 0, "n3": 7}))
    ),
    (
        "an existing pod's preferred terms count",
        [labelled("fan", {}, on="n1", podAntiAffinity=preferred((2, term(ZONE, app="web"))))],
        labelled("p", {"app": "web"}),
        None,
        {"n1": -2, "n2": -2, "n3": 0},
        {"n1": 0, "n2": 0, "n3": 100},
    ),
    (
        "ignorePreferredTermsOfExistingPods: PreScore skips",
        [labelled("fan", {}, on="n1", podAntiAffinity=preferred((2, term(ZONE, app="web"))))],
        labelled("p", {"app": "web"}),
        {"ignorePreferredTermsOfExistingPods": True},
        None,
        None,
    ),
]


@pytest.mark.parametrize(("name", "objects", "pod", "args", "raw", "normalized"), SCORE_CASES)
def test_score(
    name: str, objects: list, pod: dict, args: dict | None, raw: dict | None, normalized: dict | None
) -> None:
    config = {"profiles": [{"pluginConfig": [{"name": "InterPodAffinity", "args": args}]}]} if args else None
    assert run_score(objects, pod, config) == (None if raw is None else (raw, normalized)), name


def test_score_skips_without_any_affinity() -> None:
    assert run_score([labelled("x", {"app": "x"}, on="n1")], labelled("p", {})) is None


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"hardPodAffinityWeight": 101}, "hardPodAffinityWeight"),
        ({"hardPodAffinityWeight": -1}, "hardPodAffinityWeight"),
    ],
)
def test_invalid_args(args: dict, field: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_args(args)
    assert exc.value.field == field


def test_anti_affinity_saturates_nodes_and_the_pod_left_over_says_why() -> None:
    c = Cluster(*NODES)
    for i in range(4):
        c.create(labelled(f"web-{i}", {"app": "web"}, podAntiAffinity=required(term(HOST, app="web"))))
    c.settle()
    assert sorted(c.node_of(f"web-{i}") or "-" for i in range(4)) == ["-", "n1", "n2", "n3"]
    left = next(f"default/web-{i}" for i in range(4) if c.node_of(f"web-{i}") is None)
    assert c.sched.last_message[left] == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
        ""
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )


def test_cache_follows_its_database_and_moves_when_it_is_bound() -> None:
    # the cache waits (UnschedulableAndUnresolvable) until a db pod is bound, then joins its zone
    c = Cluster(*NODES)
    c.create(labelled("cache", {}, podAffinity=required(term(ZONE, app="db"))))
    c.settle()
    assert c.node_of("cache") is None
    c.create(labelled("db", {"app": "db"}))
    c.settle()
    c.advance(11)  # backoff
    db_zone = {"n1": "z1", "n2": "z1", "n3": "z2"}[c.node_of("db")]
    assert {"n1": "z1", "n2": "z1", "n3": "z2"}[c.node_of("cache")] == db_zone


def test_a_deleted_pod_no_longer_counts() -> None:
    # the pod table forgets the pod's labels and terms with it
    c = Cluster(
        *NODES,
        labelled("web", {"app": "web"}, on="n1"),
        labelled("fan", {}, on="n3", podAntiAffinity=required(term(ZONE, app="web"))),
    )
    pod = labelled("p", {"app": "web"}, podAntiAffinity=required(term(HOST, app="web")))
    assert c.filter_verdicts("InterPodAffinity", pod)["n1"][1] == ANTI
    assert c.filter_verdicts("InterPodAffinity", pod)["n3"][1] == EXISTING
    c.store.delete("Pod", "default", "web", 0)
    c.store.delete("Pod", "default", "fan", 0)
    c.sched.process_events()
    assert set(c.filter_verdicts("InterPodAffinity", pod).values()) == {(0, "")}
    assert not c.sched.cache.pod_table.term_groups


def test_nominated_pods_count_for_anti_affinity() -> None:
    # AddPod: a higher-priority pod nominated to n1 (it cannot be placed, so it keeps waiting
    # there) is counted when filtering n1 for a pod that repels it.
    waiting = make_waiting_nominated("waiting", "n1", labels={"app": "web"})
    c = Cluster(*NODES, make_priority_class("never100", 100, preemptionPolicy="Never"), waiting)
    c.settle()
    pod = labelled("p", {}, podAntiAffinity=required(term(HOST, app="web")))
    pod["spec"]["nodeSelector"] = {HOST: "n1"}
    c.create(pod)
    c.settle()
    assert c.node_of("p") is None
    assert c.sched.last_message["default/p"] == (
        "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, "
        "2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: "
        "1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
    )
