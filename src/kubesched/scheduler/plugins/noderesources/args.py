"""Args of the noderesources plugins with upstream defaults and validation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.errors import InputError

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100
DEFAULT_RESOURCES = (("cpu", 1), ("memory", 1))


@dataclass(frozen=True, slots=True)
class FitArgs:
    ignored_resources: frozenset[str] = frozenset()
    ignored_resource_groups: frozenset[str] = frozenset()
    strategy: str = LEAST_ALLOCATED
    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES
    shape: tuple[tuple[int, int], ...] = field(default=())


def _resources(raw: Any, path: str, *, weight_must_be_one: bool = False) -> tuple[tuple[str, int], ...]:
    if raw is None:
        return DEFAULT_RESOURCES
    if not isinstance(raw, list):
        raise InputError("expected a list", field=path)
    out = []
    seen = set()
    for i, r in enumerate(raw):
        if not isinstance(r, Mapping) or not isinstance(r.get("name"), str) or not r["name"]:
            raise InputError("Required value: resource name", field=f"{path}[{i}].name")
        name, weight = r["name"], r.get("weight", 1)
        if name in seen:
            raise InputError(f"Duplicate value: {name!r}", field=f"{path}[{i}].name")
        seen.add(name)
        if weight_must_be_one:
            if weight != 1:
                raise InputError(f"Invalid value: {weight!r}: must be 1", field=f"{path}[{i}].weight")
        elif not isinstance(weight, int) or not 1 <= weight <= 100:
            raise InputError(
                f"Invalid value: {weight!r}: resource weight of {name} not in valid range [1, 100]",
                field=f"{path}[{i}].weight",
            )
        out.append((name, int(weight)))
    return tuple(out)


def parse_fit_args(raw: Mapping[str, Any] | None) -> FitArgs:
    raw = raw or {}
    ignored = raw.get("ignoredResources") or []
    groups = raw.get("ignoredResourceGroups") or []
    for i, g in enumerate(groups):
        if "/" in str(g):
            raise InputError(
                f"Invalid value: {g!r}: resource group name can't contain '/'", field=f"ignoredResourceGroups[{i}]"
            )
    strategy = raw.get("scoringStrategy") or {}
    stype = strategy.get("type") or LEAST_ALLOCATED
    if stype not in STRATEGIES:
        raise InputError(
            f"Unsupported value: {stype!r}: supported values: {', '.join(STRATEGIES)}", field="scoringStrategy.type"
        )
    resources = _resources(strategy.get("resources"), "scoringStrategy.resources")
    shape: tuple[tuple[int, int], ...] = ()
    if stype == REQUESTED_TO_CAPACITY_RATIO:
        points = ((strategy.get("requestedToCapacityRatio") or {}).get("shape")) or []
        path = "scoringStrategy.requestedToCapacityRatio.shape"
        if not points:
            raise InputError("Required value: at least one point must be specified", field=path)
        prev = -1
        parsed = []
        for i, p in enumerate(points):
            u, s = p.get("utilization"), p.get("score")
            if not isinstance(u, int) or not 0 <= u <= MAX_UTILIZATION:
                raise InputError(f"Invalid value: {u!r}: not in valid range [0, 100]", field=f"{path}[{i}].utilization")
            if u <= prev:
                raise InputError(
                    f"Invalid value: {u!r}: utilization values must be sorted in increasing order",
                    field=f"{path}[{i}].utilization",
                )
            if not isinstance(s, int) or not 0 <= s <= MAX_CUSTOM_PRIORITY_SCORE:
                raise InputError(f"Invalid value: {s!r}: not in valid range [0, 10]", field=f"{path}[{i}].score")
            prev = u
            parsed.append((u, s))
        shape = tuple(parsed)
    return FitArgs(frozenset(map(str, ignored)), frozenset(map(str, groups)), stype, resources, shape)


def parse_balanced_args(raw: Mapping[str, Any] | None) -> tuple[tuple[str, int], ...]:
    return _resources((raw or {}).get("resources"), "resources", weight_must_be_one=True)
