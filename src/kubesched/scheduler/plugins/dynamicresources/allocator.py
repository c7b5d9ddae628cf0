"""The structured allocator (``k8s.io/dynamic-resource-allocation/structured``), as the
DynamicResources plugin uses it: which devices of the ResourceSlices a node can reach satisfy a
pod's claims, and which exactly to allocate.

Devices are kept in one table in a fixed order (``devices.DeviceTable``), so allocations are
reproducible. Filter counts, for all nodes at
once, the free matching devices each node reaches (a bincount); only pods whose requests
compete for the same devices in different ways, or carry constraints or alternatives, are then
checked node by node with the search itself (depth first over the requests, first fit).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.scheduler.plugins.dynamicresources import capacity
from kubesched.scheduler.plugins.dynamicresources.devices import DeviceTable

EXACT_COUNT = "ExactCount"
ALL = "All"
MAX_SEARCH_STEPS = 100_000  # a bound on the depth-first search for one node


@dataclass(slots=True)
class Request:
    """One request (or one alternative of a firstAvailable request) of a claim."""

    name: str  # "gpu", or "gpu/small" for a subrequest
    class_name: str
    expressions: tuple[str, ...]
    mode: str
    count: int
    admin_access: bool = False
    tolerations: tuple[tuple[str, str, str, str], ...] = ()  # (key, operator, value, effect)
    capacity: Mapping[str, Fraction] = field(default_factory=dict)  # capacity.requests
    raw_tolerations: tuple[Mapping[str, Any], ...] = ()  # as the claim wrote them (copied into results)

    @property
    def selection(self) -> tuple[tuple[str, ...], tuple[tuple[str, str, str, str], ...]]:
        """What decides which devices the request may take: its selectors and tolerations."""
        return (self.expressions, self.tolerations)


@dataclass(slots=True)
class ClaimPlan:
    """A claim to allocate: its requests (each a list of alternatives) and constraints."""

    claim: Mapping[str, Any]
    requests: list[list[Request]]
    constraints: list[tuple[frozenset[str] | None, str]]  # (request names or all, qualified attribute)
    configs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def simple(self) -> bool:
        return not self.constraints and all(len(alts) == 1 for alts in self.requests)


def plan_claim(claim: Mapping[str, Any], classes: Mapping[str, Mapping[str, Any]]) -> ClaimPlan:
    """The requests of a claim with their classes' selectors; KeyError(class name) when a class is missing."""
    devices = (claim.get("spec") or {}).get("devices") or {}
    requests: list[list[Request]] = []
    configs: list[dict[str, Any]] = []
    for r in devices.get("requests") or []:
        alternatives = []
        if r.get("firstAvailable"):
            subs = [(f"{r['name']}/{s.get('name')}", s) for s in r["firstAvailable"]]
        else:
            subs = [(str(r.get("name")), r.get("exactly") or {})]
        for name, body in subs:
            class_name = str(body.get("deviceClassName") or "")
            cls = classes.get(class_name)
            if cls is None:
                raise KeyError(class_name)
            cspec = cls.get("spec") or {}
            exprs = tuple(
                str((s.get("cel") or {}).get("expression"))
                for s in (cspec.get("selectors") or []) + (body.get("selectors") or [])
                if (s.get("cel") or {}).get("expression")
            )
            mode = body.get("allocationMode") or EXACT_COUNT
            count = int(body.get("count") or 1) if mode == EXACT_COUNT else 0
            tolerations = tuple(
                (
                    str(t.get("key") or ""),
                    str(t.get("operator") or "Equal"),
                    str(t.get("value") or ""),
                    str(t.get("effect") or ""),
                )
                for t in body.get("tolerations") or []
                if isinstance(t, Mapping)
            )
            alternatives.append(
                Request(
                    name,
                    class_name,
                    exprs,
                    mode,
                    count,
                    bool(body.get("adminAccess")),
                    tolerations,
                    capacity.request_capacity(body),
                    tuple(t for t in body.get("tolerations") or [] if isinstance(t, Mapping)),
                )
            )
            for c in cspec.get("config") or []:
                configs.append({"source": "FromClass", "requests": [name], **{k: v for k, v in c.items()}})
        requests.append(alternatives)
    for c in devices.get("config") or []:
        configs.append({"source": "FromClaim", **{k: v for k, v in c.items()}})
    constraints = []
    for c in devices.get("constraints") or []:
        if c.get("matchAttribute"):
            names = frozenset(c["requests"]) if c.get("requests") else None
            constraints.append((names, str(c["matchAttribute"])))
    return ClaimPlan(claim, requests, constraints, configs)


def _constraint_ok(
    plan: ClaimPlan, chosen: list[tuple[str, int]], table: DeviceTable, req_name: str, device: int
) -> bool:
    for names, attribute in plan.constraints:
        parent = req_name.split("/")[0]
        if names is not None and parent not in names and req_name not in names:
            continue
        value = table.devices[device].attribute(attribute)
        if value is None:
            return False
        for other_req, other in chosen:
            other_parent = other_req.split("/")[0]
            if names is not None and other_parent not in names and other_req not in names:
                continue
            if table.devices[other].attribute(attribute) != value:
                return False
    return True


