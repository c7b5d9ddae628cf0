"""DynamicResources: its place in the default profile, PreEnqueue for claims that do not exist,
PreFilter's state and Skip, the PostFilter reason v1.36 joins into every FailedScheduling
message, and claims allocated, reserved and released end to end with the claim controller."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import make_node, make_pod, make_priority_class, pod, table
from kubesched.api.pod import pod_info_from
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.status import Code
from kubesched.scheduler.config import default_config
from kubesched.scheduler.plugins.dynamicresources.plugin import STATE_KEY, DynamicResources
from kubesched.testing import Cluster


def claim_pod(claims: list[dict[str, Any]], statuses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    p = make_pod("p", cpu="1")
    p["spec"]["resourceClaims"] = claims
    if statuses is not None:
        p["status"] = {**(p.get("status") or {}), "resourceClaimStatuses": statuses}
    return p


def no_diagnosis() -> Diagnosis:
    return Diagnosis(
        node_names=[],
        codes=np.zeros(0, np.int8),
        plugins=np.zeros(0, np.int16),
        reasons=np.zeros(0),
        describers=[],
        plugin_names=[],
    )


def test_in_the_default_profile_just_before_default_preemption() -> None:
    names = [p.name for p in default_config().profiles[0].multi_point.enabled]
    assert names[names.index("DynamicResources") + 1] == "DefaultPreemption"


# PreEnqueue and PreFilter on a pod's claims: (claims, resourceClaimStatuses, code, message)
PRE_ENQUEUE_CASES = [
    ([], None, None, None),
    (
        [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        None,
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        'pod "default/p": ResourceClaim not created yet',
    ),
    (
        [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        [{"name": "gpu", "resourceClaimName": "p-gpu-x7k2q"}],
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        'could not find ResourceClaim "default/p-gpu-x7k2q"',
    ),
    (  # a template that produced no claim: nothing to wait for
        [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        [{"name": "gpu"}],
        None,
        None,
    ),
    (
        [{"name": "gpu", "resourceClaimName": "shared"}],
        None,
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        'could not find ResourceClaim "default/shared"',
    ),
    (
        [{"name": "gpu"}],
        None,
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        'pod "default/p", spec.resourceClaim "gpu": none of the supported fields are set',
    ),
]
PRE_ENQUEUE_IDS = [
    "no-claims",
    "template-not-created",
    "generated-claim-missing",
    "template-no-claim",
    "named-missing",
    "neither",
]


@pytest.mark.parametrize(("claims", "statuses", "code", "message"), PRE_ENQUEUE_CASES, ids=PRE_ENQUEUE_IDS)
def test_pre_enqueue_and_pre_filter(claims, statuses, code, message) -> None:
    plugin = DynamicResources()
    info = pod_info_from(claim_pod(claims, statuses))
    st = plugin.pre_enqueue(info)
    assert (None if st is None else (st.code, st.message())) == (None if code is None else (code, message))
    state = CycleState()
    _, st = plugin.pre_filter(state, info, table([make_node("n")]))
    assert state.get(STATE_KEY) is not None and state.get(STATE_KEY).claims == []  # written whatever follows
    if code is None:
        assert st is not None and st.code == Code.SKIP
    else:
        assert (st.code, st.message()) == (code, message)


def test_post_filter_reasons() -> None:
    plugin = DynamicResources()
    state = CycleState()
    _, st = plugin.post_filter(state, pod("p"), no_diagnosis())
    assert (st.code, st.message()) == (Code.ERROR, "not found")  # PreFilter never ran: CycleState.Read's error
    plugin.pre_filter(state, pod("p"), table([make_node("n")]))
    _, st = plugin.post_filter(state, pod("p"), no_diagnosis())
    assert (st.code, st.message()) == (Code.UNSCHEDULABLE, "")  # v1.37: no reason of its own


def test_failed_scheduling_messages_read_as_v1_37s() -> None:
    c = Cluster(make_node("n", cpu="1"))
    c.create(make_pod("big", cpu="2"))
    c.settle()
    assert c.events("FailedScheduling") == [
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are "
        "available: 1 Preemption is not helpful for scheduling."
    ]


def test_a_profile_without_it_says_only_the_preemption_part() -> None:
    cfg = {"profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "DynamicResources"}]}}}]}
    c = Cluster(make_node("n", cpu="1"), config=cfg)
    c.create(make_pod("big", cpu="2"))
    c.settle()
    assert c.events("FailedScheduling") == [
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling."
    ]


def test_successful_preemption_drops_the_plugins_reason() -> None:
    """RunPostFilterPlugins returns DefaultPreemption's success alone: DynamicResources adds no
    reason, and v1.37's success says where and how many (the oracle's message)."""
    c = Cluster(make_node("n", cpu="1"), make_priority_class("high", 100))
    c.create(make_pod("low", cpu="1"))
    c.settle()
    high = make_pod("high", cpu="1", spec={"priorityClassName": "high"})
    del high["spec"]["priority"]
    c.create(high)
    c.settle()
    assert c.events("FailedScheduling")[0] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: found a potential placement for pod on node n, preempting 1 victims"
    )


DRIVER = "gpu.example.com"


def gpu_class() -> dict[str, Any]:
    """The DeviceClass ``gpu``: every device of the test driver."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def gpu_slice(node: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    """A node's ResourceSlice of the test driver, its pool named after the node."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def dra_objects(memories: dict[str, list[str]]) -> list[dict[str, Any]]:
    """A DeviceClass, a template asking for one GPU of 40Gi or more, and a node with a slice per entry."""
    objs: list[dict[str, Any]] = [
        gpu_class(),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "big-gpu", "namespace": "default"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "gpu",
                                "exactly": {
                                    "deviceClassName": "gpu",
                                    "selectors": [
                                        {
                                            "cel": {
                                                "expression": f'device.capacity["{DRIVER}"].memory'
                                                '.compareTo(quantity("40Gi")) >= 0'
                                            }
                                        }
                                    ],
                                },
                            }
                        ]
                    }
                }
            },
        },
    ]
    for node, mems in memories.items():
        objs.append(make_node(node, cpu="8"))
        objs.append(
            gpu_slice(node, [{"name": f"gpu-{i}", "capacity": {"memory": {"value": m}}} for i, m in enumerate(mems)])
        )
    return objs


