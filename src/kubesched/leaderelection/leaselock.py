"""``resourcelock.LeaseLock``: the election record in a ``coordination.k8s.io/v1`` Lease,
through kubernetes_asyncio on the caller's event loop. Updates PUT the Lease last read or
written, so its resourceVersion makes a concurrent writer's update a 409 Conflict."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.client.exceptions import ApiException

from kubesched.client.rest import checked
from kubesched.leaderelection.record import LeaderElectionRecord


class LeaseLock:
    def __init__(self, api: k8s.ApiClient, namespace: str, name: str, identity: str) -> None:
        self.coordination = k8s.CoordinationV1Api(api)
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease: dict[str, Any] | None = None

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    @staticmethod
    async def _raw(call: Any) -> dict[str, Any]:
        doc = await checked(call)
        assert isinstance(doc, dict)
        return doc

    async def get(self) -> tuple[LeaderElectionRecord, bytes] | None:
        try:
            lease = await self._raw(
                self.coordination.read_namespaced_lease(self.name, self.namespace, _preload_content=False)
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        self.lease = lease
        record = LeaderElectionRecord.from_lease_spec(lease.get("spec"))
        return record, record.raw()

    async def create(self, record: LeaderElectionRecord) -> None:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_lease_spec(),
        }
        self.lease = await self._raw(
            self.coordination.create_namespaced_lease(self.namespace, body, _preload_content=False)
        )

    async def update(self, record: LeaderElectionRecord) -> None:
        if self.lease is None:
            raise RuntimeError("lease not initialized, call get or create first")
        body = {**self.lease, "spec": record.to_lease_spec()}
        self.lease = await self._raw(
            self.coordination.replace_namespaced_lease(self.name, self.namespace, body, _preload_content=False)
        )
