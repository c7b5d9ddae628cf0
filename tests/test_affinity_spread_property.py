"""Property: on random clusters no placement ever breaks a required pod (anti-)affinity term (the
incoming pod's or an existing pod's) or a DoNotSchedule topology spread constraint, and no pod is
left pending while some node would take it. Checked by a brute-force reference written here in
plain Python from upstream's rules (``interpodaffinity/filtering.go``,
``podtopologyspread/filtering.go``), replaying the bindings in the order they happened."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import make_node, make_pod
from kubesched.testing import Cluster

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
NAMESPACES = {"a": {"team": "red"}, "b": {"team": "blue"}}
APPS = ["x", "y"]

# -- random clusters ---------------------------------------------------------------------------------


@st.composite
def terms(draw: st.DrawFn) -> dict[str, Any]:
    t: dict[str, Any] = {
        "topologyKey": draw(st.sampled_from([HOST, ZONE])),
        "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
    }
    scope = draw(st.sampled_from(["own", "listed", "all", "team"]))
    if scope == "listed":
        t["namespaces"] = ["a", "b"]
    elif scope == "all":
        t["namespaceSelector"] = {}
    elif scope == "team":
        t["namespaceSelector"] = {"matchLabels": {"team": draw(st.sampled_from(["red", "blue"]))}}
    return t


@st.composite
def spread(draw: st.DrawFn) -> dict[str, Any]:
    c: dict[str, Any] = {
        "maxSkew": draw(st.integers(1, 2)),
        "topologyKey": draw(st.sampled_from([HOST, ZONE])),
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
    }
    if draw(st.booleans()):
        c["minDomains"] = draw(st.integers(1, 5))
    return c


@st.composite
def pods(draw: st.DrawFn, name: str, nodes: list[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    affinity = {
        kind: {"requiredDuringSchedulingIgnoredDuringExecution": ts}
        for kind in ("podAffinity", "podAntiAffinity")
        if (ts := [draw(terms()) for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2])))])
    }
    if affinity:
        spec["affinity"] = affinity
    constraints = [draw(spread()) for _ in range(draw(st.integers(0, 2)))]
    if constraints and len({c["topologyKey"] for c in constraints}) == len(constraints):  # one per key
        spec["topologySpreadConstraints"] = constraints
    node = draw(st.sampled_from([None, *nodes])) if name.startswith("r") else None
    p = make_pod(name, ns=draw(st.sampled_from(["a", "a", "b"])), spec=spec, node=node)
    p["metadata"]["labels"] = {"app": draw(st.sampled_from(APPS))}
    return p


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict], list[dict], list[dict]]:
    nodes = []
    for i in range(draw(st.integers(2, 4))):
        labels = {HOST: f"n{i}"}
        if draw(st.integers(0, 5)):  # now and then a node without a zone
            labels[ZONE] = draw(st.sampled_from(["z0", "z1", "z0", "z1", "z2"]))
        nodes.append(make_node(f"n{i}", labels=labels))
    names = [n["metadata"]["name"] for n in nodes]
    running = [p for i in range(draw(st.integers(0, 3))) if (p := draw(pods(f"r{i}", names)))["spec"].get("nodeName")]
    pending = [draw(pods(f"q{i}", names)) for i in range(draw(st.integers(1, 10)))]
    return nodes, running, pending


# -- the brute-force reference ---------------------------------------------------------------------


@dataclass(frozen=True)
class Placed:
    pod: dict[str, Any]
    node: dict[str, str]  # the labels of the node it runs on


def ns_of(pod: dict[str, Any]) -> str:
    return pod["metadata"]["namespace"]


def labels_of(pod: dict[str, Any]) -> dict[str, str]:
    return pod["metadata"].get("labels") or {}


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def term_matches(term: dict[str, Any], owner: dict[str, Any], pod: dict[str, Any]) -> bool:
    """Whether ``pod`` is in the term's namespaces and selected by its labelSelector; no namespaces
    and no namespaceSelector means the owner's own namespace."""
    namespaces = set(term.get("namespaces") or [])
    sel = term.get("namespaceSelector")
    if sel is not None:
        namespaces |= {n for n, labels in NAMESPACES.items() if selects(sel, labels)}
    elif not namespaces:
        namespaces = {ns_of(owner)}
    return ns_of(pod) in namespaces and selects(term["labelSelector"], labels_of(pod))


