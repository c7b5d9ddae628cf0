"""The structured allocator (``k8s.io/dynamic-resource-allocation/structured``), as the
DynamicResources plugin uses it: which devices of the ResourceSlices a node can reach satisfy a
pod's claims, and which exactly to allocate.

Devices are kept in one table in a fixed order (pools by driver and name, the newest generation
of each pool, slices by name, devices as listed), so allocations are reproducible. A selector
list (the DeviceClass's, then the request's CEL selectors) becomes a boolean mask over the table,
evaluated once per device and kept until the slices change. Filter counts, for all nodes at
once, the free matching devices each node reaches (a bincount); only pods whose requests
compete for the same devices in different ways, or carry constraints or alternatives, are then
checked node by node with the search itself (depth first over the requests, first fit).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np

from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.api.selectors import NodeSelectorTerm, parse_node_selector_term
from kubesched.errors import InputError
from kubesched.framework.nodes import NodeTableView
from kubesched.scheduler.plugins.dynamicresources import capacity, cel
from kubesched.scheduler.plugins.nodeaffinity import match_terms

EXACT_COUNT = "ExactCount"
ALL = "All"
MAX_SEARCH_STEPS = 100_000  # a bound on the depth-first search for one node


class AllocationError(Exception):
    """Something is wrong with a claim or a class (a CEL error): scheduling the pod is an error."""


@dataclass(frozen=True, slots=True)
class Device:
    driver: str
    pool: str
    name: str
    node: str | None  # node-local device
    terms: tuple[NodeSelectorTerm, ...] | None  # reachable where a node selector matches
    all_nodes: bool
    obj: Mapping[str, Any]
    selector: Mapping[str, Any] | None = None  # the node selector ``terms`` came from

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.name)

    def attribute(self, qualified: str) -> Any:
        """The value of a fully qualified attribute (``domain/name``), or None."""
        domain, _, ident = qualified.rpartition("/")
        for name, raw in (self.obj.get("attributes") or {}).items():
            d, _, i = str(name).rpartition("/")
            if i == ident and (d or self.driver) == domain and isinstance(raw, Mapping):
                for kind in ("int", "bool", "string", "version"):
                    if kind in raw:
                        return (kind, raw[kind])
        return None


def node_selector_terms(selector: Any, where: str) -> tuple[NodeSelectorTerm, ...]:
    try:
        return tuple(
            parse_node_selector_term(t, f"{where}.nodeSelectorTerms[{i}]")
            for i, t in enumerate((selector or {}).get("nodeSelectorTerms") or [])
        )
    except InputError:
        return ()


def _counter_values(raw: Any) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for name, c in (raw or {}).items():
        try:
            value = (c or {}).get("value") if isinstance(c, Mapping) else c
            if value is None:
                continue
            out[str(name)] = parse_quantity(value)
        except (QuantityError, TypeError):
            continue
    return out


def _tolerated(taint: Mapping[str, Any], tolerations: tuple[tuple[str, str, str, str], ...]) -> bool:
    """``DeviceToleration.ToleratesTaint``: an empty key with Exists matches every taint; an
    empty effect matches every effect; Equal also compares the value."""
    for key, operator, value, effect in tolerations:
        if effect and effect != taint.get("effect"):
            continue
        if key and key != taint.get("key"):
            continue
        if operator == "Exists" or (value == str(taint.get("value") or "") and key):
            return True
    return False


def _matches(terms: tuple[NodeSelectorTerm, ...], labels: Mapping[str, str], name: str) -> bool:
    return any(t.matches(labels, name) for t in terms)


def apply_taint_rules(
    slices: Iterable[Mapping[str, Any]], rules: Iterable[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The slices with DeviceTaintRules' taints appended to the devices each rule selects
    (``resourceslice/tracker`` applyPatches): a rule without a selector selects nothing, an empty
    one every device; driver, pool and device narrow it. Slices no rule touches are shared."""
    rules = [r for r in rules if isinstance((r.get("spec") or {}).get("deviceSelector"), Mapping)]
    if not rules:
        return list(slices)
    out: list[Mapping[str, Any]] = []
    for s in slices:
        spec = s.get("spec") or {}
        driver, pool = spec.get("driver"), (spec.get("pool") or {}).get("name")
        patched: list[Any] | None = None
        for rule in rules:
            sel = rule["spec"]["deviceSelector"]
            if sel.get("driver") is not None and sel["driver"] != driver:
                continue
            if sel.get("pool") is not None and sel["pool"] != pool:
                continue
            taint = rule["spec"].get("taint") or {}
            for i, d in enumerate(spec.get("devices") or []):
                if not isinstance(d, Mapping) or (sel.get("device") is not None and sel["device"] != d.get("name")):
                    continue
                if patched is None:
                    patched = [dict(x) if isinstance(x, Mapping) else x for x in spec.get("devices") or []]
                patched[i]["taints"] = [*(patched[i].get("taints") or []), taint]
        out.append(s if patched is None else {**s, "spec": {**spec, "devices": patched}})
    return out


