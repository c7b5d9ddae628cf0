"""DynamicResources as far as kubesched implements it (no ResourceClaims stored yet): its place in
the default profile, PreEnqueue for claims that do not exist, PreFilter's state and Skip, and the
PostFilter reason v1.36 joins into every FailedScheduling message."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from harness import Cluster
from helpers import make_node, make_pod, make_priority_class, pod, table
from kubesched.api.pod import pod_info_from
from kubesched.scheduler.config import default_config
from kubesched.scheduler.framework.cycle_state import CycleState
from kubesched.scheduler.framework.status import Code
from kubesched.scheduler.framework.types import Diagnosis
from kubesched.scheduler.plugins.dynamicresources.plugin import STATE_KEY, DynamicResources


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


@pytest.mark.parametrize(
    ("claims", "statuses", "code", "message"),
    [
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
    ],
    ids=[
        "no-claims",
        "template-not-created",
        "generated-claim-missing",
        "template-no-claim",
        "named-missing",
        "neither",
    ],
)
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
    assert (st.code, st.message()) == (Code.UNSCHEDULABLE, "no new claims to deallocate")


def test_failed_scheduling_messages_read_as_v1_36s() -> None:
    c = Cluster(make_node("n", cpu="1"))
    c.create(make_pod("big", cpu="2"))
    c.settle()
    assert c.events("FailedScheduling") == [
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are "
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
    """RunPostFilterPlugins returns DefaultPreemption's success alone: the message has no PostFilter part."""
    c = Cluster(make_node("n", cpu="1"), make_priority_class("high", 100))
    c.create(make_pod("low", cpu="1"))
    c.settle()
    high = make_pod("high", cpu="1", spec={"priorityClassName": "high"})
    del high["spec"]["priority"]
    c.create(high)
    c.settle()
    assert c.events("FailedScheduling")[0] == "0/1 nodes are available: 1 Insufficient cpu."


def test_a_pod_with_claims_waits_at_pre_enqueue_in_a_simulation() -> None:
    c = Cluster(make_node("n", cpu="2"))
    c.create(claim_pod([{"name": "gpu", "resourceClaimName": "shared"}]))
    c.settle()
    assert c.node_of("p") is None and c.events("FailedScheduling") == []
    gated = [qp for qp in c.sched.queue.gated_pods() if qp.pod.name == "p"]
    assert gated and gated[0].gating_plugin == "DynamicResources"
