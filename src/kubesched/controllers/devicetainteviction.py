"""The device taint eviction controller (``pkg/controller/devicetainteviction``, with
DRADeviceTaintRules GA in v1.37): a pod using an allocated device that has a NoExecute taint —
on the device in its ResourceSlice, or from a DeviceTaintRule selecting it — is deleted, unless
the claim's request tolerates the taint: for ever without ``tolerationSeconds``, else until that
long after the taint's ``timeAdded``. The pod gets a ``DisruptionTarget`` condition
(``DeletionByDeviceTaintManager``) and a ``DeviceTaintManagerEviction`` event first. Each
DeviceTaintRule's ``EvictionInProgress`` condition says how many pods it still has to evict, or
that it has evicted them (or, for effect None, what it would evict)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.watch import WatchEvent
from kubesched.client.object_client import ObjectClient
from kubesched.clock import parse_rfc3339, rfc3339
from kubesched.controllers.disruption_target import with_disruption_target
from kubesched.controllers.recorder import Recorder
from kubesched.controllers.workqueue import Later
from kubesched.health import LoopHealth

KINDS = frozenset({"Pod", "ResourceClaim", "ResourceSlice", "DeviceTaintRule"})
CONDITION = "EvictionInProgress"


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    """A taint on an allocated device, and the rule it comes from (None: the slice's own)."""

    taint: Mapping[str, Any]
    rule: str | None


def _selects(rule: Mapping[str, Any], driver: str, pool: str, device: str) -> bool:
    """A DeviceTaintRule's deviceSelector: none selects nothing, empty every device; driver, pool
    and device narrow it."""
    sel = (rule.get("spec") or {}).get("deviceSelector")
    if not isinstance(sel, Mapping):
        return False
    return all(sel.get(k) is None or sel[k] == v for k, v in (("driver", driver), ("pool", pool), ("device", device)))


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """``resourceclaim.ToleratesTaint``: effect (empty: all), key (empty with Exists: all), value for Equal."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    if (toleration.get("operator") or "Equal") == "Exists":
        return True
    return bool(key) and (toleration.get("value") or "") == (taint.get("value") or "")


def eviction_time(result: Mapping[str, Any], taint: Mapping[str, Any], now: float) -> float | None:
    """``claimEvictionTime`` for one taint: when the pod must go (None: tolerated for ever)."""
    added = taint.get("timeAdded")
    try:
        since = parse_rfc3339(str(added)) if added else now
    except ValueError:
        since = now
    least: float | None = None
    for t in result.get("tolerations") or []:
        if t.get("effect") == "NoExecute" and _tolerates(t, taint):
            seconds = t.get("tolerationSeconds")
            if seconds is None:
                return None
            least = max(float(seconds), 0.0) if least is None else min(least, max(float(seconds), 0.0))
    return since + (least or 0.0)


class DeviceTaintEvictionController:
    name = "device-taint-eviction"

    def __init__(
        self, client: ObjectClient, wake: Callable[[], None] | None = None, health: LoopHealth | None = None
    ) -> None:
        self.client = client
        self.wake = wake or (lambda: None)
        self.health = health or LoopHealth()
        self.recorder = Recorder(client, "device-taint-eviction-controller")
        self._later = Later(client, lambda _key: self._mark(), self.wake)
        self._dirty = True
        self._evicted: dict[str, int] = {}  # rule name → pods it evicted since the start

    def _mark(self) -> None:
        self._dirty = True

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind in KINDS:
            self._dirty = True

    def _device_taints(self) -> dict[tuple[str, str, str], list[DeviceTaint]]:
        """NoExecute (and for rules, every effect's) taints by device, the newest pool generation's."""
        rules = self.client.list("DeviceTaintRule")
        newest: dict[tuple[str, str], int] = {}
        slices = self.client.list("ResourceSlice")
        for s in slices:
            spec = s.get("spec") or {}
            pool = spec.get("pool") or {}
            pool_key = (str(spec.get("driver")), str(pool.get("name")))
            newest[pool_key] = max(newest.get(pool_key, 0), int(pool.get("generation") or 0))
        out: dict[tuple[str, str, str], list[DeviceTaint]] = {}
        for s in slices:
            spec = s.get("spec") or {}
            pool = spec.get("pool") or {}
            driver, name = str(spec.get("driver")), str(pool.get("name"))
            if int(pool.get("generation") or 0) != newest[(driver, name)]:
                continue
            for d in spec.get("devices") or []:
                if not isinstance(d, Mapping) or not d.get("name"):
                    continue
                key = (driver, name, str(d["name"]))
                taints = [DeviceTaint(t, None) for t in d.get("taints") or [] if isinstance(t, Mapping)]
                for rule in rules:
                    if _selects(rule, *key):
                        taints.append(
                            DeviceTaint((rule.get("spec") or {}).get("taint") or {}, rule["metadata"]["name"])
                        )
                if taints:
                    out[key] = taints
        return out

    def _pending(
        self, taints: dict[tuple[str, str, str], list[DeviceTaint]], would: dict[str, set[tuple[str, str]]]
    ) -> Iterator[tuple[dict[str, Any], float, set[str]]]:
        """Each pod that has to go: the pod, when, and the NoExecute rules whose taint is the
        reason. ``would`` gets, per rule of effect None, the pods it would evict if it were
        NoExecute (what its condition reports)."""
        now = self.client.clock.now()
        claims = {(c["metadata"].get("namespace"), c["metadata"]["name"]): c for c in self.client.list("ResourceClaim")}
        for pod in self.client.list("Pod"):
            meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
            if meta.get("deletionTimestamp") or not spec.get("nodeName"):
                continue
            names = [
                s.get("resourceClaimName")
                for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
                if s.get("resourceClaimName")
            ] + [c.get("resourceClaimName") for c in spec.get("resourceClaims") or [] if c.get("resourceClaimName")]
            when: float | None = None
            reasons: set[str] = set()
            for name in dict.fromkeys(names):
                claim = claims.get((meta.get("namespace"), name))
                alloc = ((claim or {}).get("status") or {}).get("allocation") or {}
                reserved = any(
                    r.get("uid") == meta.get("uid") for r in (claim or {}).get("status", {}).get("reservedFor") or []
                )
                if not alloc or not reserved:
                    continue
                for result in (alloc.get("devices") or {}).get("results") or []:
                    key = (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
                    for dt in taints.get(key, []):
                        simulated = {**dt.taint, "effect": "NoExecute"}
                        if (
                            dt.rule is not None
                            and dt.taint.get("effect") == "None"
                            and eviction_time(result, simulated, now) is not None
                        ):
                            would.setdefault(dt.rule, set()).add((meta.get("namespace") or "", meta["name"]))
                        if dt.taint.get("effect") != "NoExecute":
                            continue
                        at = eviction_time(result, dt.taint, now)
                        if at is None:
                            continue
                        when = at if when is None else min(when, at)
                        if dt.rule is not None:
                            reasons.add(dt.rule)
            if when is not None:
                yield pod, when, reasons

    def run(self) -> None:
        if not self._dirty:  # nothing changed since the last sync: an idle loop is a healthy one
            self.health.ok("device-taint-eviction")
            return
        self._dirty = False
        taints = self._device_taints()
        now = self.client.clock.now()
        pending: dict[str, set[tuple[str, str]]] = {}
        would: dict[str, set[tuple[str, str]]] = {}
        for pod, when, rules in self._pending(taints, would):
            meta = pod["metadata"]
            if when > now:
                self._later.at((meta.get("namespace"), meta["name"]), when)
                for rule in rules:
                    pending.setdefault(rule, set()).add((meta.get("namespace") or "", meta["name"]))
                continue
            try:
                self._evict(pod)
            except ApiError as exc:
                self.health.error("device-taint-eviction", f"Pod {meta.get('namespace')}/{meta['name']}", exc)
                continue
            for rule in rules:
                self._evicted[rule] = self._evicted.get(rule, 0) + 1
        self._rule_conditions(taints, pending, would)
        self.health.ok("device-taint-eviction")

    def _evict(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        ns, name = meta.get("namespace") or "default", meta["name"]
        stamp = rfc3339(self.client.clock.now())

        self.recorder.event(pod, "Normal", "DeviceTaintManagerEviction", "Marking for deletion")
        reason, message = "DeletionByDeviceTaintManager", "Device Taint manager: deleting due to NoExecute taint"
        self.client.patch("Pod", ns, name, with_disruption_target(stamp, reason, message))
        with contextlib.suppress(ApiError):  # gone meanwhile: nothing left to do
            self.client.delete("Pod", ns, name, uid=meta.get("uid"))

    def _rule_conditions(
        self,
        taints: dict[tuple[str, str, str], list[DeviceTaint]],
        pending: dict[str, set[tuple[str, str]]],
        would: dict[str, set[tuple[str, str]]],
    ) -> None:
        """``EvictionInProgress`` on every DeviceTaintRule, written when it changed."""
        allocated = [
            (str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
            for c in self.client.list("ResourceClaim")
            for r in ((((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or [])
        ]
        for rule in self.client.list("DeviceTaintRule"):
            name = rule["metadata"]["name"]
            effect = ((rule.get("spec") or {}).get("taint") or {}).get("effect") or ""
            condition: dict[str, Any] = {
                "type": CONDITION,
                "status": "False",
                "reason": f"Effect{effect}",
                "message": "",
            }
            if effect == "NoExecute":
                pods = pending.get(name, set())
                if pods:
                    spaces = len({ns for ns, _ in pods})
                    condition["status"], condition["reason"] = "True", "PodsPendingEviction"
                    condition["message"] = (
                        ("1 pod needs" if len(pods) == 1 else f"{len(pods)} pods need")
                        + " to be evicted in "
                        + ("1 namespace." if spaces == 1 else f"{spaces} different namespaces.")
                    )
                elif self._evicted.get(name):
                    condition["reason"] = "Completed"
                else:
                    condition["reason"] = "NotStarted"
            elif effect != "None":
                condition["reason"] = "OtherEffect"
                condition["message"] = "Eviction only happens for the NoExecute effect."
            else:
                condition["reason"] = "NoEffect"
                selected = sum(1 for dts in taints.values() if any(dt.rule == name for dt in dts))
                in_use = sum(1 for key in allocated if _selects(rule, *key))
                pods = would.get(name, set())
                spaces = len({ns for ns, _ in pods})
                condition["message"] = (
                    ("1 published device selected. " if selected == 1 else f"{selected} published devices selected. ")
                    + ("1 allocated device selected. " if in_use == 1 else f"{in_use} allocated devices selected. ")
                    + ("1 pod would be evicted in " if len(pods) == 1 else f"{len(pods)} pods would be evicted in ")
                    + ("1 namespace " if spaces == 1 else f"{spaces} different namespaces ")
                    + "if the effect was NoExecute. This information will not be updated again. Recreate the "
                    "DeviceTaintRule to trigger an update."
                )
            evicted = self._evicted.get(name, 0)
            if evicted:
                condition["message"] = (condition["message"] + " " if condition["message"] else "") + (
                    "1 pod evicted since starting the controller."
                    if evicted == 1
                    else f"{evicted} pods evicted since starting the controller."
                )
            generation = int((rule.get("metadata") or {}).get("generation") or 0)
            if generation:
                condition["observedGeneration"] = generation
            current = next(
                (c for c in (rule.get("status") or {}).get("conditions") or [] if c.get("type") == CONDITION), None
            )
            if current is not None and all(current.get(k) == v for k, v in condition.items()):
                continue
            condition["lastTransitionTime"] = rfc3339(self.client.clock.now())
            others = [c for c in (rule.get("status") or {}).get("conditions") or [] if c.get("type") != CONDITION]

            def with_condition(
                o: dict[str, Any], c: dict[str, Any] = condition, rest: list[Any] = others
            ) -> dict[str, Any]:
                return {**o, "status": {**(o.get("status") or {}), "conditions": [*rest, c]}}

            with contextlib.suppress(ApiError):
                self.client.patch("DeviceTaintRule", "", name, with_condition)