def allocate_node(
    plans: Sequence[ClaimPlan],
    table: DeviceTable,
    allocated: np.ndarray,
    node: str,
    labels: Mapping[str, str],
    shared: Mapping[int, Mapping[str, Fraction]] | None = None,
    fractional: bool = False,
) -> list[list[tuple[str, int]]] | None:
    """The devices each claim gets on this node (per claim: (request name, device index)), or
    None. Depth first over the claims' requests, alternatives in order, devices in table order.
    ``shared``: what allocated claims consume of each shared device (consumable capacity)."""
    reach_all = table.reachable(node, labels)
    reach = [i for i in reach_all if not allocated[i]]
    used: set[int] = set()
    in_use = shared or {}
    allocating: dict[int, dict[str, Fraction]] = {}  # shares this search has taken
    no_share: dict[str, Fraction] = {}
    # what the counter sets this node's devices draw on have left once the allocated devices'
    # consumption is taken (only those sets: the search touches no other)
    left: dict[tuple[str, str, str], dict[str, Fraction]] = {}
    for i in reach_all:
        for key, _ in table.consumes[i]:
            if key not in left and key in table.counters:
                have = left[key] = dict(table.counters[key])
                for j in table.set_consumers.get(key, ()):
                    if allocated[j]:
                        for name, amount in table.amounts(j, key).items():
                            have[name] = have.get(name, Fraction(0)) - amount
    steps = 0
    results: list[list[tuple[str, int]]] = [[] for _ in plans]
    counters_left = left

    def candidates(req: Request) -> list[int]:
        mask = table.usable(req.selection)
        # adminAccess: monitoring or maintenance access to devices whether or not allocated
        return [i for i in (reach_all if req.admin_access else reach) if mask[i]]

    def solve_claim(ci: int) -> bool:
        if ci == len(plans):
            return True
        return solve_request(ci, 0)

    def solve_request(ci: int, ri: int) -> bool:
        plan = plans[ci]
        if ri == len(plan.requests):
            return solve_claim(ci + 1)
        for req in plan.requests[ri]:
            if req.mode == ALL:  # every matching device the node reaches, none of them taken
                mask = table.usable(req.selection)
                mine = [i for i in reach_all if mask[i]]
                if not mine or any(allocated[i] or i in used for i in mine):
                    continue
                if not all(_constraint_ok(plan, results[ci], table, req.name, i) for i in mine):
                    continue
                taken_counters = [table.consumes[i] for i in mine if table.consumes[i]]
                if not _consume_all(counters_left, taken_counters):
                    continue
                results[ci].extend((req.name, i) for i in mine)
                used.update(mine)
                if solve_request(ci, ri + 1):
                    return True
                del results[ci][-len(mine) :]
                used.difference_update(mine)
                for c in taken_counters:
                    _consume(counters_left, c, 1)
                continue
            if pick(ci, ri, req, candidates(req), 0, req.count):
                return True
        return False

    def pick(ci: int, ri: int, req: Request, cands: list[int], start: int, left: int) -> bool:
        nonlocal steps
        if left == 0:
            return solve_request(ci, ri + 1)
        plan = plans[ci]
        for k in range(start, len(cands) - left + 1):  # fewer candidates left than devices wanted: no way on
            steps += 1
            if steps > MAX_SEARCH_STEPS:
                return False
            i = cands[k]
            multi = table.multi[i]
            if (i in used and not multi) or not _constraint_ok(plan, results[ci], table, req.name, i):
                continue
            cap = table.capacity[i]
            if (cap or req.capacity) and not capacity.fits(
                req.capacity,
                cap,
                in_use.get(i, no_share) if multi else no_share,
                allocating.get(i, no_share),
                fractional,
            ):
                continue  # consumable capacity: not enough of the device left for this share
            # a shared device's counters are taken by its first share only
            counted = bool(table.consumes[i]) and not (multi and (i in in_use or i in allocating))
            if counted and not _consume(counters_left, table.consumes[i], -1):
                continue  # partitionable devices: not enough left in its counter sets
            taken = capacity.shares(req.capacity, cap, fractional) if multi else None
            if taken is not None:
                had = i in allocating
                mine = allocating.setdefault(i, {})
                for name, amount in taken.items():
                    mine[name] = mine.get(name, Fraction(0)) + amount
            else:
                used.add(i)
            results[ci].append((req.name, i))
            if pick(ci, ri, req, cands, k + 1, left - 1):
                return True
            results[ci].pop()
            if taken is not None:
                for name, amount in taken.items():
                    allocating[i][name] -= amount
                if not had:
                    del allocating[i]
            else:
                used.discard(i)
            if counted:
                _consume(counters_left, table.consumes[i], 1)
        return False

    return results if solve_claim(0) else None


