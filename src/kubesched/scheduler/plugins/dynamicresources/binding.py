"""DynamicResources at PreBind (``bindClaim``): each claim written with its allocation and the
pod in ``reservedFor``, the binding conditions waited for, the special claim of extended
resources backed by DRA created."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.pod import PodInfo
from kubesched.clock import parse_rfc3339, rfc3339
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import (
    PreBindPlugin,
)
from kubesched.framework.status import Code, Status
from kubesched.leaderelection.config import parse_duration
from kubesched.scheduler.plugins.dynamicresources.claims import (
    BINDING_POLL_SECONDS,
    BINDING_TIMEOUT,
    allocation_of,
    binding_failure,
    binding_ready,
    reserved_for,
    results_of,
    uid_of,
    with_finalizer,
)
from kubesched.scheduler.plugins.dynamicresources.state import (
    STATE_KEY,
    DraState,
)


class ClaimBinding(PreBindPlugin):
    """The PreBind half of DynamicResources (its claims' informer views come from the plugin)."""

    in_flight: dict[str, dict[str, Any]]
    _written: set[str]

    def _lookup(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        raise NotImplementedError

    def _pod_claims(self, pod: PodInfo) -> list[Mapping[str, Any]]:
        raise NotImplementedError

    # -- PreBind ------------------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Skip for a pod without claims."""
        s: DraState | None = state.get(STATE_KEY)
        if s is None or (not s.claims and s.ext is None):
            return Status(Code.SKIP)
        return None

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """``bindClaim``: each claim gets its allocation (if the scheduler made it) and the pod in
        ``reservedFor``, through the status subresource."""
        s: DraState | None = state.get(STATE_KEY)
        if s is None or (not s.claims and s.ext is None):
            return None
        client = self.handle.client if self.handle is not None else None
        if client is None:
            return None
        consumer = {"resource": "pods", "name": pod.name, "uid": pod.uid}
        if s.ext is not None and s.ext.chosen:
            st = self._bind_extended(s, pod, client, consumer)
            if st is not None:
                return st
        for claim in s.claims:
            if any(r.get("uid") == pod.uid for r in reserved_for(claim)):
                continue
            uid = uid_of(claim)
            meta = claim.get("metadata") or {}
            allocation = s.allocations.get(uid)
            try:
                if allocation is not None:
                    claim = with_finalizer(client, claim)
                status = dict(claim.get("status") or {})
                if allocation is not None:
                    status["allocation"] = allocation
                if status.get("allocation") and not status["allocation"].get("allocationTimestamp"):
                    # when the binding conditions' timeout started (DRADeviceBindingConditions)
                    status["allocation"] = {**status["allocation"], "allocationTimestamp": self._now()}
                status["reservedFor"] = [*reserved_for(claim), consumer]
                client.update_claim_status(dict(claim), status)
            except ApiError as exc:  # Unreserve gives the devices back
                return Status.of(
                    Code.ERROR, f"add reservation to claim {meta.get('namespace')}/{meta.get('name')}: {exc.message}"
                )
            if allocation is not None:
                self._written.add(uid)
                seen = self._lookup(str(meta.get("namespace")), str(meta.get("name")))
                if seen is not None and (seen.get("status") or {}).get("allocation"):
                    self.in_flight.pop(uid, None)  # the informer was faster than this thread
                    self._written.discard(uid)
        return self._wait_for_binding_conditions(s, pod, node_name, client)

    def _wait_for_binding_conditions(self, s: DraState, pod: PodInfo, node_name: str, client: Any) -> Status | None:
        """DRADeviceBindingConditions (beta, on since v1.36): when an allocated device has
        binding conditions, PreBind waits (``bindingTimeout``, 10 minutes by default) until the
        claim's device status has them all True, and fails at once when a failure condition is
        True; the next attempt's Filter then leaves the claim for PostFilter to deallocate."""
        waiting = [
            c
            for c in s.claims
            if any(r.get("bindingConditions") for r in results_of(s.allocations.get(uid_of(c)) or allocation_of(c)))
        ]
        if not waiting:
            return None
        client.record_event(
            "Normal",
            "BindingConditionsPending",
            "Scheduling",
            pod.obj,
            f"waiting for binding conditions for device on node {node_name}",
        )
        deadline = time.monotonic() + self._binding_timeout()
        while True:
            try:
                current = [
                    client.get("ResourceClaim", str(c["metadata"].get("namespace")), str(c["metadata"]["name"]))
                    for c in waiting
                ]
            except ApiError as exc:
                return Status.error(exc.message)
            failed = next((f for c in current if (f := binding_failure(c)) is not None), None)
            if failed is not None:
                return Status.error(f"device binding failed: {failed}")
            if all(binding_ready(c) for c in current):
                return None
            if time.monotonic() >= deadline or not client.settle(BINDING_POLL_SECONDS):
                return Status.error("device binding timeout: context deadline exceeded")

    def _binding_timed_out(self, claim: Mapping[str, Any]) -> bool:
        """``isClaimTimeout``: a device with binding conditions, allocated longer ago than the
        binding timeout."""
        alloc = allocation_of(claim)
        stamp = alloc.get("allocationTimestamp")
        if not stamp or not any(r.get("bindingConditions") for r in results_of(alloc)):
            return False
        clock = getattr(self.handle, "clock", None)
        now = clock.now() if clock is not None else time.time()
        try:
            return parse_rfc3339(str(stamp)) + self._binding_timeout() < now
        except ValueError:
            return False

    def _binding_timeout(self) -> float:
        raw = (self.args or {}).get("bindingTimeout") if isinstance(self.args, Mapping) else None
        if raw is None:
            return BINDING_TIMEOUT
        try:
            return parse_duration(raw, "bindingTimeout")
        except InputError:
            return BINDING_TIMEOUT

    def _now(self) -> str:
        clock = getattr(self.handle, "clock", None)
        return rfc3339(clock.now() if clock is not None else time.time())

    def _bind_extended(self, s: DraState, pod: PodInfo, client: Any, consumer: dict[str, Any]) -> Status | None:
        """``bindClaim`` of the special claim: created now (its name generated), given its
        allocation and the pod in ``reservedFor``, and named with the request mappings in the
        pod's ``status.extendedResourceClaimStatus``."""
        assert s.ext is not None
        variant, mappings, _plan = s.ext.variants[s.ext.chosen]
        temp = s.ext.uid
        allocation = s.allocations.get(temp)
        meta = variant["metadata"]
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "namespace": meta["namespace"],
                "generateName": meta["generateName"],
                "ownerReferences": meta["ownerReferences"],
                "annotations": meta["annotations"],
            },
            "spec": variant["spec"],
        }
        try:
            created = client.create_claim(body)
            s.ext.created = created
            if allocation is not None:
                created = s.ext.created = with_finalizer(client, created)
            status = {"allocation": allocation, "reservedFor": [consumer]}
            client.update_claim_status(created, status)
        except ApiError as exc:
            return Status.of(Code.ERROR, f"create claim for extended resources {meta['namespace']}/: {exc.message}")
        uid = uid_of(created)
        if allocation is not None:  # the allocation in flight now belongs to the real claim
            self.in_flight.pop(temp, None)
            s.allocations.pop(temp, None)
            s.allocations[uid] = allocation
            self.in_flight[uid] = allocation
            self._written.add(uid)
            seen = self._lookup(str(meta["namespace"]), str(created["metadata"]["name"]))
            if seen is not None and (seen.get("status") or {}).get("allocation"):
                self.in_flight.pop(uid, None)
                self._written.discard(uid)
        if not mappings:
            return Status.of(
                Code.ERROR,
                f"nil or empty request mappings, no update of pod {pod.namespace}/{pod.name} "
                "ExtendedResourceClaimStatus",
            )
        try:
            client.patch_pod_status_fields(
                pod.namespace,
                pod.name,
                {
                    "extendedResourceClaimStatus": {
                        "requestMappings": mappings,
                        "resourceClaimName": created["metadata"]["name"],
                    }
                },
            )
        except ApiError as exc:
            return Status.of(
                Code.ERROR, f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {exc.message}"
            )
        return None

    # -- queueing ---------------------------------------------------------------------------------