class DeviceTable:
    """Every device of the current ResourceSlices, in allocation order."""

    def __init__(self, slices: Iterable[Mapping[str, Any]]) -> None:
        newest: dict[tuple[str, str], int] = {}
        ordered = []
        for s in slices:
            spec = s.get("spec") or {}
            pool = spec.get("pool") or {}
            key = (str(spec.get("driver") or ""), str(pool.get("name") or ""))
            gen = int(pool.get("generation") or 0)
            newest[key] = max(newest.get(key, gen), gen)
            ordered.append((key, gen, str((s.get("metadata") or {}).get("name") or ""), spec))
        ordered.sort(key=lambda t: (t[0], t[2]))
        self.devices: list[Device] = []
        # partitionable devices: counter sets by (driver, pool, name), and what each device consumes
        self.counters: dict[tuple[str, str, str], dict[str, Fraction]] = {}
        consumption: list[list[tuple[tuple[str, str, str], dict[str, Fraction]]]] = []
        for (driver, pool), gen, _name, spec in ordered:
            if gen != newest[(driver, pool)]:
                continue  # an older generation of the pool: being replaced
            for cs in spec.get("sharedCounters") or []:
                if isinstance(cs, Mapping) and cs.get("name"):
                    self.counters[(driver, pool, str(cs["name"]))] = _counter_values(cs.get("counters"))
            per_device = bool(spec.get("perDeviceNodeSelection"))
            for d in spec.get("devices") or []:
                if not isinstance(d, Mapping) or not d.get("name"):
                    continue
                src = d if per_device else spec
                node = src.get("nodeName") or None
                terms = (
                    node_selector_terms(src.get("nodeSelector"), "nodeSelector") if src.get("nodeSelector") else None
                )
                self.devices.append(
                    Device(
                        driver, pool, str(d["name"]), node, terms, bool(src.get("allNodes")), d, src.get("nodeSelector")
                    )
                )
                consumption.append(
                    [
                        ((driver, pool, str(c.get("counterSet"))), _counter_values(c.get("counters")))
                        for c in d.get("consumesCounters") or []
                        if isinstance(c, Mapping)
                    ]
                )
        self.consumes = consumption
        # consumable capacity: devices several requests may share, and every device's capacity
        self.capacity = [capacity.device_capacity(d.obj) for d in self.devices]
        self.multi = [bool(d.obj.get("allowMultipleAllocations")) for d in self.devices]
        self.any_multi = any(self.multi)
        self.consumers = [i for i, c in enumerate(consumption) if c]
        self.set_consumers: dict[tuple[str, str, str], list[int]] = {}  # counter set -> devices drawing on it
        for i in self.consumers:
            for counter_set, _ in consumption[i]:
                self.set_consumers.setdefault(counter_set, []).append(i)
        self.index = {d.key: i for i, d in enumerate(self.devices)}
        self.local = np.array([d.node is not None for d in self.devices], bool)
        self._local_nodes = [d.node for d in self.devices if d.node is not None]
        self.local_idx = np.flatnonzero(self.local)
        self._masks: dict[tuple[str, ...], np.ndarray] = {}
        self._activations: list[Any] = [None] * len(self.devices)
        self._rows_index: Mapping[str, int] | None = None  # held, so that its id cannot be reused
        self._rows_len = -1
        self._by_node: dict[str, list[int]] | None = None
        self._shared: list[int] = []
        self._tainted = [i for i, d in enumerate(self.devices) if d.obj.get("taints")]
        self._usable: dict[Any, np.ndarray] = {}
        self._rows = np.zeros(0, np.int64)
        self.usage: tuple[Mapping[int, Mapping[str, Fraction]], np.ndarray] | None = None  # nodekeys' last shares

    def __len__(self) -> int:
        return len(self.devices)

    @cached_property
    def templates(self) -> np.ndarray | None:
        """Per device, an id of everything the search reads of it but its name (attributes,
        capacity, counters it draws with their sets' sizes, taints, sharing), for ``nodekeys``;
        None when the layout cannot be keyed. Computed once per table, when first needed."""
        if not bool(self.local.all()):
            return None  # devices reached by node selector: searched node by node
        node_of_pool: dict[tuple[str, str], str | None] = {}
        pool_of_driver: dict[tuple[str | None, str], str] = {}
        for d in self.devices:
            if node_of_pool.setdefault((d.driver, d.pool), d.node) != d.node:
                return None  # a pool (and its counter sets) spanning nodes
            if pool_of_driver.setdefault((d.node, d.driver), d.pool) != d.pool:
                return None  # two pools of one driver on a node: counter set names could mix
        ids: dict[str, int] = {}
        out = np.zeros(len(self), np.uint64)
        for i, d in enumerate(self.devices):
            spec = {k: v for k, v in d.obj.items() if k != "name"}
            sets = sorted(
                (key[2], sorted((n, str(v)) for n, v in self.counters.get(key, {}).items()))
                for key, _ in self.consumes[i]
            )
            text = json.dumps([d.driver, spec, sets], sort_keys=True, default=str)
            out[i] = ids.setdefault(text, len(ids) + 1)
        return out

    def amounts(self, i: int, key: tuple[str, str, str]) -> dict[str, Fraction]:
        """What device ``i`` draws from counter set ``key`` (its entries for that set summed)."""
        out: dict[str, Fraction] = {}
        for k, values in self.consumes[i]:
            if k == key:
                for name, amount in values.items():
                    out[name] = out.get(name, Fraction(0)) + amount
        return out

    def mask(self, expressions: tuple[str, ...]) -> np.ndarray:
        """Devices every expression selects (AllocationError for a CEL error on any device)."""
        hit = self._masks.get(expressions)
        if hit is not None:
            return hit
        out = np.ones(len(self.devices), bool)
        for expr in expressions:
            for i, d in enumerate(self.devices):
                if not out[i]:
                    continue
                act = self._activations[i]
                if act is None:
                    act = self._activations[i] = cel.device_activation(d.driver, dict(d.obj))
                try:
                    out[i] = cel.evaluate(expr, act)
                except cel.CELError as exc:
                    raise AllocationError(str(exc)) from None
        self._masks[expressions] = out
        return out

    def usable(self, selection: tuple[tuple[str, ...], tuple[tuple[str, str, str, str], ...]]) -> np.ndarray:
        """Devices a request may take: selected by its expressions, and every NoSchedule or
        NoExecute taint tolerated (device taints: tainted devices are not allocated)."""
        expressions, tolerations = selection
        mask = self.mask(expressions)
        if not self._tainted:
            return mask
        key = (expressions, tolerations)
        hit = self._usable.get(key)
        if hit is None:
            hit = mask.copy()
            for i in self._tainted:
                if hit[i] and not all(_tolerated(t, tolerations) for t in self._taints(i)):
                    hit[i] = False
            self._usable[key] = hit
        return hit

    def _taints(self, i: int) -> list[Mapping[str, Any]]:
        return [
            t
            for t in self.devices[i].obj.get("taints") or []
            if isinstance(t, Mapping) and t.get("effect") in ("NoSchedule", "NoExecute")
        ]

    def local_rows(self, index: Mapping[str, int]) -> np.ndarray:
        """The node-table row of each node-local device (-1: node not in the table)."""
        if index is not self._rows_index or len(index) != self._rows_len:  # the node table's layout changed
            self._rows = np.array([index.get(n, -1) for n in self._local_nodes], np.int64)
            self._rows_index, self._rows_len = index, len(index)
        return self._rows

    def reachable(self, node: str, labels: Mapping[str, str]) -> list[int]:
        """The devices a node reaches, in table order."""
        if self._by_node is None:
            self._by_node = {}
            for i, d in enumerate(self.devices):
                if d.node is not None:
                    self._by_node.setdefault(d.node, []).append(i)
            self._shared = [i for i, d in enumerate(self.devices) if d.node is None]
        mine = self._by_node.get(node, [])
        shared = [
            i
            for i in self._shared
            if self.devices[i].all_nodes
            or (self.devices[i].terms is not None and _matches(self.devices[i].terms or (), labels, node))
        ]
        return sorted(mine + shared) if shared else mine

    def shared_counts(self, mask: np.ndarray, nodes: NodeTableView) -> np.ndarray:
        """Per node, how many selected devices that are not node-local it reaches (a node
        selector is matched over the node table's columns, once per distinct selector)."""
        counts = np.zeros(nodes.n, np.int64)
        reach: dict[int, np.ndarray] = {}
        for i in np.flatnonzero(mask & ~self.local):
            d = self.devices[i]
            if d.all_nodes:
                counts += 1
            elif d.terms is not None:
                hit = reach.get(id(d.terms))
                if hit is None:
                    hit = reach[id(d.terms)] = match_terms(nodes, d.terms)
                counts += hit
        return counts


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
