"""Queueing hints of InterPodAffinity and PodTopologySpread (``isSchedulableAfterPodChange`` in
``interpodaffinity/plugin.go`` and ``podtopologyspread/plugin.go``, and their
``isSchedulableAfterNodeChange``): an assigned pod added, relabelled or deleted, or a node added,
changed or deleted, moves back only the unschedulable pods whose rejecting plugin says the change
may help; the others stay where they are."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest

from helpers import make_node, make_pod
from kubesched.api.pod import pod_info_from
from kubesched.testing import Cluster

HOST = "kubernetes.io/hostname"


def labelled(name: str, app: str, on: str | None = None, ns: str = "default", **spec: object) -> dict:
    p = make_pod(name, node=on, ns=ns, spec=spec or None)
    p["metadata"]["labels"] = {"app": app}
    return p


def required(kind: str, app: str) -> dict:
    term = {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": app}}}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


# two nodes, each running a web pod and an x pod
RUNNING = [labelled(f"{app}{i}", app, on=f"n{i}") for app in ("web", "x") for i in (1, 2)]
PENDING = {
    # InterPodAffinity, UnschedulableAndUnresolvable: no db pod anywhere
    "needs-db": labelled("needs-db", "a", affinity=required("podAffinity", "db")),
    # InterPodAffinity: a web pod on every node
    "shuns-web": labelled("shuns-web", "b", affinity=required("podAntiAffinity", "web")),
    # PodTopologySpread: two domains of three wanted, so the global minimum is 0 and the skew 2
    "spreads-x": labelled(
        "spreads-x",
        "x",
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "minDomains": 3,
                "topologyKey": HOST,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "x"}},
            }
        ],
    ),
    # NodeAffinity, which no pod event concerns
    "picky": labelled("picky", "c", nodeSelector={"disk": "ssd"}),
}


def relabel(name: str, app: str) -> Callable[[Cluster], None]:
    def change(c: Cluster) -> None:
        p = copy.deepcopy(c.store.get("Pod", "default", name))
        p["metadata"]["labels"] = {"app": app}
        c.store.update("Pod", p)

    return change


def add(obj: dict) -> Callable[[Cluster], None]:
    return lambda c: c.create(obj)


def node_change(name: str, **labels: str) -> Callable[[Cluster], None]:
    """Relabel a node, or taint it when no labels are given."""

    def change(c: Cluster) -> None:
        n = copy.deepcopy(c.store.get("Node", "", name))
        if labels:
            n["metadata"]["labels"].update(labels)
        else:
            n["spec"]["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
        c.store.update("Node", n)

    return change


def delete(name: str, kind: str = "Pod") -> Callable[[Cluster], None]:
    ns = "default" if kind == "Pod" else ""
    return lambda c: c.store.delete(kind, ns, name, grace_period_seconds=0)


CASES = [
    ("assigned db pod added", add(labelled("db", "db", on="n1")), {"needs-db"}),
    ("assigned x pod added", add(labelled("x3", "x", on="n1")), {"spreads-x"}),
    ("assigned x pod added in another namespace", add(labelled("x3", "x", on="n1", ns="other")), set()),
    ("pending db pod added", add(labelled("db", "db", nodeSelector={"disk": "hdd"})), set()),
    ("web pod deleted", delete("web1"), {"shuns-web"}),
    ("x pod deleted", delete("x1"), {"spreads-x"}),
    ("web pod relabelled to db", relabel("web1", "db"), {"needs-db", "shuns-web"}),
    ("web pod relabelled to c", relabel("web1", "c"), {"shuns-web"}),
    ("x pod relabelled to web", relabel("x1", "web"), {"spreads-x"}),
    ("web pod relabelled to x", relabel("web1", "x"), {"shuns-web", "spreads-x"}),
    # nodes: InterPodAffinity wants a node with a term's key, PodTopologySpread one with every
    # constraint's key (a new domain, a key's value or taints changed, or a domain gone)
    ("node added with a hostname", add(make_node("n3", labels={HOST: "n3"})), {"needs-db", "shuns-web", "spreads-x"}),
    ("node added without a hostname", add(make_node("n3")), set()),
    ("node relabelled, hostname kept", node_change("n1", tier="gold"), {"needs-db", "shuns-web"}),
    ("node's hostname changed", node_change("n1", **{HOST: "n9"}), {"needs-db", "shuns-web", "spreads-x"}),
    ("node tainted", node_change("n1"), {"spreads-x"}),
    ("node deleted", delete("n2", kind="Node"), {"spreads-x"}),
]


@pytest.mark.parametrize(("event", "change", "moved"), CASES, ids=[event for event, _, _ in CASES])
def test_events_move_only_the_pods_they_may_help(
    event: str, change: Callable[[Cluster], None], moved: set[str]
) -> None:
    nodes = [make_node(n, labels={HOST: n}) for n in ("n1", "n2")]
    c = Cluster(*nodes, *RUNNING)
    c.create(*PENDING.values())
    c.settle()
    uids = {name: p["metadata"]["uid"] for name, p in PENDING.items()}
    assert {name: c.sched.queue.where(uid) for name, uid in uids.items()} == dict.fromkeys(PENDING, "unschedulable")
    change(c)
    c.sched.process_events()
    got = {name for name, uid in uids.items() if c.sched.queue.where(uid) != "unschedulable"}
    assert got == moved, event


@pytest.mark.parametrize(("policy", "want"), [("Honor", True), ("Ignore", False)])
def test_spread_requeues_a_pod_given_tolerations_only_when_taints_are_honored(policy: str, want: bool) -> None:
    c = Cluster(make_node("n1", labels={HOST: "n1"}))
    hint = c.sched.profiles["default-scheduler"].plugins["PodTopologySpread"].events_to_register()[0].hint
    constraint = {
        "maxSkew": 1,
        "topologyKey": HOST,
        "whenUnsatisfiable": "DoNotSchedule",
        "nodeTaintsPolicy": policy,
        "labelSelector": {"matchLabels": {"app": "x"}},
    }
    before = labelled("p", "x", topologySpreadConstraints=[constraint])
    after = copy.deepcopy(before)
    after["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    old, new = pod_info_from(before), pod_info_from(after)
    assert hint(old, old, new) is want
