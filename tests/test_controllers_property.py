"""After any sequence of scale, rollout, pod deletion, owner deletion (with any propagation
policy) and node stops, once every node is back and the cluster settles, every controller's pods
match its spec, and no pod is orphaned or duplicated: the invariants kube-controller-manager
keeps, checked against a plain count of what the Store holds."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.kubelet.node import STOPPED_ANNOTATION as STOPPED
from kubesched.kubelet.node import fake_node
from kubesched.testing import Cluster

NAMES = ("a", "b")


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "v0"}]}},
        },
    }


def statefulset(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": f"s{name}", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"sts": name}},
            "template": {"metadata": {"labels": {"sts": name}}, "spec": {"containers": [{"name": "c", "image": "v0"}]}},
        },
    }


ops = st.lists(
    st.one_of(
        st.tuples(st.just("scale"), st.sampled_from(NAMES), st.integers(0, 6)),
        st.tuples(st.just("scale-sts"), st.sampled_from(NAMES), st.integers(0, 4)),
        st.tuples(st.just("rollout"), st.sampled_from(NAMES), st.integers(1, 3)),
        st.tuples(st.just("delete-pod"), st.integers(0, 50), st.just(0)),
        st.tuples(st.just("delete"), st.sampled_from(NAMES), st.sampled_from(["Background", "Foreground", "Orphan"])),
        st.tuples(st.just("create"), st.sampled_from(NAMES), st.integers(0, 5)),
        st.tuples(st.just("advance"), st.integers(0, 2), st.just(0)),
        # a node's kubelet stops (and the pods' 300 s toleration may run out) or starts again
        st.tuples(st.just("node-stop"), st.integers(0, 2), st.sampled_from([0, 400])),
        st.tuples(st.just("node-start"), st.integers(0, 2), st.just(0)),
    ),
    max_size=12,
)


def _apply(c: Cluster, op: tuple[str, Any, Any]) -> None:
    kind, name, arg = op
    store = c.store
    if kind == "scale" and store.try_get("Deployment", "default", name):
        store.mutate("Deployment", "default", name, lambda o: {**o, "spec": {**o["spec"], "replicas": arg}})
    elif kind == "scale-sts" and store.try_get("StatefulSet", "default", f"s{name}"):
        store.mutate("StatefulSet", "default", f"s{name}", lambda o: {**o, "spec": {**o["spec"], "replicas": arg}})
    elif kind == "rollout" and store.try_get("Deployment", "default", name):

        def image(o: dict[str, Any]) -> dict[str, Any]:
            t = o["spec"]["template"]
            spec = {**t["spec"], "containers": [{"name": "c", "image": f"v{arg}"}]}
            return {**o, "spec": {**o["spec"], "template": {**t, "spec": spec}}}

        store.mutate("Deployment", "default", name, image)
    elif kind == "delete-pod":
        live = sorted(p["metadata"]["name"] for p in store.list("Pod")[0])
        if live:
            store.delete("Pod", "default", live[name % len(live)])
    elif kind == "delete" and store.try_get("Deployment", "default", name):
        store.delete("Deployment", "default", name, propagation=arg)
    elif kind == "create" and not store.try_get("Deployment", "default", name):
        store.create("Deployment", deployment(name, arg))
    elif kind == "advance":
        c.advance(arg)
    elif kind in ("node-stop", "node-start"):
        annotations = {STOPPED: "true"} if kind == "node-stop" else {}
        store.mutate("Node", "", f"n{name}", lambda o: {**o, "metadata": {**o["metadata"], "annotations": annotations}})
        c.settle()
        c.advance(arg)
    c.settle()


def _active(p: dict[str, Any]) -> bool:
    return not p["metadata"].get("deletionTimestamp") and p["status"].get("phase") not in ("Succeeded", "Failed")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial=st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 3)), steps=ops)
def test_owned_pods_match_specs_and_none_is_orphaned(initial, steps):
    c = Cluster(*[{**fake_node(f"n{i}"), "kind": "Node"} for i in range(3)], workloads=True)
    c.create(deployment("a", initial[0]), deployment("b", initial[1]), statefulset("a", initial[2]))
    c.settle()
    for op in steps:
        _apply(c, op)
    for i in range(3):  # every kubelet back: pods left Terminating on a stopped node are confirmed gone
        _apply(c, ("node-start", i, 0))
    for _ in range(3):
        c.advance(10)
    store = c.store
    by_uid = {
        o["metadata"]["uid"]: (kind, o)
        for kind in ("Deployment", "ReplicaSet", "StatefulSet")
        for o in store.list(kind)[0]
    }
    pods = store.list("Pod")[0]
    assert all(p["spec"].get("nodeName") and p["status"]["phase"] == "Running" for p in pods)
    # no orphans: every owner reference names an object that exists (the garbage collector's job)
    for obj in pods + store.list("ReplicaSet")[0]:
        for ref in obj["metadata"].get("ownerReferences") or []:
            assert ref["uid"] in by_uid, (obj["metadata"]["name"], ref)
    # every ReplicaSet has exactly its replicas, every Deployment its replicas in the newest ReplicaSet
    for rs in store.list("ReplicaSet")[0]:
        owned = [p for p in pods if _active(p) and p["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]]
        assert len(owned) == rs["spec"]["replicas"], rs["metadata"]["name"]
    for d in store.list("Deployment")[0]:
        rss = [
            r
            for r in store.list("ReplicaSet")[0]
            if (r["metadata"].get("ownerReferences") or [{}])[0].get("uid") == d["metadata"]["uid"]
        ]
        image = d["spec"]["template"]["spec"]["containers"][0]["image"]
        current = [r for r in rss if r["spec"]["template"]["spec"]["containers"][0]["image"] == image]
        assert len(current) == 1 and current[0]["spec"]["replicas"] == d["spec"]["replicas"]
        assert all(r["spec"]["replicas"] == 0 for r in rss if r is not current[0])
        assert d["status"].get("availableReplicas", 0) == d["spec"]["replicas"]
    # a StatefulSet's pods are exactly its ordinals, once each
    for s in store.list("StatefulSet")[0]:
        name = s["metadata"]["name"]
        mine = sorted(
            p["metadata"]["name"]
            for p in pods
            if (p["metadata"].get("ownerReferences") or [{}])[0].get("uid") == s["metadata"]["uid"]
        )
        assert mine == sorted(f"{name}-{i}" for i in range(s["spec"]["replicas"]))
    names = [p["metadata"]["name"] for p in pods]
    assert len(names) == len(set(names))