def required(pod: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    affinity = (pod["spec"].get("affinity") or {}).get(kind) or {}
    return affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []


def affinity_ok(pod: dict[str, Any], node: dict[str, str], placed: list[Placed]) -> bool:
    terms = required(pod, "podAffinity")
    if not terms:
        return True
    if any(t["topologyKey"] not in node for t in terms):
        return False
    # pods matching all the terms, counted in each term's domain (topology pairs)
    pairs = Counter(
        (t["topologyKey"], q.node[t["topologyKey"]])
        for q in placed
        if all(term_matches(t, pod, q.pod) for t in terms)
        for t in terms
        if t["topologyKey"] in q.node
    )
    if all(pairs[(t["topologyKey"], node[t["topologyKey"]])] > 0 for t in terms):
        return True
    # the first pod of a group that matches its own terms
    return not pairs and all(term_matches(t, pod, pod) for t in terms)


def anti_affinity_ok(pod: dict[str, Any], node: dict[str, str], placed: list[Placed]) -> bool:
    for t in required(pod, "podAntiAffinity"):
        key = t["topologyKey"]
        if key in node and any(q.node.get(key) == node[key] and term_matches(t, pod, q.pod) for q in placed):
            return False
    return True


def existing_anti_affinity_ok(pod: dict[str, Any], node: dict[str, str], placed: list[Placed]) -> bool:
    for q in placed:
        for t in required(q.pod, "podAntiAffinity"):
            key = t["topologyKey"]
            if key in q.node and node.get(key) == q.node[key] and term_matches(t, q.pod, pod):
                return False
    return True


def spread_ok(pod: dict[str, Any], node: dict[str, str], placed: list[Placed], nodes: list[dict[str, str]]) -> bool:
    constraints = [
        c for c in pod["spec"].get("topologySpreadConstraints") or [] if c["whenUnsatisfiable"] == "DoNotSchedule"
    ]
    keys = [c["topologyKey"] for c in constraints]
    eligible = [n for n in nodes if all(k in n for k in keys)]  # no nodeAffinity or taints here
    for c in constraints:
        key = c["topologyKey"]
        if key not in node:
            return False
        counts = dict.fromkeys((n[key] for n in eligible), 0)
        for q in placed:
            eligible_node = all(k in q.node for k in keys)
            if eligible_node and ns_of(q.pod) == ns_of(pod) and selects(c["labelSelector"], labels_of(q.pod)):
                counts[q.node[key]] += 1
        least = 0 if len(counts) < c.get("minDomains", 1) else min(counts.values())
        self_match = int(selects(c["labelSelector"], labels_of(pod)))
        if counts.get(node[key], 0) + self_match - least > c["maxSkew"]:
            return False
    return True


def feasible(pod: dict[str, Any], node: dict[str, str], placed: list[Placed], nodes: list[dict[str, str]]) -> bool:
    return (
        existing_anti_affinity_ok(pod, node, placed)
        and affinity_ok(pod, node, placed)
        and anti_affinity_ok(pod, node, placed)
        and spread_ok(pod, node, placed, nodes)
    )


# -- the property -------------------------------------------------------------------------------------


def namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_no_placement_breaks_required_affinity_or_hard_spread(cluster) -> None:
    nodes, running, pending = cluster
    node_labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
    c = Cluster(*(namespace(n, labels) for n, labels in NAMESPACES.items()), *nodes, *running)
    watch = c.store.watch(["Pod"])
    c.create(*pending)
    c.settle()
    for _ in range(len(pending)):  # retry leftovers (the 5-minute flush) until nothing more binds
        before = sum(c.node_of(p["metadata"]["name"], ns_of(p)) is not None for p in pending)
        c.advance(301)
        if sum(c.node_of(p["metadata"]["name"], ns_of(p)) is not None for p in pending) == before:
            break

    placed = [Placed(p, node_labels[p["spec"]["nodeName"]]) for p in running]
    bound: set[str] = set()
    for ev in watch.drain():  # replay the bindings in order, each against the pods placed before it
        host = ev.obj["spec"].get("nodeName")
        if ev.type == "DELETED" or not host or ev.obj["metadata"]["uid"] in bound:
            continue
        bound.add(ev.obj["metadata"]["uid"])
        name = ev.obj["metadata"]["name"]
        assert feasible(ev.obj, node_labels[host], placed, list(node_labels.values())), f"{name} on {host}"
        placed.append(Placed(ev.obj, node_labels[host]))

    for p in pending:  # whatever is left could go nowhere
        if c.node_of(p["metadata"]["name"], ns_of(p)) is None:
            name = p["metadata"]["name"]
            ok = [n for n, labels in node_labels.items() if feasible(p, labels, placed, list(node_labels.values()))]
            assert not ok, f"{name} left pending, but {ok} would take it"
