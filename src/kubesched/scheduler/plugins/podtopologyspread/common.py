"""What filtering and scoring share (``podtopologyspread/common.go``, ``plugin.go``): the
plugin's args, the constraints that apply to a pod (its own, or the defaults), and counting the
pods a constraint selects on every node at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api.affinity import SCHEDULE_ANYWAY, SpreadConstraint, parse_spread_constraints
from kubesched.api.pod import PodInfo
from kubesched.errors import InputError
from kubesched.framework.nodes import NodeTableView
from kubesched.scheduler.listers import Listers
from kubesched.scheduler.plugins.nodeaffinity import required_node_affinity
from kubesched.scheduler.plugins.tainttoleration import untolerated_do_not_schedule
from kubesched.scheduler.podtable import PodTable

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SYSTEM, LIST = "System", "List"

# ``systemDefaultConstraints`` in plugin.go
SYSTEM_DEFAULTS = (
    {"maxSkew": 3, "topologyKey": HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY},
    {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY},
)


@dataclass(frozen=True, slots=True)
class SpreadArgs:
    """PodTopologySpreadArgs: ``defaultingType`` System (upstream's default) or List."""

    defaulting_type: str = SYSTEM
    default_constraints: tuple[Mapping[str, Any], ...] = ()

    @property
    def system_defaulted(self) -> bool:
        return self.defaulting_type == SYSTEM


def parse_args(raw: Any) -> SpreadArgs:
    """Defaults and ``ValidatePodTopologySpreadArgs``."""
    if raw is None:
        return SpreadArgs()
    if not isinstance(raw, Mapping):
        raise InputError("expected an object", field="args")
    kind = raw.get("defaultingType") or SYSTEM
    if kind not in (SYSTEM, LIST):
        raise InputError(f"Unsupported value: {kind!r}: supported values: List, System", field="defaultingType")
    defaults = raw.get("defaultConstraints") or []
    if not isinstance(defaults, list):
        raise InputError("expected a list", field="defaultConstraints")
    if kind == SYSTEM and defaults:
        raise InputError(
            'Invalid value: when .defaultingType is "System", .defaultConstraints must be empty',
            field="defaultConstraints",
        )
    seen = set()
    for i, c in enumerate(defaults):
        if not isinstance(c, Mapping):
            raise InputError("expected an object", field=f"defaultConstraints[{i}]")
        if c.get("labelSelector") is not None:
            raise InputError("Forbidden: constraint must not define a selector", field=f"defaultConstraints[{i}]")
        try:
            parse_spread_constraints([{**c, "labelSelector": {}}], {})
        except InputError as exc:
            exc.field = (exc.field or "").replace("spec.topologySpreadConstraints[0]", f"defaultConstraints[{i}]")
            raise
        pair = (c.get("topologyKey"), c.get("whenUnsatisfiable"))
        if pair in seen:
            raise InputError(f"Duplicate value: {pair!r}", field=f"defaultConstraints[{i}]")
        seen.add(pair)
    return SpreadArgs(kind, tuple(dict(c) for c in defaults))


def constraints_for(pod: PodInfo, action: str, args: SpreadArgs, listers: Listers) -> tuple[SpreadConstraint, ...]:
    """The pod's own constraints with ``whenUnsatisfiable == action``; a pod with none gets the
    defaults, selecting what its Services and controller select (``buildDefaultConstraints``)."""
    if pod.spread_constraints:
        return tuple(c for c in pod.spread_constraints if c.when_unsatisfiable == action)
    raw = SYSTEM_DEFAULTS if args.system_defaulted else args.default_constraints
    wanted: list[Mapping[str, Any]] = [c for c in raw if c.get("whenUnsatisfiable") == action]
    if not wanted:
        return ()
    selector = listers.default_selector(pod.namespace, pod.labels, pod.controller)
    if selector.empty:
        return ()
    return tuple(
        SpreadConstraint(
            int(c["maxSkew"]),
            str(c["topologyKey"]),
            action,
            selector,
            int(c.get("minDomains") or 1),
            str(c.get("nodeAffinityPolicy") or "Honor"),
            str(c.get("nodeTaintsPolicy") or "Ignore"),
        )
        for c in wanted
    )


def has_all_keys(nodes: NodeTableView, constraints: tuple[SpreadConstraint, ...]) -> np.ndarray:
    """``nodeLabelsMatchSpreadConstraints`` for every row."""
    ok = np.ones(nodes.n, bool)
    for c in constraints:
        codes = nodes.label_codes(c.topology_key)
        if codes is None:
            return np.zeros(nodes.n, bool)
        ok &= codes >= 0
    return ok


def inclusion(nodes: NodeTableView, pod: PodInfo, constraints: tuple[SpreadConstraint, ...]) -> list[np.ndarray]:
    """``MatchNodeInclusionPolicies`` of each constraint for every row."""
    affinity = taints = None
    out = []
    for c in constraints:
        ok = np.ones(nodes.n, bool)
        if c.node_affinity_policy == "Honor":
            if affinity is None:
                affinity = required_node_affinity(nodes, pod)
            ok &= affinity
        if c.node_taints_policy == "Honor":
            if taints is None:
                taints = untolerated_do_not_schedule(nodes, pod)
            ok &= ~taints
        out.append(ok)
    return out


def matching_per_node(table: PodTable, nodes: NodeTableView, namespace: str, c: SpreadConstraint) -> np.ndarray:
    """``countPodsMatchSelector`` on every node: pods in ``namespace``, selected by the
    constraint, not terminating."""
    mask = table.match_selector(c.selector)
    mask &= table.in_namespaces((namespace,))
    mask &= ~table.terminating
    rows = table.node_row[mask]
    rows = rows[rows >= 0]
    return np.bincount(rows, minlength=nodes.n)[: nodes.n]


def domain_codes(nodes: NodeTableView, key: str) -> np.ndarray:
    """Value code of ``key`` on every row, -1 where the node lacks it."""
    codes = nodes.label_codes(key)
    return codes if codes is not None else np.full(nodes.n, -1, np.int32)


def n_values(nodes: NodeTableView, key: str) -> int:
    return len(nodes.label_values(key))


def self_matches(pod: PodInfo, c: SpreadConstraint) -> bool:
    return c.selector.matches(pod.labels)
