"""The ClusterRole aggregation controller (``pkg/controller/clusterroleaggregation``): a
ClusterRole with an ``aggregationRule`` holds the rules of every ClusterRole its selectors pick
(``admin`` gathers ``edit``, which gathers ``view``, each with its ``system:aggregate-to-*`` part),
kept current as those roles change."""

from __future__ import annotations

import contextlib
import functools
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.selectors import parse_label_selector
from kubesched.api.watch import WatchEvent
from kubesched.client.object_client import ObjectClient
from kubesched.errors import InputError


class ClusterRoleAggregationController:
    name = "clusterrole-aggregation"

    def __init__(self, client: ObjectClient) -> None:
        self.client = client
        self._dirty = True

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "ClusterRole":
            self._dirty = True

    def run(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        for _ in range(10):  # aggregated roles may gather aggregated roles (view -> edit -> admin)
            if not self._pass():
                return

    def _pass(self) -> bool:
        changed = False
        roles = sorted(self.client.list("ClusterRole"), key=lambda r: r["metadata"]["name"])
        for role in roles:
            agg = role.get("aggregationRule")
            if not agg:
                continue
            rules: list[dict[str, Any]] = []
            for other in roles:
                if other is role:
                    continue
                labels = other["metadata"].get("labels") or {}
                if any(_selects(sel, labels) for sel in agg.get("clusterRoleSelectors") or []):
                    for r in other.get("rules") or []:
                        if r not in rules:
                            rules.append(r)
            if rules != (role.get("rules") or []):
                changed = True
                with contextlib.suppress(ApiError):
                    self.client.patch(
                        "ClusterRole", "", role["metadata"]["name"], functools.partial(_with_rules, rules=rules)
                    )

        return changed


def _with_rules(obj: dict[str, Any], rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {**obj, "rules": rules}


def _selects(selector: Any, labels: dict[str, str]) -> bool:
    """A clusterRoleSelector (a meta/v1 LabelSelector) on a role's labels; an invalid one selects
    nothing."""
    try:
        parsed = parse_label_selector(selector, "aggregationRule.clusterRoleSelectors")
    except InputError:
        return False
    return parsed is not None and parsed.matches(labels)
