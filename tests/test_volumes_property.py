"""Random clusters of local volumes, provisioned classes, claims (ReadWriteOnce and ReadWriteOncePod,
shared by pods or not) and CSI attach limits, scheduled to quiescence; then, checked by brute
force on the final state: no volume serves two claims, no node holds more of the driver's
volumes than its CSINode allows, every bound pod's volumes admit its node, no ReadWriteOncePod
claim has two pods, and no pod left pending could have run on any node."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.volumes import ANN_BIND_COMPLETED, node_affinity_allows, requested_storage, volume_capacity
from kubesched.testing import Cluster
from test_volumes import DRIVER, HOST, csi_node, node, pv, pvc, storage_class, with_claims

SIZES = ("1Gi", "5Gi", "10Gi")


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str]]:
    n_nodes = draw(st.integers(1, 3))
    nodes = [f"n{i}" for i in range(n_nodes)]
    objects: list[dict[str, Any]] = [node(n, f"z{i % 2}") for i, n in enumerate(nodes)]
    for n in nodes:
        limit = draw(st.one_of(st.none(), st.integers(1, 3)))
        if limit is not None:
            objects.append(csi_node(n, limit))
    objects += [storage_class("local", provisioner="kubernetes.io/no-provisioner"), storage_class("dyn")]
    for i in range(draw(st.integers(0, 5))):
        modes = draw(
            st.sampled_from((("ReadWriteOnce",), ("ReadWriteOncePod",), ("ReadWriteOnce", "ReadWriteOncePod")))
        )
        host = draw(st.sampled_from(nodes))
        local = {"local": {"path": f"/mnt/disk{i}"}}  # a local volume: no CSI driver, no attach slot
        objects.append(pv(f"pv{i}", draw(st.sampled_from(SIZES)), "local", hosts=[host], modes=modes, source=local))
    claims = []
    for i in range(draw(st.integers(1, 5))):
        mode = draw(st.sampled_from(("ReadWriteOnce", "ReadWriteOncePod")))
        cls = draw(st.sampled_from(("local", "dyn")))
        objects.append(pvc(f"c{i}", draw(st.sampled_from(SIZES[:2])), cls, modes=(mode,)))
        claims.append(f"c{i}")
    pods = []
    for i in range(draw(st.integers(1, 5))):
        mine = draw(st.lists(st.sampled_from(claims), min_size=1, max_size=2, unique=True))
        objects.append(with_claims(f"p{i}", *mine))
        pods.append(f"p{i}")
    return objects, pods


def _limits(c: Cluster) -> dict[str, int]:
    out = {}
    for obj in c.store.list("CSINode")[0]:
        for d in obj["spec"]["drivers"]:
            if d["name"] == DRIVER:
                out[obj["metadata"]["name"]] = int(d["allocatable"]["count"])
    return out


def _claims_of(pod: dict[str, Any]) -> list[str]:
    return [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"]]


def _handle(c: Cluster, claim: dict[str, Any]) -> str | None:
    """The CSI volume's unique name; None for a volume that takes no attach slot."""
    csi = c.store.get("PersistentVolume", "", claim["spec"]["volumeName"])["spec"].get("csi")
    return f"{csi['driver']}/{csi['volumeHandle']}" if csi else None


def _bound(claim: dict[str, Any]) -> bool:
    return bool(claim["spec"].get("volumeName")) and ANN_BIND_COMPLETED in (claim["metadata"].get("annotations") or {})


