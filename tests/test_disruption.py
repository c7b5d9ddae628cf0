"""PodDisruptionBudget status and the eviction subresource on the embedded cluster."""

from __future__ import annotations

import pytest

from helpers import make_node, make_pod
from kubesched.api.errors import ApiError, TooManyRequests
from kubesched.cluster.disruption import MULTIPLE_PDBS, budget_status
from kubesched.testing import Cluster


def bound(name: str, labels: dict, *, deleting: bool = False) -> dict:
    p = make_pod(name, cpu="100m", node="n")
    p["metadata"]["labels"] = labels
    p["status"] = {"phase": "Running"}
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return p


def budget(spec: dict, selector: dict | None = None) -> dict:
    sel = {"matchLabels": {"app": "x"}} if selector is None else selector
    return {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "b", "namespace": "default"},
        "spec": {"selector": sel, **spec},
    }


PODS = [bound(f"p{i}", {"app": "x"}) for i in range(4)] + [bound("other", {"app": "y"})]


@pytest.mark.parametrize(
    ("spec", "desired", "allowed"),
    [
        ({"minAvailable": 3}, 3, 1),
        ({"minAvailable": "50%"}, 2, 2),
        ({"minAvailable": "60%"}, 3, 1),  # 2.4 rounds up
        ({"maxUnavailable": 1}, 3, 1),
        ({"maxUnavailable": "30%"}, 2, 2),  # 1.2 unavailable rounds up to 2
        ({"maxUnavailable": 0}, 4, 0),
        ({"minAvailable": 5}, 5, 0),
    ],
)
def test_budget_status(spec: dict, desired: int, allowed: int) -> None:
    st = budget_status(budget(spec), PODS, now=0.0)
    assert (st["expectedPods"], st["currentHealthy"], st["desiredHealthy"], st["disruptionsAllowed"]) == (
        4,
        4,
        desired,
        allowed,
    )


def test_terminating_pods_are_not_healthy_and_empty_selector_takes_the_namespace() -> None:
    pods = [*PODS, bound("gone", {"app": "x"}, deleting=True)]
    st = budget_status(budget({"minAvailable": 1}), pods, now=0.0)
    assert (st["expectedPods"], st["currentHealthy"]) == (5, 4)
    everyone = budget_status(budget({"minAvailable": 1}, selector={}), pods, now=0.0)
    assert everyone["expectedPods"] == 6


def _cluster(*budgets: dict) -> Cluster:
    c = Cluster(make_node("n"), *[bound(f"p{i}", {"app": "x"}) for i in range(3)], *budgets)
    c.settle()
    return c


def test_eviction_within_budget_records_the_disruption() -> None:
    c = _cluster(budget({"minAvailable": 2}))
    assert c.store.get("PodDisruptionBudget", "default", "b")["status"]["disruptionsAllowed"] == 1
    c.client.evict("default", "p0")
    pdb = c.store.get("PodDisruptionBudget", "default", "b")
    assert pdb["status"]["disruptionsAllowed"] == 0 and "p0" in pdb["status"]["disruptedPods"]
    pod = c.store.get("Pod", "default", "p0")
    assert pod["metadata"]["deletionTimestamp"]
    assert any(x["reason"] == "EvictionByEvictionAPI" for x in pod["status"]["conditions"])


def test_eviction_beyond_budget_is_429() -> None:
    c = _cluster(budget({"minAvailable": 2}))
    c.client.evict("default", "p0")
    c.settle()
    with pytest.raises(TooManyRequests) as err:
        c.client.evict("default", "p1")
    assert err.value.code == 429
    assert str(err.value) == (
        "Cannot evict pod as it would violate the pod's disruption budget. "
        "The disruption budget b needs 2 healthy pods and has 2 currently"
    )
    assert not c.store.get("Pod", "default", "p1")["metadata"].get("deletionTimestamp")


def test_two_budgets_for_one_pod_are_refused() -> None:
    second = budget({"minAvailable": 0})
    second["metadata"]["name"] = "b2"
    c = _cluster(budget({"minAvailable": 0}), second)
    with pytest.raises(ApiError, match=MULTIPLE_PDBS):
        c.client.evict("default", "p0")


def test_budget_recovers_when_the_evicted_pod_is_gone() -> None:
    c = _cluster(budget({"minAvailable": 2}))
    c.client.evict("default", "p0")
    c.advance(30)  # grace period: p0 is deleted, 2 healthy remain
    st = c.store.get("PodDisruptionBudget", "default", "b")["status"]
    assert (st["currentHealthy"], st["disruptionsAllowed"], st["disruptedPods"]) == (2, 0, {})


@pytest.mark.parametrize(
    ("spec", "expected", "desired", "allowed"),
    [
        # an integer minAvailable counts the pods there are
        ({"minAvailable": 3}, 4, 3, 1),
        # maxUnavailable and percentages count the controllers' scale: 6 wanted, 4 there
        ({"maxUnavailable": 1}, 6, 5, 0),
        ({"minAvailable": "50%"}, 6, 3, 1),
    ],
)
def test_expected_pods_come_from_the_controllers_scale(spec, expected, desired, allowed):
    owned = []
    for i, p in enumerate(PODS[:4]):
        ref = {"kind": "ReplicaSet", "name": "rs", "uid": "rs-uid", "controller": True} if i < 3 else None
        owned.append({**p, "metadata": {**p["metadata"], "ownerReferences": [ref] if ref else []}})
    status = budget_status(budget(spec), owned, 0.0, scale=lambda pod: 5)
    # the ReplicaSet's 5 plus the bare pod's 1
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (
        expected,
        desired,
        allowed,
    )


def test_disruption_controller_reads_a_deployments_scale():
    from kubesched.kubelet.node import fake_node

    c = Cluster(*[{**fake_node(f"n{i}"), "kind": "Node"} for i in range(2)], workloads=True)
    c.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 4,
                "selector": {"matchLabels": {"app": "x"}},
                "template": {
                    "metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                },
            },
        },
        budget({"maxUnavailable": "25%"}),
    )
    c.settle()
    st = c.store.get("PodDisruptionBudget", "default", "b")["status"]
    assert (st["expectedPods"], st["currentHealthy"], st["desiredHealthy"], st["disruptionsAllowed"]) == (4, 4, 3, 1)
