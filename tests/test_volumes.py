"""The four volume plugins (VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone) and
the embedded volume controllers: tables after upstream's ``_test.go`` cases, through the
scheduler with ``kubesched.testing.Cluster``; verdicts per node with ``filter_verdicts``."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import make_node, make_pod, make_priority_class
from kubesched.api.volumes import ANN_BIND_COMPLETED, ANN_SELECTED_NODE
from kubesched.framework.events import ActionType
from kubesched.framework.status import Code
from kubesched.testing import Cluster

UAU, UNSCHED, ERROR = int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), int(Code.UNSCHEDULABLE), int(Code.ERROR)
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
DRIVER = "disk.csi.example.com"

NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ZONE_CONFLICT = "node(s) had no available volume zone"
MAX_VOLUMES = "node(s) exceed max volume count"
DISK_CONFLICT = "node(s) had no available disk"
RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)


def node(name: str, zone: str | None = None, **labels: str) -> dict[str, Any]:
    return make_node(name, labels={HOST: name, **({ZONE: zone} if zone else {}), **labels})


def storage_class(name: str, provisioner: str = DRIVER, mode: str = "WaitForFirstConsumer", **extra: Any) -> dict:
    return {
        "kind": "StorageClass",
        "apiVersion": "storage.k8s.io/v1",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **extra,
    }


def pv(
    name: str,
    size: str = "10Gi",
    cls: str = "wffc",
    *,
    hosts: list[str] | None = None,
    zones: list[str] | None = None,
    claim: str | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    labels: dict | None = None,
    source: dict | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": cls,
        **(source or {"csi": {"driver": DRIVER, "volumeHandle": name}}),
    }
    exprs = []
    if hosts:
        exprs.append({"key": HOST, "operator": "In", "values": hosts})
    if zones:
        exprs.append({"key": ZONE, "operator": "In", "values": zones})
    if exprs:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    if claim:
        spec["claimRef"] = {"namespace": "default", "name": claim}
    return {"kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def pvc(
    name: str,
    size: str = "5Gi",
    cls: str = "wffc",
    *,
    volume: str | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "storageClassName": cls,
        "resources": {"requests": {"storage": size}},
    }
    if volume:
        spec["volumeName"] = volume
    return {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def bound_claim(name: str, volume: str) -> dict[str, Any]:
    """A claim the PV controller finished binding (to a volume that may since have gone)."""
    obj = pvc(name, volume=volume)
    obj["metadata"]["annotations"] = {ANN_BIND_COMPLETED: "yes"}
    return obj


def csi_node(name: str, count: int, *, migrated: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if migrated:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": migrated}
    return {
        "kind": "CSINode",
        "apiVersion": "storage.k8s.io/v1",
        "metadata": meta,
        "spec": {"drivers": [{"name": DRIVER, "nodeID": name, "allocatable": {"count": count}}]},
    }


def with_claims(name: str, *claims: str, priority_class: str | None = None, **spec: Any) -> dict[str, Any]:
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return make_pod(name, "100m", priority_class=priority_class, spec={"volumes": volumes, **spec})


PRIORITIES = (make_priority_class("low", 1), make_priority_class("high", 100))


def message(c: Cluster, name: str) -> str:
    conditions = (c.store.get("Pod", "default", name).get("status") or {}).get("conditions") or []
    return next((x.get("message", "") for x in conditions if x.get("type") == "PodScheduled"), "")


def claim(c: Cluster, name: str) -> dict[str, Any]:
    return c.store.get("PersistentVolumeClaim", "default", name)


# -- VolumeBinding ---------------------------------------------------------------------------------
VOLUME_BINDING_CASES = [
    pytest.param([], (), {}, id="no claims: PreFilter skips"),
    pytest.param([], ("missing",), (UAU, 'persistentvolumeclaim "missing" not found'), id="claim not found"),
    pytest.param(
        [storage_class("imm", "kubernetes.io/no-provisioner", "Immediate"), pvc("c", cls="imm")],
        ("c",),
        (UAU, "pod has unbound immediate PersistentVolumeClaims"),
        id="unbound immediate claim",
    ),
    pytest.param(
        [pv("pv-a", hosts=["a"], claim="c"), pvc("c", volume="pv-a")],
        ("c",),
        {"a": (0, ""), "b": (UAU, NODE_CONFLICT)},
        id="bound volume's node affinity",
    ),
    pytest.param(
        [bound_claim("c", "gone")],
        ("c",),
        {"a": (UAU, PV_NOT_EXIST), "b": (UAU, PV_NOT_EXIST)},
        id="bound to a volume that does not exist",
    ),
    pytest.param(
        [storage_class("wffc", provisioner="kubernetes.io/no-provisioner"), pv("pv-b", hosts=["b"]), pvc("c")],
        ("c",),
        {"a": (UAU, BIND_CONFLICT), "b": (0, "")},
        id="WaitForFirstConsumer: a free volume on one node, no provisioner",
    ),
    pytest.param(
        [storage_class("wffc", provisioner="kubernetes.io/no-provisioner"), pv("small", "1Gi"), pvc("c")],
        ("c",),
        {"a": (UAU, BIND_CONFLICT), "b": (UAU, BIND_CONFLICT)},
        id="the only volume is too small",
    ),
    pytest.param(
        [
            storage_class("wffc", allowedTopologies=[{"matchLabelExpressions": [{"key": ZONE, "values": ["z2"]}]}]),
            pvc("c"),
        ],
        ("c",),
        {"a": (UAU, BIND_CONFLICT), "b": (0, "")},
        id="provisioning only where the class's topologies allow",
    ),
    pytest.param(
        [
            storage_class("wffc"),
            {"kind": "CSIDriver", "metadata": {"name": DRIVER}, "spec": {"storageCapacity": True}},
            {
                "kind": "CSIStorageCapacity",
                "metadata": {"name": "cap-z1", "namespace": "default"},
                "storageClassName": "wffc",
                "capacity": "100Gi",
                "nodeTopology": {"matchLabels": {ZONE: "z1"}},
            },
            {
                "kind": "CSIStorageCapacity",
                "metadata": {"name": "cap-z2", "namespace": "default"},
                "storageClassName": "wffc",
                "capacity": "1Gi",
                "nodeTopology": {"matchLabels": {ZONE: "z2"}},
            },
            pvc("c"),
        ],
        ("c",),
        {"a": (0, ""), "b": (UAU, NOT_ENOUGH_SPACE)},
        id="storage capacity tracking",
    ),
    pytest.param(
        [pvc("c", cls="")],
        ("c",),
        (UAU, "pod has unbound immediate PersistentVolumeClaims"),
        id="a claim without a class binds immediately",
    ),
]


@pytest.mark.parametrize(("objects", "pod_claims", "expected"), VOLUME_BINDING_CASES)
def test_volume_binding_filter(objects, pod_claims, expected) -> None:
    c = Cluster(node("a", "z1"), node("b", "z2"), *objects)
    c.settle()  # the PV controller completes the bindings the objects describe
    got = c.filter_verdicts("VolumeBinding", with_claims("p", *pod_claims))
    if isinstance(expected, tuple):  # PreFilter's answer: every node gets it
        expected = dict.fromkeys(("a", "b"), expected)
    assert got == ({"a": (0, ""), "b": (0, "")} if expected == {} else expected)


def test_a_claim_being_provisioned_for_another_node_fails_the_others_fast() -> None:
    selected = pvc("c")
    selected["metadata"]["annotations"] = {ANN_SELECTED_NODE: "b"}
    c = Cluster(node("a", "z1"), node("b", "z2"), storage_class("wffc"), selected)  # not settled: no volume yet
    assert c.filter_verdicts("VolumeBinding", with_claims("p", "c")) == {"a": (UAU, BIND_CONFLICT), "b": (0, "")}


def test_ephemeral_claim_waits_for_the_controller_then_is_provisioned_on_the_chosen_node() -> None:
    template = {
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "wffc",
            "resources": {"requests": {"storage": "1Gi"}},
        }
    }
    p = make_pod("web", "100m", spec={"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}]})
    c = Cluster(node("a", "z1"), storage_class("wffc"))
    assert c.filter_verdicts("VolumeBinding", p)["a"] == (
        UAU,
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "web-scratch"',
    )
    c.create(p)
    c.settle()
    assert c.node_of("web") == "a"
    made = claim(c, "web-scratch")
    assert made["metadata"]["ownerReferences"][0]["uid"] == p["metadata"]["uid"]
    assert made["metadata"]["annotations"][ANN_SELECTED_NODE] == "a"
    assert made["status"]["phase"] == "Bound" and ANN_BIND_COMPLETED in made["metadata"]["annotations"]
    volume = c.store.get("PersistentVolume", "", made["spec"]["volumeName"])
    terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1"]}]}]
    c.store.delete("Pod", "default", "web", grace_period_seconds=0)
    c.settle()
    assert c.store.try_get("PersistentVolumeClaim", "default", "web-scratch") is None  # goes with its pod


def test_ephemeral_claim_of_another_pod_is_refused() -> None:
    other = pvc("web-scratch")
    other["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "x", "uid": "someone-else", "controller": True}]
    p = make_pod(
        "web", "100m", spec={"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]}
    )
    c = Cluster(node("a"), other)
    assert c.filter_verdicts("VolumeBinding", p)["a"] == (
        UAU,
        "PVC default/web-scratch was not created for pod default/web (pod is not owner)",
    )


def test_wait_for_first_consumer_binds_each_claim_to_the_smallest_free_volume_on_its_node() -> None:
    c = Cluster(
        node("a"),
        node("b"),
        storage_class("wffc", provisioner="kubernetes.io/no-provisioner"),
        pv("big-a", "100Gi", hosts=["a"]),
        pv("small-a", "10Gi", hosts=["a"]),
        pv("only-b", "10Gi", hosts=["b"]),
        pvc("c0"),
        pvc("c1"),
        pvc("c2"),
        pvc("c3"),
        with_claims("p0", "c0", nodeSelector={HOST: "a"}),
        with_claims("p1", "c1", nodeSelector={HOST: "a"}),
        with_claims("p2", "c2", nodeSelector={HOST: "a"}),
        with_claims("p3", "c3"),
    )
    c.settle()
    assert [c.node_of(f"p{i}") for i in range(4)] == ["a", "a", None, "b"]
    assert claim(c, "c0")["spec"]["volumeName"] == "small-a"  # the smallest that fits first
    assert claim(c, "c1")["spec"]["volumeName"] == "big-a"
    assert claim(c, "c3")["spec"]["volumeName"] == "only-b"
    assert "3 node(s) didn't match Pod's node affinity/selector" not in message(c, "p2")
    assert message(c, "p2").startswith("0/2 nodes are available: 1 node(s) didn't find available persistent")
    for name, volume in (("c0", "small-a"), ("c1", "big-a"), ("c3", "only-b")):
        pv_obj = c.store.get("PersistentVolume", "", volume)
        assert pv_obj["spec"]["claimRef"]["name"] == name and pv_obj["status"]["phase"] == "Bound"
        assert claim(c, name)["status"]["phase"] == "Bound"


def test_reserve_assumes_a_volume_so_the_next_pod_cannot_take_it_before_prebind() -> None:
    c = Cluster(node("a"), storage_class("wffc", provisioner="kubernetes.io/no-provisioner"), pv("only", hosts=["a"]))
    c.create(pvc("c0"), pvc("c1"))
    c.settle()
    binding = c.sched.profiles["default-scheduler"].plugins["VolumeBinding"]
    from kubesched.api.pod import pod_info_from
    from kubesched.framework.cycle_state import CycleState

    first, second = pod_info_from(with_claims("p0", "c0")), pod_info_from(with_claims("p1", "c1"))
    state = CycleState()
    binding.pre_filter(state, first, c.sched.cache.table)
    assert binding.filter_nodes(state, first, c.sched.cache.table) is None
    assert binding.reserve(state, first, "a") is None
    assert c.filter_verdicts("VolumeBinding", with_claims("p1", "c1")) == {"a": (UAU, BIND_CONFLICT)}
    binding.unreserve(state, first, "a")
    assert c.filter_verdicts("VolumeBinding", with_claims("p1", "c1")) == {"a": (0, "")}
    del second


def test_immediate_claim_is_bound_by_the_pv_controller_and_the_pod_follows() -> None:
    c = Cluster(node("a", "z1"), node("b", "z2"), storage_class("imm", mode="Immediate"), pvc("c", cls="imm"))
    c.settle()
    bound = claim(c, "c")
    assert bound["status"]["phase"] == "Bound"
    volume = c.store.get("PersistentVolume", "", bound["spec"]["volumeName"])
    assert volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["z1"]
    c.create(with_claims("p", "c"))
    c.settle()
    assert c.node_of("p") == "a"


def test_a_missing_claim_created_later_requeues_the_pod() -> None:
    c = Cluster(node("a"), storage_class("wffc"), with_claims("p", "late"))
    c.settle()
    assert message(c, "p").startswith('0/1 nodes are available: persistentvolumeclaim "late" not found.')
    c.create(pvc("late"))
    c.advance(1)  # the claim's arrival requeues the pod; its backoff is over after a second
    assert c.node_of("p") == "a"
    assert claim(c, "late")["status"]["phase"] == "Bound"


# -- VolumeZone -------------------------------------------------------------------------------------
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


VOLUME_ZONE_CASES = [
    pytest.param({}, {"a": 0, "b": 0, "plain": 0}, id="no topology labels on the volume"),
    pytest.param({ZONE: "z1"}, {"a": 0, "b": UAU, "plain": 0}, id="GA zone; a node without zones passes"),
    pytest.param({BETA_ZONE: "z2"}, {"a": UAU, "b": 0, "plain": 0}, id="beta label matched against GA node label"),
    pytest.param({ZONE: "z1__z2"}, {"a": 0, "b": 0, "plain": 0}, id="several zones in one value"),
    pytest.param({ZONE: "z3"}, {"a": UAU, "b": UAU, "plain": 0}, id="no node in the zone"),
]


@pytest.mark.parametrize(("volume_labels", "expected"), VOLUME_ZONE_CASES)
def test_volume_zone_filter(volume_labels, expected) -> None:
    c = Cluster(
        node("a", "z1"),
        node("b", "z2"),
        make_node("plain"),
        pv("vol", labels=volume_labels, claim="c"),
        pvc("c", volume="vol"),
    )
    got = c.filter_verdicts("VolumeZone", with_claims("p", "c"))
    assert {n: code for n, (code, _) in got.items()} == expected
    assert all(msg == ZONE_CONFLICT for code, msg in got.values() if code)


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param([pvc("c", cls="")], "PersistentVolumeClaim had no pv name and storageClass name", id="no class"),
        pytest.param([pvc("c", cls="nope")], 'storageclasses.storage.k8s.io "nope" not found', id="class not found"),
        pytest.param(
            [storage_class("imm", mode="Immediate"), pvc("c", cls="imm")],
            "PersistentVolume had no name",
            id="immediate",
        ),
        pytest.param([pvc("c", volume="gone")], 'persistentvolume "gone" not found', id="volume not found"),
        pytest.param([], 'persistentvolumeclaim "c" not found', id="claim not found"),
    ],
)
def test_volume_zone_prefilter_messages(objects, expected) -> None:
    c = Cluster(node("a", "z1"), *objects)
    assert c.filter_verdicts("VolumeZone", with_claims("p", "c")) == {"a": (UAU, expected)}


# -- VolumeRestrictions -----------------------------------------------------------------------------
def gce(pd: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": pd, "gcePersistentDisk": {"pdName": pd, "readOnly": read_only}}


DISK_CONFLICT_CASES = [
    pytest.param([gce("foo")], [gce("foo")], True, id="GCE PD read-write twice"),
    pytest.param([gce("foo", True)], [gce("foo", True)], False, id="GCE PD read-only twice"),
    pytest.param([gce("foo")], [gce("bar")], False, id="different GCE PDs"),
    pytest.param(
        [{"name": "e", "awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": True}}],
        [{"name": "e", "awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": True}}],
        True,
        id="an EBS volume attaches to one node, read-only or not",
    ),
    pytest.param(
        [{"name": "i", "iscsi": {"iqn": "iqn.2016-12.server:storage.target01", "readOnly": False}}],
        [{"name": "i", "iscsi": {"iqn": "iqn.2016-12.server:storage.target01", "readOnly": False}}],
        True,
        id="iSCSI",
    ),
    pytest.param(
        [{"name": "r", "rbd": {"monitors": ["a", "b"], "pool": "p", "image": "i"}}],
        [{"name": "r", "rbd": {"monitors": ["c", "d"], "pool": "p", "image": "i"}}],
        False,
        id="RBD images on clusters without a common monitor",
    ),
]


@pytest.mark.parametrize(("existing", "incoming", "conflict"), DISK_CONFLICT_CASES)
def test_volume_restrictions_disk_conflicts(existing, incoming, conflict) -> None:
    c = Cluster(node("a"), node("b"), make_pod("old", node="a", spec={"volumes": existing}))
    c.settle()
    got = c.filter_verdicts("VolumeRestrictions", make_pod("new", spec={"volumes": incoming}))
    assert got == {"a": (UNSCHED, DISK_CONFLICT) if conflict else (0, ""), "b": (0, "")}


def test_read_write_once_pod_claim_in_use_anywhere_rejects_every_node_and_preemption_frees_it() -> None:
    c = Cluster(
        node("a"),
        node("b"),
        storage_class("wffc"),
        pvc("shared", modes=("ReadWriteOncePod",)),
        *PRIORITIES,
        with_claims("holder", "shared", priority_class="low"),
    )
    c.settle()
    assert c.node_of("holder") is not None
    c.create(with_claims("same-priority", "shared", priority_class="low"))
    c.settle()
    assert c.node_of("same-priority") is None
    assert message(c, "same-priority").startswith(f"0/2 nodes are available: 2 {RWOP_CONFLICT}.")
    c.create(with_claims("urgent", "shared", priority_class="high"))
    c.settle()
    assert c.store.get("Pod", "default", "holder")["metadata"].get("deletionTimestamp")  # the victim
    c.advance(31)  # its grace period over, the claim is free
    assert c.store.try_get("Pod", "default", "holder") is None
    assert c.node_of("urgent") is not None


# -- NodeVolumeLimits -------------------------------------------------------------------------------
def test_attach_limit_counts_each_volume_once_per_node() -> None:
    c = Cluster(
        node("a"),
        csi_node("a", 2),
        storage_class("wffc"),
        pvc("c0"),
        pvc("c1"),
        pvc("c2"),
        with_claims("p0", "c0", "c1"),
        with_claims("share", "c0"),  # a volume already on the node takes no new slot
    )
    c.settle()
    assert c.node_of("p0") == "a" and c.node_of("share") == "a"
    c.create(with_claims("p1", "c2"))
    c.settle()
    assert c.node_of("p1") is None
    assert message(c, "p1").startswith(f"0/1 nodes are available: 1 {MAX_VOLUMES}.")
    assert c.filter_verdicts("NodeVolumeLimits", with_claims("again", "c1")) == {"a": (0, "")}


def test_attach_limit_frees_a_slot_when_a_pod_goes_and_preemption_uses_it() -> None:
    c = Cluster(
        node("a"),
        csi_node("a", 1),
        storage_class("wffc"),
        pvc("low"),
        pvc("high"),
        *PRIORITIES,
        with_claims("low", "low", priority_class="low"),
    )
    c.settle()
    c.create(with_claims("high", "high", priority_class="high"))
    c.settle()
    assert c.store.get("Pod", "default", "low")["metadata"].get("deletionTimestamp")  # its slot is needed
    c.advance(31)
    assert c.node_of("high") == "a"


def test_attachments_and_migrated_in_tree_volumes_count() -> None:
    c = Cluster(
        node("a"),
        node("b"),
        csi_node("a", 1),
        {
            "kind": "CSINode",
            "metadata": {
                "name": "b",
                "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"},
            },
            "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "b", "allocatable": {"count": 1}}]},
        },
        pv("attached", claim="x"),
        {
            "kind": "VolumeAttachment",
            "metadata": {"name": "va-1"},
            "spec": {"attacher": DRIVER, "nodeName": "a", "source": {"persistentVolumeName": "attached"}},
        },
        make_pod("ebs-0", node="b", spec={"volumes": [{"name": "e", "awsElasticBlockStore": {"volumeID": "vol-0"}}]}),
        storage_class("wffc"),
        pvc("c"),
    )
    c.settle()
    ebs = make_pod("ebs-1", spec={"volumes": [{"name": "e", "awsElasticBlockStore": {"volumeID": "vol-1"}}]})
    assert c.filter_verdicts("NodeVolumeLimits", ebs) == {"a": (0, ""), "b": (UNSCHED, MAX_VOLUMES)}
    assert c.filter_verdicts("NodeVolumeLimits", with_claims("p", "c")) == {"a": (UNSCHED, MAX_VOLUMES), "b": (0, "")}
    c.store.delete("VolumeAttachment", "", "va-1")
    c.settle()
    assert c.filter_verdicts("NodeVolumeLimits", with_claims("p", "c")) == {"a": (0, ""), "b": (0, "")}


def test_default_profile_runs_the_four_volume_plugins_in_upstreams_places() -> None:
    fwk = Cluster().sched.profiles["default-scheduler"]
    names = [p.name for p in fwk.filters]
    assert names[names.index("NodeResourcesFit") + 1 : names.index("PodTopologySpread")] == [
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
    ]
    assert [p.name for p in fwk.points["reserve"]][:1] == ["VolumeBinding"]
    assert "VolumeBinding" in [p.name for p in fwk.points["preBind"]]


# -- QueueingHints (upstream's isSchedulableAfter... tables) --------------------------------------------
def hint(plugin: str, resource: str, action: Any, pod: dict[str, Any], old: Any, new: Any) -> bool:
    """The plugin's hint for the first registration of ``resource`` covering ``action``: True is
    Queue, False QueueSkip; a registration without a hint always queues."""
    from kubesched.api.pod import pod_info_from

    fwk = Cluster(node("a")).sched.profiles["default-scheduler"]
    for reg in fwk.plugins[plugin].events_to_register():
        if reg.event.resource == resource and reg.event.action & action:
            return True if reg.hint is None else bool(reg.hint(pod_info_from(pod), old, new))
    raise AssertionError(f"{plugin} registers no {resource} event for {action!r}")


def limited(count: int) -> dict[str, Any]:
    return csi_node("a", count)


def capacity(size: str | None, max_size: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": "CSIStorageCapacity", "metadata": {"name": "cap"}, "storageClassName": "wffc"}
    if size:
        obj["capacity"] = size
    if max_size:
        obj["maximumVolumeSize"] = max_size
    return obj


ADD, UPDATE, DELETE = ActionType.ADD, ActionType.UPDATE, ActionType.DELETE
TOPOLOGY = [{"matchLabelExpressions": [{"key": ZONE, "values": ["z1"]}]}]


@pytest.mark.parametrize(
    ("plugin", "resource", "action", "old", "new", "queue"),
    [
        ("VolumeBinding", "StorageClass", ADD, None, storage_class("wffc"), True),
        (
            "VolumeBinding",
            "StorageClass",
            UPDATE,
            storage_class("wffc"),
            storage_class("wffc", allowedTopologies=TOPOLOGY),
            True,
        ),
        (
            "VolumeBinding",
            "StorageClass",
            UPDATE,
            storage_class("wffc"),
            storage_class("wffc", parameters={"a": "b"}),
            False,
        ),
        ("VolumeBinding", "PersistentVolumeClaim", ADD, None, pvc("c"), True),
        ("VolumeBinding", "PersistentVolumeClaim", ADD, None, pvc("other"), False),
        ("VolumeBinding", "CSIStorageCapacity", ADD, None, capacity("1Gi"), True),
        ("VolumeBinding", "CSIStorageCapacity", UPDATE, capacity("1Gi"), capacity("2Gi"), True),
        ("VolumeBinding", "CSIStorageCapacity", UPDATE, capacity("2Gi"), capacity("1Gi"), False),
        ("VolumeBinding", "CSIStorageCapacity", UPDATE, capacity("5Gi", "1Gi"), capacity("9Gi", "1Gi"), False),
        ("VolumeBinding", "CSINode", UPDATE, limited(1), limited(2), False),
        ("VolumeBinding", "CSINode", UPDATE, limited(1), csi_node("a", 1, migrated="kubernetes.io/aws-ebs"), True),
        ("VolumeZone", "StorageClass", ADD, None, storage_class("wffc"), True),
        ("VolumeZone", "StorageClass", ADD, None, storage_class("imm", mode="Immediate"), False),
        ("VolumeZone", "PersistentVolume", UPDATE, pv("v", labels={ZONE: "z1"}), pv("v", labels={ZONE: "z2"}), True),
        (
            "VolumeZone",
            "PersistentVolume",
            UPDATE,
            pv("v", labels={ZONE: "z1"}),
            pv("v", "20Gi", labels={ZONE: "z1"}),
            False,
        ),
        ("NodeVolumeLimits", "CSINode", UPDATE, limited(1), limited(2), True),
        ("NodeVolumeLimits", "CSINode", UPDATE, limited(2), limited(1), False),
        ("NodeVolumeLimits", "PersistentVolumeClaim", ADD, None, pvc("c"), True),
        ("NodeVolumeLimits", "PersistentVolumeClaim", ADD, None, pvc("other"), False),
        ("VolumeRestrictions", "PersistentVolumeClaim", ADD, None, pvc("c"), True),
        ("VolumeRestrictions", "PersistentVolumeClaim", ADD, None, pvc("other"), False),
    ],
)
def test_queueing_hints(plugin, resource, action, old, new, queue) -> None:
    assert hint(plugin, resource, action, with_claims("p", "c"), old, new) is queue


def test_deleted_pod_hints_follow_shared_claims_and_disks() -> None:
    from kubesched.api.pod import pod_info_from

    waiting = with_claims("p", "c")
    sharing, unrelated = pod_info_from(with_claims("x", "c")), pod_info_from(with_claims("y", "d"))
    assert hint("VolumeRestrictions", "AssignedPod", DELETE, waiting, sharing, None) is True
    assert hint("VolumeRestrictions", "AssignedPod", DELETE, waiting, unrelated, None) is False
    plain = pod_info_from(make_pod("z"))
    assert hint("NodeVolumeLimits", "AssignedPod", DELETE, waiting, plain, None) is False
    assert hint("NodeVolumeLimits", "AssignedPod", DELETE, waiting, unrelated, None) is True


def test_prebind_gives_up_when_the_pv_controller_does_not_finish_in_time() -> None:
    """No PV controller (its sync removed) and bindTimeoutSeconds 0: PreBind's wait ends at once, the
    binding cycle fails with the binder's error and the assumed claim is restored."""
    config = {"profiles": [{"pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 0}}]}]}
    c = Cluster(node("a"), storage_class("wffc"), pvc("c"), config=config)
    c.client.settlers.clear()
    assert c.controllers.volumes is not None
    c.controllers.volumes.sync = lambda: False  # type: ignore[method-assign]
    c.create(with_claims("p", "c"))
    c.settle()
    assert c.node_of("p") is None
    assert 'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded' in message(c, "p")
    assert claim(c, "c")["metadata"]["annotations"][ANN_SELECTED_NODE] == "a"  # the API update was made
    binding = c.sched.profiles["default-scheduler"].plugins["VolumeBinding"]
    assert binding.binder.pvc_cache._assumed == {}  # restored by Unreserve


# -- bad input -----------------------------------------------------------------------------------
REGEX = "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (
            "kind: PersistentVolume\nmetadata: {name: pv}\n"
            "spec: {capacity: {storage: lots}, accessModes: [ReadWriteOnce], hostPath: {path: /x}}",
            f"PersistentVolume pv: field spec.capacity[storage]: quantities must match the regular expression {REGEX}, "
            "got 'lots'",
        ),
        (
            "kind: PersistentVolume\nmetadata: {name: pv}\nspec: {capacity: {storage: 1Gi}, accessModes: [Often]}",
            'PersistentVolume pv: field spec.accessModes[0]: Unsupported value: "Often": supported values: '
            '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
        ),
        (
            "kind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {accessModes: [ReadWriteOnce]}",
            "PersistentVolumeClaim default/c: field spec.resources[storage]: Required value",
        ),
        (
            "kind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {resources: {requests: {storage: 1Gi}}}",
            "PersistentVolumeClaim default/c: field spec.accessModes: Required value: at least 1 access mode is "
            "required",
        ),
        (
            "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: x}\nprovisioner: p\n"
            "volumeBindingMode: Sometimes",
            'StorageClass x: field volumeBindingMode: Unsupported value: "Sometimes": supported values: '
            '"Immediate", "WaitForFirstConsumer"',
        ),
    ],
)
def test_malformed_storage_objects_get_one_line_naming_file_object_and_field(tmp_path, manifest, expected) -> None:
    import subprocess

    from tests.live import KUBESCHED

    path = tmp_path / "bad.yaml"
    path.write_text("apiVersion: v1\n" * ("apiVersion" not in manifest) + manifest + "\n")
    out = subprocess.run([*KUBESCHED, "simulate", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"kubesched: error: {path}: {expected}"]


def test_volume_node_affinity_reads_labels_only_as_check_node_affinity_does() -> None:
    """``CheckNodeAffinity`` builds a node from the labels alone: a ``metadata.name`` field term
    names no node (In) or every node (NotIn), whatever the node is called."""
    from kubesched.api.volumes import node_affinity_allows

    def by_name(op: str) -> dict[str, Any]:
        term = {"matchFields": [{"key": "metadata.name", "operator": op, "values": ["a"]}]}
        return {"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}}

    assert not node_affinity_allows(by_name("In"), {HOST: "a"})
    assert node_affinity_allows(by_name("NotIn"), {HOST: "a"})
    c = Cluster(
        node("a"),
        node("b"),
        {**pv("pinned", claim="c"), **{"spec": {**pv("pinned", claim="c")["spec"], **by_name("In")["spec"]}}},
        pvc("c", volume="pinned"),
    )
    c.settle()
    assert c.filter_verdicts("VolumeBinding", with_claims("p", "c")) == {
        "a": (UAU, NODE_CONFLICT),
        "b": (UAU, NODE_CONFLICT),
    }