def gpu_pod(name: str, template: str = "big-gpu") -> dict[str, Any]:
    p = make_pod(name, cpu="1")
    p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    return p


def claim_of(c: Cluster, pod: str) -> dict[str, Any]:
    statuses = c.store.get("Pod", "default", pod)["status"]["resourceClaimStatuses"]
    return c.store.get("ResourceClaim", "default", statuses[0]["resourceClaimName"])


def test_claims_from_templates_are_allocated_reserved_and_released() -> None:
    c = Cluster(*dra_objects({"n1": ["80Gi", "80Gi"], "n2": ["24Gi"]}))
    c.create(gpu_pod("a"), gpu_pod("b"), gpu_pod("c"))
    c.settle()
    assert [c.node_of(p) for p in "abc"] == ["n1", "n1", None]
    claim = claim_of(c, "a")
    assert claim["metadata"]["ownerReferences"][0]["uid"] == "uid-default-a"
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpu"
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "a", "uid": "uid-default-a"}]
    assert claim["metadata"]["finalizers"] == [FINALIZER]  # bindClaim protects what it allocated
    results = claim["status"]["allocation"]["devices"]["results"]
    assert results == [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]
    assert claim_of(c, "b")["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-1"
    assert c.events("FailedScheduling")[-1] == (
        "0/2 nodes are available: 2 cannot allocate all claims. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    # a deleted pod's claim goes with it, its device is free again, and the waiting pod gets it
    gone = claim_of(c, "a")["metadata"]["name"]
    c.store.delete("Pod", "default", "a", 0)
    c.settle()
    assert c.store.try_get("ResourceClaim", "default", gone) is None
    # requeued by the claim's deallocation into backoff, and popped at once by the idle scheduler
    assert c.node_of("c") == "n1"
    assert claim_of(c, "c")["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


FINALIZER = "resource.kubernetes.io/delete-protection"


def test_an_allocated_claim_is_protected_from_deletion_while_in_use() -> None:
    """``bindClaim`` adds the delete-protection finalizer to a claim it allocates; deleting the
    claim while its pod runs only marks it, and the resourceclaim controller lets it go once the
    pod has released it (deallocated, finalizer removed)."""
    objs = dra_objects({"n1": ["80Gi"]})
    shared = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "shared", "namespace": "default"},
        "spec": next(o for o in objs if o["kind"] == "ResourceClaimTemplate")["spec"]["spec"],
    }
    user = make_pod("user", cpu="1")
    user["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
    c = Cluster(*objs, shared)
    c.create(user)
    c.settle()
    assert c.node_of("user") == "n1"
    claim = c.store.get("ResourceClaim", "default", "shared")
    assert claim["metadata"]["finalizers"] == [FINALIZER] and claim["status"]["allocation"]
    c.store.delete("ResourceClaim", "default", "shared")
    c.settle()
    held = c.store.get("ResourceClaim", "default", "shared")  # still there while the pod uses it
    assert held["metadata"]["deletionTimestamp"] and held["status"]["reservedFor"]
    c.store.delete("Pod", "default", "user", 0)
    c.settle()
    assert c.store.try_get("ResourceClaim", "default", "shared") is None


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda objs: [o for o in objs if o["kind"] != "DeviceClass"], "request gpu: device class gpu does not exist"),
        (lambda objs: [o for o in objs if o["kind"] != "ResourceClaimTemplate"], None),
    ],
    ids=["no-class", "no-template"],
)
def test_missing_class_or_template(mutate, message) -> None:
    c = Cluster(*mutate(dra_objects({"n1": ["80Gi"]})))
    c.create(gpu_pod("a"))
    c.settle()
    assert c.node_of("a") is None
    if message is None:  # no claim was made: the pod waits at PreEnqueue, with no attempt
        gated = [qp for qp in c.sched.queue.gated_pods() if qp.pod.name == "a"]
        assert gated[0].gated_status.message() == 'pod "default/a": ResourceClaim not created yet'
        assert c.events("FailedScheduling") == []
    else:
        assert (
            c.events("FailedScheduling")
            == [
                f"0/1 nodes are available: {message}. "
                "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
            ]
            or message in c.events("FailedScheduling")[0]
        )


