"""``resourcelock.LeaderElectionRecord`` and its mapping onto a ``coordination.k8s.io/v1``
Lease's spec (client-go ``tools/leaderelection/resourcelock/leaselock.go``)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import orjson


def micro_time(unix: float) -> str:
    """Unix seconds as metav1.MicroTime serializes (``2026-11-23T11:03:05.123456Z``)."""
    return dt.datetime.fromtimestamp(unix, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    holder_identity: str
    lease_duration_seconds: int
    acquire_time: str | None  # MicroTime text, kept as read so a record round-trips exactly
    renew_time: str | None
    leader_transitions: int
    strategy: str = ""
    preferred_holder: str = ""

    def raw(self) -> bytes:
        """The record's JSON (client-go's tags); replicas compare it to notice a change."""
        doc: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaderTransitions": self.leader_transitions,
        }
        if self.strategy:
            doc["strategy"] = self.strategy
        if self.preferred_holder:
            doc["preferredHolder"] = self.preferred_holder
        return orjson.dumps(doc)

    def to_lease_spec(self) -> dict[str, Any]:
        """``LeaderElectionRecordToLeaseSpec``: holderIdentity, leaseDurationSeconds and
        leaseTransitions always written (an empty holder too), the times when set."""
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.leader_transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time is not None:
            spec["renewTime"] = self.renew_time
        if self.strategy:
            spec["strategy"] = self.strategy
        if self.preferred_holder:
            spec["preferredHolder"] = self.preferred_holder
        return spec

    @classmethod
    def from_lease_spec(cls, spec: dict[str, Any] | None) -> LeaderElectionRecord:
        """``LeaseSpecToLeaderElectionRecord``: absent fields read as empty / zero."""
        spec = spec or {}
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            leader_transitions=int(spec.get("leaseTransitions") or 0),
            strategy=spec.get("strategy") or "",
            preferred_holder=spec.get("preferredHolder") or "",
        )