def _feasible(c: Cluster, pod: dict[str, Any], node_name: str, running: list[dict[str, Any]]) -> bool:
    """Whether ``pod`` could run on ``node_name`` now: volumes, attach limit, RWOP claims."""
    labels = c.store.get("Node", "", node_name)["metadata"]["labels"]
    claims = {n: c.store.get("PersistentVolumeClaim", "default", n) for n in _claims_of(pod)}
    for name, claim in claims.items():
        if "ReadWriteOncePod" in claim["spec"]["accessModes"] and any(name in _claims_of(p) for p in running):
            return False
    on_node = {
        _handle(c, c.store.get("PersistentVolumeClaim", "default", n))
        for p in running
        for n in _claims_of(p)
        if p["spec"]["nodeName"] == node_name
    }
    new: set[str | None] = set()
    waiting = []
    for name, claim in claims.items():
        if _bound(claim):
            volume = c.store.get("PersistentVolume", "", claim["spec"]["volumeName"])
            if not node_affinity_allows(volume, labels):
                return False
            new.add(_handle(c, claim))
        elif claim["spec"]["storageClassName"] == "dyn":
            new.add(f"provisioned/{name}")
        else:
            waiting.append(claim)
    free = [v for v in c.store.list("PersistentVolume")[0] if not v["spec"].get("claimRef")]
    fits = [v for v in free if v["spec"]["storageClassName"] == "local" and node_affinity_allows(v, labels)]
    # findMatchingVolumes is greedy, not a search: the smallest claims first, each taking the
    # smallest free volume it fits (a bigger claim can find its only volume taken by a smaller
    # one that had another choice, upstream as here)
    taken: set[str] = set()
    for w in sorted(waiting, key=requested_storage):
        matching = [
            v
            for v in fits
            if v["metadata"]["name"] not in taken
            and volume_capacity(v) >= requested_storage(w)
            and set(w["spec"]["accessModes"]) <= set(v["spec"]["accessModes"])
        ]
        if not matching:
            return False
        taken.add(min(matching, key=lambda v: (volume_capacity(v), v["metadata"]["name"]))["metadata"]["name"])
    limit = _limits(c).get(node_name)
    return limit is None or len((on_node | new) - {None}) <= limit


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_volume_scheduling_invariants_against_brute_force(case: tuple[list[dict[str, Any]], list[str]]) -> None:
    objects, pods = case
    c = Cluster(*objects)
    c.settle()
    c.advance(400)  # past the unschedulable pods' 5-minute flush: every pod had its last chance
    claims = {o["metadata"]["name"]: o for o in c.store.list("PersistentVolumeClaim")[0]}
    volumes = {o["metadata"]["name"]: o for o in c.store.list("PersistentVolume")[0]}
    # no volume serves two claims, both ways
    users = [cl["spec"]["volumeName"] for cl in claims.values() if cl["spec"].get("volumeName")]
    assert len(users) == len(set(users))
    refs = [
        (v["spec"]["claimRef"]["namespace"], v["spec"]["claimRef"]["name"])
        for v in volumes.values()
        if v["spec"].get("claimRef")
    ]
    assert len(refs) == len(set(refs))
    running = [p for p in c.store.list("Pod")[0] if p["spec"].get("nodeName")]
    for p in running:
        labels = c.store.get("Node", "", p["spec"]["nodeName"])["metadata"]["labels"]
        for name in _claims_of(p):
            claim = claims[name]
            assert _bound(claim), f"{p['metadata']['name']} runs with claim {name} unbound"
            assert node_affinity_allows(volumes[claim["spec"]["volumeName"]], labels)
            if "ReadWriteOncePod" in claim["spec"]["accessModes"]:
                assert [q["metadata"]["name"] for q in running if name in _claims_of(q)] == [p["metadata"]["name"]]
    for node_name, limit in _limits(c).items():
        held = {_handle(c, claims[n]) for p in running if p["spec"]["nodeName"] == node_name for n in _claims_of(p)}
        assert len(held - {None}) <= limit
    for name in pods:
        pod = c.store.get("Pod", "default", name)
        if pod["spec"].get("nodeName"):
            continue
        nodes = [n["metadata"]["name"] for n in c.store.list("Node")[0]]
        assert not any(_feasible(c, pod, n, running) for n in nodes), f"{name} could run: {objects}"
    assert HOST  # (the builders label each node with its hostname)