def test_a_broken_selector_is_a_scheduler_error() -> None:
    objs = dra_objects({"n1": ["80Gi"]})
    objs[0]["spec"]["selectors"] = [{"cel": {"expression": 'device.attributes["nope"].model == "x"'}}]
    c = Cluster(*objs)
    c.create(gpu_pod("a"))
    c.settle()
    assert c.node_of("a") is None
    cond = next(x for x in c.store.get("Pod", "default", "a")["status"]["conditions"] if x["type"] == "PodScheduled")
    assert cond["reason"] == "SchedulerError"
    assert cond["message"] == 'running "DynamicResources" filter plugin: CEL runtime error: no such key'


def test_preemption_frees_no_devices_as_in_v1_36() -> None:
    """v1.36 does not preempt for DRA resources (a documented limitation; KEP-5690 proposes it):
    DynamicResources' Filter verdicts are UnschedulableAndUnresolvable, so DefaultPreemption
    does not even try those nodes, and the plugin has no PreFilterExtensions to free a victim's
    devices in a dry run."""
    c = Cluster(*dra_objects({"n1": ["80Gi"]}), make_priority_class("high", 1000))
    c.create(gpu_pod("low"))
    c.settle()
    assert c.node_of("low") == "n1"
    high = gpu_pod("high")
    high["spec"]["priorityClassName"] = "high"
    del high["spec"]["priority"]
    c.create(high)
    c.settle()
    assert c.node_of("high") is None and c.node_of("low") == "n1"
    # DynamicResources' verdicts are UnschedulableAndUnresolvable (statusUnschedulable): no dry run
    assert c.events("FailedScheduling")[-1] == (
        "0/1 nodes are available: 1 cannot allocate all claims. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


MODELS = ("a100", "l4")


@settings(max_examples=40, deadline=None)
@given(
    nodes=st.lists(st.lists(st.sampled_from(MODELS), max_size=3), min_size=1, max_size=3),
    pods=st.lists(st.tuples(st.integers(1, 2), st.sampled_from((None, *MODELS))), min_size=1, max_size=6),
)
def test_no_device_is_ever_held_twice_and_every_allocation_fits_its_claim(nodes, pods) -> None:
    """Random GPU nodes and pods asking for 1-2 GPUs of a model (or any): after scheduling, no
    device is allocated to two claims, each allocation's devices are on the pod's node, match the
    claim's selector and number what it asked; and a pod left pending could not have fitted on
    any node given what the others hold (brute force over the free devices)."""
    objs = dra_objects({})[:1]  # the DeviceClass
    for n, models in enumerate(nodes):
        objs.append(make_node(f"n{n}", cpu="64"))
        objs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"n{n}-gpus"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": f"n{n}",
                    "pool": {"name": f"n{n}", "generation": 1},
                    "devices": [
                        {"name": f"g{i}", "attributes": {"model": {"string": m}}} for i, m in enumerate(models)
                    ],
                },
            }
        )
    c = Cluster(*objs)
    for k, (count, model) in enumerate(pods):
        request: dict[str, Any] = {"deviceClassName": "gpu", "count": count}
        if model:
            request["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]
        c.create(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"c{k}", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}},
            }
        )
        p = make_pod(f"p{k}", cpu="1")
        p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"c{k}"}]
        c.create(p)
    c.settle()
    c.advance(30)
    held: dict[tuple[str, str], str] = {}
    for k, (count, model) in enumerate(pods):
        claim = c.store.get("ResourceClaim", "default", f"c{k}")
        node = c.node_of(f"p{k}")
        alloc = (claim.get("status") or {}).get("allocation")
        if node is None:
            assert alloc is None
            continue
        results = alloc["devices"]["results"]
        assert len(results) == count
        for r in results:
            key = (r["pool"], r["device"])
            assert key not in held, f"{key} held by {held.get(key)} and c{k}"
            held[key] = f"c{k}"
            assert r["pool"] == node
            device_model = nodes[int(node[1:])][int(r["device"][1:])]
            assert model is None or device_model == model
    for k, (count, model) in enumerate(pods):  # pending only when nowhere had enough free devices
        if c.node_of(f"p{k}") is not None:
            continue
        for n, models in enumerate(nodes):
            free = [m for i, m in enumerate(models) if (f"n{n}", f"g{i}") not in held]
            assert sum(1 for m in free if model is None or m == model) < count


