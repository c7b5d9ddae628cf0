"""The devices of the ResourceSlices as the structured allocator sees them
(``k8s.io/dynamic-resource-allocation/structured``): one table in a fixed order (pools by driver
and name, the newest generation of each pool, slices by name, devices as listed), each device's
attributes, capacity, counters, taints and the nodes that reach it; a selector list becomes a
boolean mask over the table, evaluated once per device and kept until the slices change."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
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
