"""Extended resources backed by DRA (KEP-5004, beta and on in v1.36): a DeviceClass names an
extended resource no node advertises; NodeResourcesFit leaves it to DynamicResources, which
allocates devices of the class through a claim it creates for the pod, records the mapping in
the pod's status, and deletes the claim with the pod. A node that advertises the resource keeps
it with its device plugin."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import make_node, make_pod
from kubesched.scheduler.plugins.dynamicresources.extended import (
    ExtendedResourceResolver,
    requests_and_mappings,
)
from kubesched.testing import Cluster

DRIVER = "gpu.example.com"


def gpu_class(name: str = "gpu", extended: str | None = "example.com/gpu", created: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}
    if extended:
        spec["extendedResourceName"] = extended
    meta: dict[str, Any] = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": meta, "spec": spec}


def gpu_slice(node: str, count: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(count)],
        },
    }


def gpu_pod(name: str, gpus: int, resource: str = "example.com/gpu") -> dict[str, Any]:
    p = make_pod(name, cpu="1")
    res = p["spec"]["containers"][0].setdefault("resources", {})
    res.setdefault("requests", {})[resource] = str(gpus)
    res.setdefault("limits", {})[resource] = str(gpus)
    return p


def test_devices_of_the_class_are_allocated_through_a_claim_the_scheduler_creates() -> None:
    c = Cluster(gpu_class(), make_node("n1", cpu="8"), gpu_slice("n1", 2))
    c.create(gpu_pod("a", 1), gpu_pod("b", 1), gpu_pod("c", 1))
    c.settle()
    assert [c.node_of(p) for p in "abc"] == ["n1", "n1", None]
    status = c.store.get("Pod", "default", "a")["status"]["extendedResourceClaimStatus"]
    assert status["requestMappings"] == [
        {"containerName": "c", "resourceName": "example.com/gpu", "requestName": "container-0-request-1"}
    ]
    claim = c.store.get("ResourceClaim", "default", status["resourceClaimName"])
    assert claim["metadata"]["name"].startswith("a-extended-resources-")
    assert claim["metadata"]["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert claim["metadata"]["ownerReferences"][0]["uid"] == "uid-default-a"
    assert claim["spec"]["devices"]["requests"] == [
        {
            "name": "container-0-request-1",
            "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1},
        }
    ]
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "a", "uid": "uid-default-a"}]

    def device_of(pod: str) -> str:
        name = c.store.get("Pod", "default", pod)["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
        return c.store.get("ResourceClaim", "default", name)["status"]["allocation"]["devices"]["results"][0]["device"]

    devices = {device_of(p) for p in "ab"}
    assert devices == {"gpu-0", "gpu-1"}
    # NodeResourcesFit left the resource to DynamicResources, which found no device left
    assert c.events("FailedScheduling")[-1] == (
        "0/1 nodes are available: 1 cannot allocate all claims. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    # the pod's claim goes with it; the waiting pod gets the device
    name = status["resourceClaimName"]
    c.store.delete("Pod", "default", "a", 0)
    c.settle()
    assert c.store.try_get("ResourceClaim", "default", name) is None
    c.advance(2)
    assert c.node_of("c") == "n1"


def test_the_implicit_name_of_a_class_works_too() -> None:
    c = Cluster(gpu_class(extended=None), make_node("n1", cpu="8"), gpu_slice("n1", 1))
    c.create(gpu_pod("a", 1, "deviceclass.resource.kubernetes.io/gpu"))
    c.settle()
    assert c.node_of("a") == "n1"


def test_a_node_advertising_the_resource_keeps_it_with_its_device_plugin() -> None:
    # n1 advertises example.com/gpu (a device plugin): NodeResourcesFit counts it there, and no
    # claim is made; n2 has none, so it goes through DRA
    c = Cluster(
        gpu_class(),
        make_node("n1", cpu="8", extra={"example.com/gpu": "1"}),
        make_node("n2", cpu="8"),
        gpu_slice("n2", 1),
    )
    c.create(gpu_pod("a", 1))
    c.create(gpu_pod("b", 1))
    c.create(gpu_pod("c", 1))
    c.settle()
    placed = {p: c.node_of(p) for p in "abc"}
    assert sorted(v for v in placed.values() if v) == ["n1", "n2"]
    on_n1 = next(p for p, n in placed.items() if n == "n1")
    on_n2 = next(p for p, n in placed.items() if n == "n2")
    assert "extendedResourceClaimStatus" not in (c.store.get("Pod", "default", on_n1).get("status") or {})
    assert "extendedResourceClaimStatus" in c.store.get("Pod", "default", on_n2)["status"]
    waiting = next(p for p, n in placed.items() if n is None)
    assert c.sched.last_message[f"default/{waiting}"].startswith(
        "0/2 nodes are available: 1 Insufficient example.com/gpu, 1 cannot allocate all claims."
    )


def test_without_a_class_the_resource_is_simply_insufficient() -> None:
    c = Cluster(make_node("n1", cpu="8"), gpu_slice("n1", 1))
    c.create(gpu_pod("a", 1))
    c.settle()
    assert c.node_of("a") is None
    assert c.events("FailedScheduling")[-1].startswith("0/1 nodes are available: 1 Insufficient example.com/gpu.")


def test_the_newest_class_wins_an_explicit_name_then_the_first_name() -> None:
    older = gpu_class("old", created="2026-01-01T00:00:00Z")
    newer = gpu_class("new", created="2026-02-01T00:00:00Z")
    twin = gpu_class("another", created="2026-02-01T00:00:00Z")
    assert ExtendedResourceResolver([older, newer]).class_for("example.com/gpu")["metadata"]["name"] == "new"
    assert ExtendedResourceResolver([newer, twin, older]).class_for("example.com/gpu")["metadata"]["name"] == "another"
    r = ExtendedResourceResolver([older])
    assert r.class_for("deviceclass.resource.kubernetes.io/old") is older
    assert r.class_for("example.com/other") is None


@pytest.mark.parametrize(
    ("init", "containers", "requests", "mappings"),
    [
        # one request per container, named by the container's index and the resource's place
        # among its sorted request names
        (
            [],
            [{"name": "a", "r": {"cpu": "1", "example.com/gpu": "2"}}, {"name": "b", "r": {"example.com/gpu": "1"}}],
            [("container-0-request-1", 2), ("container-1-request-0", 1)],
            [("a", "container-0-request-1"), ("b", "container-1-request-0")],
        ),
        # an init container reuses the devices of the containers after it before asking for more
        (
            [{"name": "i", "r": {"example.com/gpu": "3"}}],
            [{"name": "a", "r": {"example.com/gpu": "2"}}],
            [("container-0-request-0", 1), ("container-1-request-0", 2)],
            [("a", "container-1-request-0"), ("i", "container-1-request-0"), ("i", "container-0-request-0")],
        ),
        # of several init containers' own requests only the largest is kept, and all map to it
        (
            [{"name": "i1", "r": {"example.com/gpu": "1"}}, {"name": "i2", "r": {"example.com/gpu": "2"}}],
            [],
            [("container-1-request-0", 2)],
            [("i1", "container-1-request-0"), ("i2", "container-1-request-0")],
        ),
    ],
)
def test_requests_and_mappings(init, containers, requests, mappings) -> None:
    def spec(cs):
        return [{"name": c["name"], "resources": {"requests": c["r"]}} for c in cs]

    pod = {"spec": {"initContainers": spec(init), "containers": spec(containers)}}
    total = sum(int(c["r"]["example.com/gpu"]) for c in containers)
    reqs, maps = requests_and_mappings(pod, {"example.com/gpu": total}, ExtendedResourceResolver([gpu_class()]))
    assert [(r["name"], r["exactly"]["count"]) for r in reqs] == requests
    assert all(r["exactly"]["deviceClassName"] == "gpu" for r in reqs)
    assert [(m["containerName"], m["requestName"]) for m in maps] == mappings


def test_the_special_claim_is_deleted_past_its_finalizer_even_from_a_stale_copy() -> None:
    """``deleteClaim``: the delete-protection finalizer comes off first (retried with the latest
    version on a conflict), so the delete removes the claim instead of only marking it."""
    from kubesched.scheduler.plugins.dynamicresources.claims import FINALIZER
    from kubesched.scheduler.plugins.dynamicresources.claims import delete_claim as _delete_claim

    c = Cluster(gpu_class())
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "special", "namespace": "default", "finalizers": [FINALIZER, "example.com/keep"]},
        "spec": {"devices": {"requests": []}},
    }
    stale = c.store.create("ResourceClaim", claim)
    c.store.update("ResourceClaim", {**stale, "metadata": {**stale["metadata"], "labels": {"touched": "yes"}}})
    _delete_claim(c.client, stale)  # the first update conflicts: the stored claim moved on
    held = c.store.get("ResourceClaim", "default", "special")  # another finalizer still holds it
    assert held["metadata"]["finalizers"] == ["example.com/keep"] and held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["labels"] == {"touched": "yes"}  # the retry read the latest version
    c.store.update(
        "ResourceClaim", {**held, "metadata": {k: v for k, v in held["metadata"].items() if k != "finalizers"}}
    )
    assert c.store.try_get("ResourceClaim", "default", "special") is None


def test_a_claim_a_prior_cycle_left_is_found_by_its_owner_and_deleted() -> None:
    """``findExtendedResourceClaim``: an annotated claim controlled by the pod, with requests, left
    by an earlier attempt, makes Filter refuse every node; PostFilter deletes it ("deletion of
    ResourceClaim completed") and the next attempt allocates anew. A claim of another pod's, or
    one not annotated, is no such claim."""
    c = Cluster(gpu_class(), make_node("n1", cpu="8"), gpu_slice("n1", 1))

    def left_over(name: str, owner: str, annotated: bool = True) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "name": name,
            "namespace": "default",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": f"uid-default-{owner}", "controller": True}
            ],
        }
        if annotated:
            meta["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
        request = {"name": "container-0-request-0", "exactly": {"deviceClassName": "gpu", "count": 1}}
        spec = {"devices": {"requests": [request]}}
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta, "spec": spec}

    c.create(left_over("stale", "a"), left_over("others", "b"), left_over("plain", "a", annotated=False))
    c.settle()
    c.create(gpu_pod("a", 1))
    c.settle()
    assert c.store.try_get("ResourceClaim", "default", "stale") is None
    assert c.store.try_get("ResourceClaim", "default", "others") is not None
    assert c.store.try_get("ResourceClaim", "default", "plain") is not None
    assert any("deletion of ResourceClaim completed" in m for m in c.events("FailedScheduling"))
    # deleting an unallocated claim requeues nobody (isSchedulableAfterClaimChange: QueueSkip), so
    # the pod waits for the unschedulable pool's 5-minute flush
    c.advance(60)
    assert c.node_of("a") is None
    c.advance(300)
    assert c.node_of("a") == "n1"


@pytest.mark.parametrize(
    "metadata",
    [
        {"annotations": "true", "ownerReferences": [{"uid": "u", "controller": True}]},
        {"annotations": {"resource.kubernetes.io/extended-resource-claim": "true"}, "ownerReferences": ["u"]},
        {"annotations": {"resource.kubernetes.io/extended-resource-claim": "true"}, "ownerReferences": "u"},
        "not a mapping",
    ],
)
def test_malformed_claim_metadata_is_no_extended_resource_claim(metadata: Any) -> None:
    """The claim informer's handler indexes extended-resource claims by owner; malformed metadata
    (as a cluster that does not validate might deliver) is skipped, not raised."""
    from kubesched.scheduler.plugins.dynamicresources.claims import special_owner as _special_owner

    assert _special_owner({"metadata": metadata}) is None