def test_partitionable_devices_through_the_scheduler() -> None:
    """Two pods, each asking for one of two 6Gi logical devices sharing an 8Gi counter set:
    the first binds, the second waits (Filter's count alone would have let it in)."""
    objs = dra_objects({})[:1]
    objs.append(make_node("n1", cpu="8"))
    objs.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "counters"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 2},
                "sharedCounters": [{"name": "gpu-1-counters", "counters": {"memory": {"value": "8Gi"}}}],
            },
        }
    )
    consumes = [{"counterSet": "gpu-1-counters", "counters": {"memory": {"value": "6Gi"}}}]
    objs.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "devices"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 2},
                "devices": [{"name": f"device-{i}", "consumesCounters": consumes} for i in (1, 2)],
            },
        }
    )
    objs.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}},
        }
    )
    c = Cluster(*objs)
    c.create(gpu_pod("a", template="one"), gpu_pod("b", template="one"))
    c.settle()
    assert [c.node_of("a"), c.node_of("b")] == ["n1", None]
    assert c.events("FailedScheduling")[-1].startswith("0/1 nodes are available: 1 cannot allocate all claims.")


def test_shared_devices_and_allocated_claims_follow_their_node_selectors() -> None:
    """A pool reaching the nodes of rack r1 only (a network-attached device), and a claim already
    allocated with a node selector: Filter matches both over the node table's columns."""
    objs = dra_objects({})[:1]
    for i in range(4):
        objs.append(make_node(f"n{i}", cpu="8", labels={"rack": f"r{i % 2}"}))
    objs.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "fabric"},
            "spec": {
                "driver": DRIVER,
                "pool": {"name": "fabric", "generation": 1},
                "nodeSelector": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]
                },
                "devices": [{"name": "link-0"}],
            },
        }
    )
    pinned = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}
    claims = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
        }
        for name in ("fabric-claim", "pinned-claim")
    ]
    c = Cluster(*objs, *claims)
    c.store.mutate(
        "ResourceClaim",
        "default",
        "pinned-claim",
        lambda o: {**o, "status": {"allocation": {"devices": {"results": []}, "nodeSelector": pinned}}},
    )
    for pod_name, claim_name in (("fab", "fabric-claim"), ("pin", "pinned-claim")):
        p = make_pod(pod_name, cpu="1")
        p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
        c.create(p)
    c.settle()
    assert c.node_of("fab") in ("n1", "n3")
    assert c.node_of("pin") == "n2"
    fabric = c.store.get("ResourceClaim", "default", "fabric-claim")
    assert fabric["status"]["allocation"]["devices"]["results"][0]["device"] == "link-0"
    # not node-local: the claim is usable wherever the pool reaches
    assert fabric["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [
        "r1"
    ]


def test_a_deleted_claim_nobody_uses_loses_the_finalizer() -> None:
    """``syncClaim``: a claim allocated by the scheduler, reserved for nobody and deleted is
    deallocated and its delete-protection finalizer removed, which lets the deletion finish."""
    c = Cluster(*dra_objects({"n1": ["80Gi"]}))
    template = next(o for o in dra_objects({"n1": ["80Gi"]}) if o["kind"] == "ResourceClaimTemplate")
    c.store.create(
        "ResourceClaim",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "left", "namespace": "default", "finalizers": [FINALIZER]},
            "spec": template["spec"]["spec"],
            "status": {"allocation": {"devices": {"results": []}}},
        },
    )
    c.store.delete("ResourceClaim", "default", "left")
    assert c.store.get("ResourceClaim", "default", "left")["metadata"]["deletionTimestamp"]
    c.settle()
    assert c.store.try_get("ResourceClaim", "default", "left") is None


