"""The horizontal pod autoscaler controller (``pkg/controller/podautoscaler``), for autoscaling/v2
Resource metrics: every 15 s of the cluster's clock (``--horizontal-pod-autoscaler-sync-period``)
each HorizontalPodAutoscaler reads its target's scale and the usage of the target's pods (what
``kubectl top`` reports: ``api.usage``), computes ``ceil(ratio × ready pods)`` where the usage ratio
to the target leaves the 10 % tolerance (``GetResourceReplicas``), keeps the highest recommendation
of the last five minutes before scaling down, limits a scale-up to double or four more pods per
period (the default behavior), clamps to min and max, scales the target and writes its status
(current metrics, replicas, the AbleToScale, ScalingActive and ScalingLimited conditions)."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable
from typing import Any

from kubesched.api.errors import NotFound
from kubesched.api.quantity import milli_value, value
from kubesched.api.selectors import format_label_selector, parse_label_selector
from kubesched.api.usage import pod_usage
from kubesched.api.watch import WatchEvent
from kubesched.client.object_client import ObjectClient
from kubesched.clock import rfc3339
from kubesched.controllers.recorder import Recorder
from kubesched.controllers.workqueue import Retries, every
from kubesched.errors import InputError
from kubesched.health import LoopHealth, describe

SYNC_PERIOD = 15.0
TOLERANCE = 0.1
DOWNSCALE_WINDOW = 300.0  # the default scaleDown stabilizationWindowSeconds
SCALABLE = ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController")


def _request(pod: dict[str, Any], resource: str) -> int | None:
    """The pod's request of cpu (millicores) or memory (bytes); None when a container states none."""
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        req = ((c.get("resources") or {}).get("requests") or {}).get(resource)
        if req is None:
            return None
        total += milli_value(req) if resource == "cpu" else value(req)
    return total