def _consume(
    left: dict[tuple[str, str, str], dict[str, Fraction]],
    consumption: list[tuple[tuple[str, str, str], dict[str, Fraction]]],
    sign: int,
    *,
    check: bool = True,
) -> bool:
    """Take (sign -1) or give back (+1) a device's counters; taking fails, changing nothing,
    when a counter set lacks enough (or does not exist in the pool). ``check=False`` takes
    regardless (what allocated devices already hold)."""
    if sign < 0 and check:
        for key, amounts in consumption:
            have = left.get(key)
            if have is None or any(have.get(name, Fraction(0)) < amount for name, amount in amounts.items()):
                return False
    for key, amounts in consumption:
        have = left.setdefault(key, {})
        for name, amount in amounts.items():
            have[name] = have.get(name, Fraction(0)) + sign * amount
    return True


def _consume_all(
    left: dict[tuple[str, str, str], dict[str, Fraction]],
    consumptions: list[list[tuple[tuple[str, str, str], dict[str, Fraction]]]],
) -> bool:
    done: list[list[tuple[tuple[str, str, str], dict[str, Fraction]]]] = []
    for c in consumptions:
        if not _consume(left, c, -1):
            for d in done:
                _consume(left, d, 1)
            return False
        done.append(c)
    return True


def allocation_result(
    plan: ClaimPlan, chosen: list[tuple[str, int]], table: DeviceTable, node: str, fractional: bool = False
) -> dict[str, Any]:
    """``status.allocation`` of a claim (resource.k8s.io/v1 AllocationResult)."""
    results = []
    admin = {r.name for alts in plan.requests for r in alts if r.admin_access}
    node_local = False
    selector = None
    by_name = {r.name: r for alts in plan.requests for r in alts}
    claim_uid = str((plan.claim.get("metadata") or {}).get("uid") or "")
    for req_name, i in chosen:
        d = table.devices[i]
        # a device that binds to its node pins the claim there too (DRADeviceBindingConditions)
        node_local = node_local or d.node is not None or bool(d.obj.get("bindsToNode"))
        selector = selector or d.selector
        entry: dict[str, Any] = {"request": req_name, "driver": d.driver, "pool": d.pool, "device": d.name}
        if req_name in admin:
            entry["adminAccess"] = True
        request = by_name.get(req_name)
        if request is not None and request.raw_tolerations:  # the device taint eviction reads them
            entry["tolerations"] = [dict(t) for t in request.raw_tolerations]
        for key in ("bindingConditions", "bindingFailureConditions"):  # what PreBind waits for
            if d.obj.get(key):
                entry[key] = list(d.obj[key])
        if table.multi[i]:  # a share of the device: its ID and what it consumes
            entry["shareID"] = capacity.share_id(claim_uid, req_name, d.key)
            cap = table.capacity[i]
            taken = capacity.shares(by_name[req_name].capacity if req_name in by_name else {}, cap, fractional)
            if taken:
                entry["consumedCapacity"] = {
                    n: capacity.quantity_string(q, cap[n].binary) for n, q in sorted(taken.items())
                }
        results.append(entry)
    out: dict[str, Any] = {"devices": {"results": results}}
    if plan.configs:
        out["devices"]["config"] = plan.configs
    # where the claim can be used: the node of a node-local device, else the pool's node
    # selector; none when every device reaches all nodes
    if node_local:
        out["nodeSelector"] = {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
        }
    elif selector is not None:
        out["nodeSelector"] = dict(selector)
    return out


def allocated_keys(claims: Iterable[Mapping[str, Any]]) -> set[tuple[str, str, str]]:
    """The devices allocated by these claims for themselves (their ``status.allocation`` results;
    a share of a device, with a shareID, leaves it to others: ``shared_capacity``)."""
    out = set()
    for c in claims:
        alloc = (c.get("status") or {}).get("allocation") or {}
        for r in (alloc.get("devices") or {}).get("results") or []:
            if not r.get("adminAccess") and not r.get("shareID"):  # admin access takes nothing from others
                out.add((str(r.get("driver")), str(r.get("pool")), str(r.get("device"))))
    return out


def shared_capacity(claims: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], dict[str, Fraction]]:
    """What these claims' shares consume of each shared device (``AggregatedCapacity``)."""
    out: dict[tuple[str, str, str], dict[str, Fraction]] = {}
    for c in claims:
        alloc = (c.get("status") or {}).get("allocation") or {}
        for r in (alloc.get("devices") or {}).get("results") or []:
            if not r.get("shareID"):
                continue
            key = (str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
            mine = out.setdefault(key, {})
            for name, raw in (r.get("consumedCapacity") or {}).items():
                try:
                    mine[str(name)] = mine.get(str(name), Fraction(0)) + parse_quantity(raw)
                except QuantityError:
                    continue
    return out