def prioritized_objects(gpus: dict[str, int], counts: tuple[int, ...]) -> list[dict[str, Any]]:
    """Nodes with so many GPUs, and a claim ``gpus`` whose one request asks for the first of
    ``counts`` GPUs that fits (a prioritized list, DRAPrioritizedList)."""
    objs: list[dict[str, Any]] = [
        gpu_class(),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "gpus", "namespace": "default"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "firstAvailable": [
                                {"name": f"x{c}", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": c}
                                for c in counts
                            ],
                        }
                    ]
                }
            },
        },
    ]
    for node, n in gpus.items():
        objs += [make_node(node, cpu="8"), gpu_slice(node, [{"name": f"gpu-{i}"} for i in range(n)])]
    return objs


def claim_user(name: str = "p") -> dict[str, Any]:
    pod = make_pod(name, cpu="1")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpus"}]
    return pod


# (GPUs per node, the prioritized counts, the raw scores per node: 8 - the subrequest's index)
PRIORITIZED_SCORE_CASES = [
    pytest.param({"a": 3, "b": 2, "c": 1}, (3, 2, 1), {"a": 8, "b": 7, "c": 6}, id="each node its best"),
    pytest.param({"a": 1, "b": 1}, (2, 1), {"a": 7, "b": 7}, id="all the second choice"),
    pytest.param({"a": 4, "b": 1}, (1,), {"a": 8, "b": 8}, id="one choice"),
]


@pytest.mark.parametrize(("gpus", "counts", "raw"), PRIORITIZED_SCORE_CASES)
def test_prioritized_lists_score_the_choice(gpus: dict[str, int], counts: tuple[int, ...], raw: dict[str, int]) -> None:
    c = Cluster(*prioritized_objects(gpus, counts))
    c.create(claim_user())
    c.settle()
    best = max(raw.values())
    assert raw[c.node_of("p")] == best  # DynamicResources (weight 2) decides between the nodes
    claim = c.store.get("ResourceClaim", "default", "gpus")
    chosen = {r["request"] for r in claim["status"]["allocation"]["devices"]["results"]}
    assert chosen == {f"gpu/x{counts[8 - raw[c.node_of('p')]]}"}


def taint_rule(selector: dict[str, Any] | None, effect: str = "NoSchedule") -> dict[str, Any]:
    spec: dict[str, Any] = {"taint": {"key": "example.com/unhealthy", "value": "true", "effect": effect}}
    if selector is not None:
        spec["deviceSelector"] = selector
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "rule"}, "spec": spec}


