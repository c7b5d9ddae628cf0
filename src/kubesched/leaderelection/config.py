"""The ``leaderElection`` section of KubeSchedulerConfiguration (component-base
``LeaderElectionConfiguration``) and kube-scheduler's ``--leader-elect*`` flags.

Defaults are component-base's ``RecommendedDefaultLeaderElectionConfiguration`` with
kube-scheduler's lock name; validation follows component-base ``ValidateLeaderElectionConfiguration``
and client-go ``NewLeaderElector`` (``tools/leaderelection/leaderelection.go``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kubesched.errors import InputError

JITTER_FACTOR = 1.2  # client-go leaderelection.JitterFactor
REMOVED_LOCKS = ("endpoints", "configmaps", "endpointsleases", "configmapsleases")

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: Any, field: str) -> float:
    """A Go ``time.Duration`` string (``15s``, ``1m30s``, ``500ms``) as seconds."""
    if not isinstance(text, str) or not text:
        raise InputError(f"Invalid value: {text!r}: expected a duration such as 15s", field=field)
    s = text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    s = s.lstrip("+-")
    if s == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise InputError(f'Invalid value: "{text}": time: invalid duration', field=field)
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos == 0:
        raise InputError(f'Invalid value: "{text}": time: invalid duration', field=field)
    return sign * total


def format_duration(seconds: float) -> str:
    """Seconds as Go prints a Duration for the common cases (``15s``, ``1.5s``, ``500ms``)."""
    if seconds and seconds < 1:
        return f"{seconds * 1000:g}ms"
    return f"{seconds:g}s"


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_namespace: str = "kube-system"
    resource_name: str = "kube-scheduler"

    def describe(self) -> str:
        return f"{self.resource_namespace}/{self.resource_name}"

    def validate(self, prefix: str = "leaderElection") -> LeaderElectionConfig:
        """Raise InputError (naming the field) unless client-go would accept these settings."""
        if not self.leader_elect:
            return self
        for name, value in (
            ("leaseDuration", self.lease_duration),
            ("renewDeadline", self.renew_deadline),
            ("retryPeriod", self.retry_period),
        ):
            if value <= 0:
                raise InputError(
                    f"Invalid value: {format_duration(value)}: must be greater than zero", field=f"{prefix}.{name}"
                )
        if self.lease_duration <= self.renew_deadline:
            raise InputError(
                f"Invalid value: {format_duration(self.renew_deadline)}: "
                "LeaseDuration must be greater than RenewDeadline",
                field=f"{prefix}.leaseDuration",
            )
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise InputError(
                f"Invalid value: {format_duration(self.renew_deadline)}: renewDeadline must be greater than "
                f"retryPeriod*JitterFactor ({format_duration(JITTER_FACTOR * self.retry_period)})",
                field=f"{prefix}.renewDeadline",
            )
        if self.resource_lock in REMOVED_LOCKS:
            raise InputError(
                f'Invalid value: "{self.resource_lock}": {self.resource_lock} lock is removed, migrate to leases',
                field=f"{prefix}.resourceLock",
            )
        if self.resource_lock != "leases":
            raise InputError(
                f'Unsupported value: "{self.resource_lock}": supported values: "leases"', field=f"{prefix}.resourceLock"
            )
        for name, given in (("resourceName", self.resource_name), ("resourceNamespace", self.resource_namespace)):
            if not given:
                raise InputError(f'Invalid value: "": {name} is required', field=f"{prefix}.{name}")
        return self


_FIELDS = {
    "leaderElect": ("leader_elect", bool),
    "leaseDuration": ("lease_duration", float),
    "renewDeadline": ("renew_deadline", float),
    "retryPeriod": ("retry_period", float),
    "resourceLock": ("resource_lock", str),
    "resourceNamespace": ("resource_namespace", str),
    "resourceName": ("resource_name", str),
}


def from_dict(raw: Mapping[str, Any] | None, prefix: str = "leaderElection") -> LeaderElectionConfig:
    """The configuration file's section over the defaults (unknown keys are an error, as the
    strict decoding of a KubeSchedulerConfiguration)."""
    cfg = LeaderElectionConfig()
    if raw is None:
        return cfg
    if not isinstance(raw, Mapping):
        raise InputError("expected an object", field=prefix)
    changes: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in _FIELDS:
            raise InputError(f'unknown field "{key}"', field=f"{prefix}.{key}")
        attr, kind = _FIELDS[key]
        if kind is bool:
            if not isinstance(value, bool):
                raise InputError(f"Invalid value: {value!r}: expected true or false", field=f"{prefix}.{key}")
            changes[attr] = value
        elif kind is float:
            changes[attr] = parse_duration(value, f"{prefix}.{key}")
        else:
            if not isinstance(value, str):
                raise InputError(f"Invalid value: {value!r}: expected a string", field=f"{prefix}.{key}")
            changes[attr] = value
    return replace(cfg, **changes)


def with_flags(cfg: LeaderElectionConfig, flags: Mapping[str, Any]) -> LeaderElectionConfig:
    """kube-scheduler's ``--leader-elect*`` flags given on the command line win over the file."""
    changes = {k: v for k, v in flags.items() if v is not None}
    return replace(cfg, **changes) if changes else cfg