class PodAutoscaler:
    """A loop of the controller manager: every autoscaler is reconciled each sync period, and at
    once when it is created or changed."""

    def __init__(
        self, client: ObjectClient, wake: Callable[[], None] | None = None, health: LoopHealth | None = None
    ) -> None:
        self.client = client
        self.wake = wake or (lambda: None)
        # an autoscaler that fails is logged, counted and tried again after its backoff; the others go on
        name = "horizontal-pod-autoscaler-controller"
        self._retries = Retries(client, name, lambda _key: self._mark(), self.wake, health)
        self.recorder = Recorder(client, "horizontal-pod-autoscaler")
        self._due = True
        self._recommendations: dict[tuple[str, str], list[tuple[float, int]]] = {}
        every(client, SYNC_PERIOD, self._mark)

    def _mark(self) -> None:
        self._due = True
        self.wake()

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "HorizontalPodAutoscaler" and (ev.old is None or ev.old.get("spec") != ev.obj.get("spec")):
            self._due = True

    def run(self) -> None:
        if not self._due:
            return
        self._due = False
        for hpa in self.client.list("HorizontalPodAutoscaler"):
            key = ((hpa.get("metadata") or {}).get("namespace") or "default", hpa["metadata"]["name"])
            self._retries.attempt(key, describe("HorizontalPodAutoscaler", key), self._reconcile_key)

    def _others_selecting(self, ns: str, name: str, pods: list[dict[str, Any]]) -> list[str]:
        """The other HPAs of the namespace whose targets' selectors match one of ``pods``
        (``HPAsMatchingPods``), as ``namespace/name``."""
        labels = {json.dumps((p.get("metadata") or {}).get("labels") or {}, sort_keys=True) for p in pods}
        found = []
        for other in self.client.list("HorizontalPodAutoscaler", ns):
            if other["metadata"]["name"] == name:
                continue
            ref = (other.get("spec") or {}).get("scaleTargetRef") or {}
            kind = str(ref.get("kind") or "")
            target = self.client.get(kind, ns, str(ref.get("name") or "")) if kind in SCALABLE else None
            raw = ((target or {}).get("spec") or {}).get("selector")
            if not raw:
                continue
            try:
                selector = parse_label_selector(raw, "spec.selector")
            except InputError:
                continue
            if selector is not None and any(selector.matches(json.loads(text)) for text in labels):
                found.append(f"{ns}/{other['metadata']['name']}")
        return found

    def _reconcile_key(self, key: tuple[str, str]) -> None:
        hpa = self.client.get("HorizontalPodAutoscaler", *key)
        if hpa is not None:
            self._reconcile(hpa)

    def _reconcile(self, hpa: dict[str, Any]) -> None:
        meta, spec = hpa["metadata"], hpa.get("spec") or {}
        ns, name = meta.get("namespace") or "default", meta["name"]
        ref = spec.get("scaleTargetRef") or {}
        kind, target_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        status: dict[str, Any] = {k: v for k, v in (hpa.get("status") or {}).items() if k in ("lastScaleTime",)}
        now = self.client.clock.now()
        target = self.client.get(kind, ns, target_name) if kind in SCALABLE else None
        if target is None:
            why = f'{kind.lower()}s "{target_name}" not found' if kind in SCALABLE else f"unknown kind {kind}"
            message = f"the HPA controller was unable to get the target's current scale: {why}"
            self.recorder.event(hpa, "Warning", "FailedGetScale", why)
            status.update(currentReplicas=0, desiredReplicas=0)
            status["conditions"] = [_condition("AbleToScale", "False", "FailedGetScale", message, now)]
            self._write(ns, name, status, hpa)
            return
        current = int((target.get("spec") or {}).get("replicas", 1))
        low, high = int(spec.get("minReplicas", 1)), int(spec.get("maxReplicas", 1))
        conditions = [
            _condition(
                "AbleToScale",
                "True",
                "SucceededGetScale",
                "the HPA controller was able to get the target's current scale",
                now,
            )
        ]
        metrics, reason_text = [], ""
        if current == 0 and low != 0:
            desired = 0
            conditions.append(
                _condition(
                    "ScalingActive",
                    "False",
                    "ScalingDisabled",
                    "scaling is disabled since the replica count of the target is zero",
                    now,
                )
            )
        else:
            selector = parse_label_selector((target.get("spec") or {}).get("selector") or {}, "spec.selector")
            assert selector is not None
            pods = [
                p
                for p in self.client.list("Pod", ns)
                if selector.matches((p.get("metadata") or {}).get("labels") or {})
                and not (p.get("metadata") or {}).get("deletionTimestamp")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            ]
            others = self._others_selecting(ns, name, pods)
            if others:  # validateAndParseSelector: one HPA per pod, else none scales them
                message = (
                    f"pods by selector {format_label_selector((target.get('spec') or {}).get('selector'))} are "
                    f"controlled by more than one HPA (e.g. [{' '.join(sorted([f'{ns}/{name}', *others])[:2])}])"
                )
                self.recorder.event(hpa, "Warning", "AmbiguousSelector", message)
                conditions.append(_condition("ScalingActive", "False", "AmbiguousSelector", message, now))
                status.update(currentReplicas=current, desiredReplicas=current, conditions=conditions)
                self._write(ns, name, status, hpa)
                return
            proposals = []
            for metric in spec.get("metrics") or []:
                outcome = self._resource_metric(metric, pods, current)
                if isinstance(outcome, str):
                    conditions.append(_condition("ScalingActive", "False", "FailedGetResourceMetric", outcome, now))
                    self.recorder.event(hpa, "Warning", "FailedGetResourceMetric", outcome)
                    self._write(
                        ns,
                        name,
                        {**status, "currentReplicas": current, "desiredReplicas": current, "conditions": conditions},
                        hpa,
                    )
                    return
                replicas, metric_status, text = outcome
                proposals.append((replicas, text))
                metrics.append(metric_status)
            desired, reason_text = max(proposals, default=(current, ""))
            conditions.append(
                _condition(
                    "ScalingActive",
                    "True",
                    "ValidMetricFound",
                    f"the HPA was able to successfully calculate a replica count from {reason_text}",
                    now,
                )
            )
            desired = self._stabilize(ns, name, desired, now)
            limited, reason, message = desired, "DesiredWithinRange", "the desired count is within the acceptable range"
            up_limit = max(current * 2, current + 4)
            if limited > up_limit:
                limited, reason, message = (
                    up_limit,
                    "ScaleUpLimit",
                    "the desired replica count is increasing faster than the maximum scale rate",
                )
            if limited > high:
                limited, reason, message = (
                    high,
                    "TooManyReplicas",
                    "the desired replica count is more than the maximum replica count",
                )
            elif limited < low:
                limited, reason, message = (
                    low,
                    "TooFewReplicas",
                    "the desired replica count is less than the minimum replica count",
                )
            conditions.append(
                _condition(
                    "ScalingLimited", "True" if reason != "DesiredWithinRange" else "False", reason, message, now
                )
            )
            desired = limited
        if desired != current:
            self.client.patch(
                kind, ns, target_name, lambda o: {**o, "spec": {**(o.get("spec") or {}), "replicas": desired}}
            )
            why = f"{reason_text} above target" if desired > current else "All metrics below target"
            self.recorder.event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {why}")
            status["lastScaleTime"] = rfc3339(now)
            conditions[0] = _condition(
                "AbleToScale",
                "True",
                "SucceededRescale",
                f"the HPA controller was able to update the target scale to {desired}",
                now,
            )
        status.update(currentReplicas=current, desiredReplicas=desired, conditions=conditions)
        if metrics:
            status["currentMetrics"] = metrics
        self._write(ns, name, status, hpa)

    def _resource_metric(
        self, metric: dict[str, Any], pods: list[dict[str, Any]], current: int
    ) -> tuple[int, dict[str, Any], str] | str:
        """``GetResourceReplicas`` / ``GetRawResourceReplicas`` for a Resource metric: the proposal,
        the metric's status and how the event names it, or why it cannot be computed."""
        if metric.get("type") != "Resource":
            return f"metric type {metric.get('type')} is not supported by kubesched's autoscaler"
        source = metric.get("resource") or {}
        resource, target = str(source.get("name") or "cpu"), source.get("target") or {}
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        if not running:
            return f"unable to get metrics for resource {resource}: no metrics returned from resource metrics API"
        usage = [pod_usage(p)[0 if resource == "cpu" else 1] for p in running]
        if target.get("type") == "AverageValue" or target.get("averageValue") is not None:
            goal = milli_value(target.get("averageValue")) if resource == "cpu" else value(target.get("averageValue"))
            average = sum(usage) / len(usage)
            ratio = average / goal if goal else 0.0
            replicas = current if abs(ratio - 1.0) <= TOLERANCE else math.ceil(sum(usage) / goal) if goal else current
            shown = f"{int(average)}m" if resource == "cpu" else str(int(average))
            return (
                replicas,
                {"type": "Resource", "resource": {"name": resource, "current": {"averageValue": shown}}},
                f"{resource} resource",
            )
        requests = []
        for p in running:
            req = _request(p, resource)
            if req is None:
                pod = f"{p['metadata'].get('namespace')}/{p['metadata']['name']}"
                return f"failed to get {resource} utilization: missing request for {resource} in pod {pod}"
            requests.append(req)
        if not sum(requests):
            return f"failed to get {resource} utilization: no request for {resource}"
        utilization = int(sum(usage) * 100 / sum(requests))
        goal = int(target.get("averageUtilization") or 80)
        ratio = utilization / goal
        missing = len(pods) - len(running)  # pods without metrics yet: none if scaling up, all if down
        if abs(ratio - 1.0) <= TOLERANCE:
            replicas = current
        else:
            if missing:
                assumed = 0 if ratio > 1 else 100
                ratio = (utilization * len(running) + assumed * missing) / (goal * (len(running) + missing))
                if abs(ratio - 1.0) <= TOLERANCE:
                    ratio = 1.0
            replicas = (
                current if ratio == 1.0 else math.ceil(ratio * (len(running) + missing if missing else len(running)))
            )
        average = sum(usage) // len(usage)
        shown = f"{average}m" if resource == "cpu" else str(average)
        current_status = {"averageUtilization": utilization, "averageValue": shown}
        return (
            replicas,
            {"type": "Resource", "resource": {"name": resource, "current": current_status}},
            f"{resource} resource utilization (percentage of request)",
        )

    def _stabilize(self, ns: str, name: str, desired: int, now: float) -> int:
        """``stabilizeRecommendation``: the highest recommendation of the downscale window."""
        kept = [(t, r) for t, r in self._recommendations.get((ns, name), []) if now - t < DOWNSCALE_WINDOW]
        kept.append((now, desired))
        self._recommendations[(ns, name)] = kept
        return max(r for _, r in kept)

    def _write(self, ns: str, name: str, status: dict[str, Any], hpa: dict[str, Any]) -> None:
        before = hpa.get("status") or {}
        same = {k: v for k, v in status.items() if k != "conditions"} == {
            k: v for k, v in before.items() if k != "conditions"
        }
        if same and [(c["type"], c["status"], c["reason"]) for c in status.get("conditions", [])] == [
            (c.get("type"), c.get("status"), c.get("reason")) for c in before.get("conditions") or []
        ]:
            return
        with contextlib.suppress(NotFound):  # deleted meanwhile
            self.client.patch("HorizontalPodAutoscaler", ns, name, lambda o: {**o, "status": status})


def _condition(kind: str, status: str, reason: str, message: str, now: float) -> dict[str, Any]:
    return {"type": kind, "status": status, "lastTransitionTime": rfc3339(now), "reason": reason, "message": message}