def one_gpu_claim(tolerate: bool) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}
    if tolerate:
        exactly["tolerations"] = [{"key": "example.com/unhealthy", "operator": "Exists"}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "gpus", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def tainted_cluster(rule: dict[str, Any] | None, tolerate: bool = False) -> list[dict[str, Any]]:
    """Nodes a and b with one GPU each, a DeviceTaintRule, and the claim ``gpus`` of one GPU."""
    objs = [o for o in prioritized_objects({"a": 1, "b": 1}, (1,)) if o["kind"] != "ResourceClaim"]
    return [*objs, one_gpu_claim(tolerate), *([rule] if rule is not None else [])]


# (the rule, the claim tolerates the taint, the nodes where the claim can be allocated)
TAINT_RULE_CASES = [
    pytest.param(None, False, {"a", "b"}, id="no rule"),
    pytest.param(taint_rule({"driver": DRIVER, "pool": "a"}), False, {"b"}, id="pool a tainted"),
    pytest.param(taint_rule({"device": "gpu-0", "pool": "b"}), False, {"a"}, id="one device by name"),
    pytest.param(taint_rule({}), False, set(), id="an empty selector taints every device"),
    pytest.param(taint_rule(None), False, {"a", "b"}, id="no selector taints nothing"),
    pytest.param(taint_rule({"driver": "other.example.com"}), False, {"a", "b"}, id="another driver"),
    pytest.param(taint_rule({}), True, {"a", "b"}, id="tolerated"),
    pytest.param(taint_rule({}, "None"), False, {"a", "b"}, id="effect None only informs"),
]


@pytest.mark.parametrize(("rule", "tolerate", "fits"), TAINT_RULE_CASES)
def test_device_taint_rules_taint_the_devices_they_select(
    rule: dict[str, Any] | None, tolerate: bool, fits: set[str]
) -> None:
    c = Cluster(*tainted_cluster(rule, tolerate))
    got = c.filter_verdicts("DynamicResources", claim_user())
    assert {n for n, (code, _) in got.items() if code == 0} == fits


def shared_gpu() -> dict[str, Any]:
    """A GPU several claims may share (consumable capacity): 80Gi of memory in steps of 10Gi from
    10Gi, and 3 cores in steps of 500m from 1."""
    memory = {"value": "80Gi", "requestPolicy": {"validRange": {"min": "10Gi", "step": "10Gi"}}}
    cores = {"value": "3", "requestPolicy": {"default": "1", "validRange": {"min": "1", "step": "500m"}}}
    return {"name": "gpu-0", "allowMultipleAllocations": True, "capacity": {"memory": memory, "cores": cores}}


def share_claim(requests: dict[str, str] | None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}
    if requests is not None:
        exactly["capacity"] = {"requests": requests}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "gpus", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def held_share(memory: str, cores: str = "1") -> dict[str, Any]:
    """A claim already allocated a share of node a's GPU."""
    result = {
        "request": "gpu",
        "driver": DRIVER,
        "pool": "a",
        "device": "gpu-0",
        "shareID": "0b6d2a9e-1c4f-4e8b-a1d2-3f4e5a6b7c8d",
        "consumedCapacity": {"memory": memory, "cores": cores},
    }
    return {
        **share_claim({"memory": memory, "cores": cores}),
        "metadata": {"name": "held", "namespace": "default", "uid": "held-uid"},
        "status": {"allocation": {"devices": {"results": [result]}}},
    }


def shared_cluster(
    requests: dict[str, str] | None, held: str | tuple[str, str] | None = "70Gi"
) -> list[dict[str, Any]]:
    """Nodes a and b with one shared GPU each, ``held`` of a's already taken by another claim, and
    the claim ``gpus`` asking for ``requests`` of one GPU."""
    objs: list[dict[str, Any]] = [gpu_class()]
    for node in ("a", "b"):
        objs += [make_node(node, cpu="8"), gpu_slice(node, [shared_gpu()])]
    if held is not None:
        objs.append(held_share(*((held,) if isinstance(held, str) else held)))
    return [*objs, share_claim(requests)]


# (the claim's capacity requests, what a's GPU has taken already, the nodes the claim fits)
CONSUMABLE_CASES = [
    pytest.param({"memory": "10Gi"}, "70Gi", {"a", "b"}, id="the last 10Gi of a"),
    pytest.param({"memory": "5Gi"}, "70Gi", {"a", "b"}, id="5Gi rounds up to the 10Gi minimum"),
    pytest.param({"memory": "15Gi"}, "70Gi", {"b"}, id="15Gi rounds up to 20Gi: too much for a"),
    pytest.param({"memory": "90Gi"}, None, set(), id="more than the device has"),
    pytest.param({"vram": "1"}, None, set(), id="a capacity the device lacks"),
    pytest.param(
        {"memory": "10Gi", "cores": "1500m"},
        ("10Gi", "1500m"),
        {"b"},
        id="1500m rounds up to 2 in whole units (DRAFractionalCapacityRange is off by default)",
    ),
    pytest.param({"memory": "10Gi", "cores": "2"}, ("10Gi", "1"), {"a", "b"}, id="cores by the default of 1"),
    pytest.param(None, "70Gi", {"b"}, id="no request takes the whole device"),
    pytest.param(None, None, {"a", "b"}, id="a whole shared device when nobody shares it"),
]


@pytest.mark.parametrize(("requests", "held", "fits"), CONSUMABLE_CASES)
def test_consumable_capacity(
    requests: dict[str, str] | None, held: str | tuple[str, str] | None, fits: set[str]
) -> None:
    """DRAConsumableCapacity (beta, on since v1.36): claims share an allowMultipleAllocations
    device while its capacity lasts; the allocation records the share and what it consumes."""
    c = Cluster(*shared_cluster(requests, held))
    c.create(claim_user())
    c.settle()
    node = c.node_of("p")
    assert (node in fits) if fits else node is None
    if node is None:
        return
    (result,) = c.store.get("ResourceClaim", "default", "gpus")["status"]["allocation"]["devices"]["results"]
    assert result["device"] == "gpu-0" and result["pool"] == node and result["shareID"]
    expected = {"5Gi": "10Gi", "15Gi": "20Gi"}.get((requests or {}).get("memory", ""), (requests or {}).get("memory"))
    cores = {"1500m": "2"}.get((requests or {}).get("cores", ""), (requests or {}).get("cores"))
    assert result["consumedCapacity"] == {"memory": expected or "80Gi", "cores": cores or "1"}


def multi_cluster(expression: str) -> list[dict[str, Any]]:
    """Node a with a shared GPU, node b with a GPU of its own, and a class selecting by ``expression``."""
    cls = gpu_class()
    cls["spec"]["selectors"] = [{"cel": {"expression": expression}}]
    plain = {"name": "gpu-0"}
    objs: list[dict[str, Any]] = [cls, make_node("a", cpu="8"), gpu_slice("a", [shared_gpu()])]
    return [*objs, make_node("b", cpu="8"), gpu_slice("b", [plain]), share_claim(None)]


# (the class's CEL selector, the nodes whose device it selects)
MULTI_SELECTOR_CASES = [
    pytest.param("device.allowMultipleAllocations", {"a"}, id="shareable devices only"),
    pytest.param("device.allowMultipleAllocations == false", {"b"}, id="unset reads false"),
    pytest.param(
        f'device.driver == "{DRIVER}" && !device.allowMultipleAllocations', {"b"}, id="with the driver, negated"
    ),
]


@pytest.mark.parametrize(("expression", "fits"), MULTI_SELECTOR_CASES)
def test_selectors_read_allow_multiple_allocations(expression: str, fits: set[str]) -> None:
    """A DeviceClass's CEL sees ``device.allowMultipleAllocations`` (false where the device does
    not set it), as ``dynamic-resource-allocation/cel/compile.go`` declares it."""
    c = Cluster(*multi_cluster(expression))
    c.create(claim_user())
    c.settle()
    assert c.node_of("p") in fits


def test_shares_add_up_through_the_scheduler() -> None:
    """Pods of 20Gi share one 80Gi GPU, each taking the cores' default of 1 of its 3: three fit, the
    fourth waits (its 20Gi would fit, the cores not)."""
    objs: list[dict[str, Any]] = [gpu_class(), make_node("a", cpu="8"), gpu_slice("a", [shared_gpu()])]
    c = Cluster(*objs)
    for i in range(5):
        claim = share_claim({"memory": "20Gi"})
        claim["metadata"]["name"] = f"c{i}"
        pod = make_pod(f"p{i}", cpu="100m")
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"c{i}"}]
        c.create(claim, pod)
        c.settle()
    assert [c.node_of(f"p{i}") for i in range(5)] == ["a", "a", "a", None, None]
    ids = {c.store.get("ResourceClaim", "default", f"c{i}")["status"]["allocation"]["devices"]["results"][0]["shareID"]
           for i in range(3)}  # fmt: skip
    assert len(ids) == 3


def binding_cluster() -> list[dict[str, Any]]:
    """Node a and a network-attached GPU every node reaches, which binds to the node it is
    allocated for once its driver reports it ``Attached`` (DRADeviceBindingConditions)."""
    device = {
        "name": "gpu-0",
        "bindsToNode": True,
        "bindingConditions": ["Attached"],
        "bindingFailureConditions": ["AttachFailed"],
    }
    fabric = gpu_slice("a", [device])
    del fabric["spec"]["nodeName"]
    fabric["spec"]["allNodes"] = True
    fabric["spec"]["pool"]["name"] = "fabric"
    fabric["metadata"]["name"] = "fabric"
    return [
        *[o for o in prioritized_objects({"a": 0}, (1,)) if o["kind"] != "ResourceClaim"],
        make_node("b", cpu="8"),
        fabric,
        one_gpu_claim(False),
    ]


def attach(c: Cluster, condition: str, reason: str = "Attached", message: str = "") -> None:
    """The driver's part: the allocated device's status with ``condition`` True."""

    def settle() -> bool:
        claim = c.store.get("ResourceClaim", "default", "gpus")
        alloc = (claim.get("status") or {}).get("allocation")
        if not alloc or (claim.get("status") or {}).get("devices"):
            return False
        (r,) = alloc["devices"]["results"]
        entry = {
            "driver": r["driver"],
            "pool": r["pool"],
            "device": r["device"],
            "conditions": [
                {
                    "type": condition,
                    "status": "True",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        }
        c.store.update("ResourceClaim", {**claim, "status": {**claim["status"], "devices": [entry]}})
        return True

    c.client.settlers.append(settle)


def test_binding_conditions_hold_the_binding_until_the_device_is_attached() -> None:
    c = Cluster(*binding_cluster())
    attach(c, "Attached")
    c.create(claim_user())
    c.settle()
    node = c.node_of("p")
    assert node in ("a", "b")
    alloc = c.store.get("ResourceClaim", "default", "gpus")["status"]["allocation"]
    (result,) = alloc["devices"]["results"]
    assert result["bindingConditions"] == ["Attached"]
    assert result["bindingFailureConditions"] == ["AttachFailed"]
    assert alloc["allocationTimestamp"]
    # bindsToNode: the claim can only be used on the node it was allocated for
    assert alloc["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [node]
    assert f"waiting for binding conditions for device on node {node}" in c.events("BindingConditionsPending")


def test_a_failed_binding_condition_fails_the_binding() -> None:
    c = Cluster(*binding_cluster())
    attach(c, "AttachFailed", "NoPath", "fabric unreachable")
    c.create(claim_user())
    c.settle()
    assert c.node_of("p") is None
    assert c.events("FailedScheduling")[0] == (
        'running PreBind plugin "DynamicResources": device binding failed: claim=gpus, reason=NoPath, '
        'message="fabric unreachable"'
    )


def test_binding_conditions_nobody_reports_time_out() -> None:
    """With no driver to report the condition, the binding gives up (here at once: nothing in the
    embedded cluster can change it) and the pod waits."""
    c = Cluster(*binding_cluster())
    c.create(claim_user())
    c.settle()
    assert c.node_of("p") is None
    assert c.events("FailedScheduling")[0] == (
        'running PreBind plugin "DynamicResources": device binding timeout: context deadline exceeded'
    )


def _eviction_cluster(tolerations: list[dict[str, Any]] | None = None) -> tuple[Cluster, Any]:
    from kubesched.client.object_client import StoreObjects
    from kubesched.controllers.manager import ControllerManager

    claim = one_gpu_claim(False)
    if tolerations is not None:
        claim["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = tolerations
    objs = [o for o in prioritized_objects({"a": 1}, (1,)) if o["kind"] != "ResourceClaim"]
    c = Cluster(*objs, claim)
    c.create(claim_user())
    c.settle()
    assert c.node_of("p") == "a"
    manager = ControllerManager(StoreObjects(c.store), ["device-taint-eviction-controller"])
    return c, manager


def _rule_condition(c: Cluster) -> dict[str, Any]:
    (cond,) = c.store.get("DeviceTaintRule", "", "rule")["status"]["conditions"]
    return {k: cond[k] for k in ("type", "status", "reason", "message")}


def _gone_or_terminating(c: Cluster, name: str) -> bool:
    pod = c.store.try_get("Pod", "default", name)
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


def test_a_no_execute_device_taint_evicts_the_pods_using_the_device() -> None:
    c, manager = _eviction_cluster()
    c.create(taint_rule({"driver": DRIVER, "pool": "a"}, "NoExecute"))
    manager.sync()
    assert _gone_or_terminating(c, "p")
    assert c.events("DeviceTaintManagerEviction") == ["Marking for deletion"]
    pod = c.store.try_get("Pod", "default", "p")
    if pod is not None:
        (disrupted,) = [x for x in pod["status"]["conditions"] if x["type"] == "DisruptionTarget"]
        assert disrupted["reason"] == "DeletionByDeviceTaintManager"
        assert disrupted["message"] == "Device Taint manager: deleting due to NoExecute taint"
    assert _rule_condition(c) == {
        "type": "EvictionInProgress",
        "status": "False",
        "reason": "Completed",
        "message": "1 pod evicted since starting the controller.",
    }


def test_toleration_seconds_delay_the_eviction() -> None:
    toleration = {"key": "example.com/unhealthy", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
    c, manager = _eviction_cluster([toleration])
    c.create(taint_rule({"driver": DRIVER, "pool": "a"}, "NoExecute"))
    manager.sync()
    assert not _gone_or_terminating(c, "p")
    assert _rule_condition(c) == {
        "type": "EvictionInProgress",
        "status": "True",
        "reason": "PodsPendingEviction",
        "message": "1 pod needs to be evicted in 1 namespace.",
    }
    c.clock.advance_to(c.clock.now() + 61)
    manager.sync()
    assert _gone_or_terminating(c, "p")


@pytest.mark.parametrize(
    ("effect", "reason", "message"),
    [
        pytest.param(
            "None",
            "NoEffect",
            "1 published device selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the "
            "effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to "
            "trigger an update.",
            id="None: what it would do",
        ),
        pytest.param("NoSchedule", "OtherEffect", "Eviction only happens for the NoExecute effect.", id="NoSchedule"),
    ],
)
def test_rules_that_do_not_evict_say_so(effect: str, reason: str, message: str) -> None:
    c, manager = _eviction_cluster()
    c.create(taint_rule({"driver": DRIVER, "pool": "a"}, effect))
    manager.sync()
    assert not _gone_or_terminating(c, "p")
    assert _rule_condition(c) == {"type": "EvictionInProgress", "status": "False", "reason": reason, "message": message}
