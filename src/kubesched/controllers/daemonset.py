"""The DaemonSet controller (``pkg/controller/daemon``): one pod on every node that should run
it (``NodeShouldRunDaemonPod``: the template's node selector and required node affinity, and
the node's NoSchedule/NoExecute taints against the pod's tolerations). Since v1.12 the pods are
placed by the scheduler: each pod gets required node affinity to its node
(``ReplaceDaemonSetPodNodeNameNodeAffinity``) and the daemon tolerations
(``AddOrUpdateDaemonPodTolerations``). A template change rolls out node by node within
maxUnavailable."""

from __future__ import annotations

import contextlib
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.intstr import scaled_value
from kubesched.api.selectors import Taint, Toleration, parse_node_selector_term
from kubesched.api.workloads import TEMPLATE_GENERATION
from kubesched.controllers.base import (
    Controller,
    available_in,
    is_active,
    key_of,
    pod_from_template,
    template_hash,
    write_status,
)
from kubesched.errors import InputError

REVISION_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"
# AddOrUpdateDaemonPodTolerations (pkg/controller/daemon/util): (key, effect)
DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def is_pod_updated(pod: dict[str, Any], revision: str, template_generation: str | None) -> bool:
    """``daemon/util.IsPodUpdated``: the pod carries the set's revision hash, or its template
    generation (a pod another controller made, whose hash was computed otherwise, still counts)."""
    labels = pod["metadata"].get("labels") or {}
    if revision and labels.get(REVISION_LABEL) == revision:
        return True
    return template_generation is not None and labels.get(GENERATION_LABEL) == template_generation


def node_selected(spec: dict[str, Any], node: dict[str, Any]) -> bool:
    """``PodMatchesNodeSelectorAndAffinityTerms``: nodeSelector and the required node affinity
    (any term; a template whose affinity does not parse selects no node)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if terms is None:
        return True
    try:
        parsed = [parse_node_selector_term(term, "nodeSelectorTerms") for term in terms]
    except InputError:
        return False
    return any(term.matches(labels, node["metadata"]["name"]) for term in parsed)


def daemon_tolerations(spec: dict[str, Any]) -> list[dict[str, Any]]:
    out = list(spec.get("tolerations") or [])
    wanted = list(DAEMON_TOLERATIONS) + ([NETWORK_UNAVAILABLE] if spec.get("hostNetwork") else [])
    for key, effect in wanted:
        if not any(t.get("key") == key and t.get("effect") == effect and t.get("operator") == "Exists" for t in out):
            out.append({"key": key, "operator": "Exists", "effect": effect})
    return out


def should_run(spec: dict[str, Any], node: dict[str, Any]) -> bool:
    """``NodeShouldRunDaemonPod``: selected, and every NoSchedule/NoExecute taint tolerated
    (with the daemon tolerations, as the pod will have them)."""
    if not node_selected(spec, node):
        return False
    tolerations = [
        Toleration(
            str(t.get("key") or ""),
            str(t.get("operator") or "Equal"),
            str(t.get("value") or ""),
            str(t.get("effect") or ""),
        )
        for t in daemon_tolerations(spec)
    ]
    for raw in (node.get("spec") or {}).get("taints") or []:
        taint = Taint(str(raw.get("key") or ""), str(raw.get("value") or ""), str(raw.get("effect") or ""))
        if taint.effect in ("NoSchedule", "NoExecute") and not any(t.tolerates(taint) for t in tolerations):
            return False
    return True


# (DaemonSet, generation, node, resourceVersion) verdicts kept before they are forgotten at once
MAX_REMEMBERED = 200_000


def _node_of(pod: dict[str, Any]) -> str:
    """The node a daemon pod is for: its nodeName once bound, else its affinity's metadata.name."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    terms = (
        (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution"))
        or {}
    ).get("nodeSelectorTerms") or []
    for term in terms:
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("values"):
                return str(f["values"][0])
    return ""


class DaemonSetController(Controller):
    name = "daemonset"
    kind = "DaemonSet"
    watches = ("Pod", "Node")
    _runs: dict[tuple[str, Any, str, str], bool]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._runs = {}

    def on_event(self, ev: Any) -> None:
        if ev.kind == "Node":  # a node came, went or changed: every DaemonSet looks again
            for ds in self.client.list(self.kind):
                self.dirty[key_of(ds)] = None
            return
        super().on_event(ev)

    def _should_run(self, ds: dict[str, Any], tspec: dict[str, Any], node: dict[str, Any]) -> bool:
        """``should_run``, remembered per DaemonSet generation and node resourceVersion: a sync looks
        at every node, and a DaemonSet is synced after each of its pods' changes."""
        meta, node_meta = ds["metadata"], node["metadata"]
        key = (meta["uid"], meta.get("generation", 1), node_meta["name"], node_meta.get("resourceVersion", ""))
        known = self._runs.get(key)
        if known is None:
            if len(self._runs) > MAX_REMEMBERED:
                self._runs.clear()
            known = self._runs[key] = should_run(tspec, node)
        return known

    def _revision(self, ds: dict[str, Any]) -> str:
        return template_hash(
            (ds.get("spec") or {}).get("template") or {}, (ds.get("status") or {}).get("collisionCount")
        )

    def reconcile(self, ds: dict[str, Any]) -> None:
        spec = ds.get("spec") or {}
        template = spec.get("template") or {}
        tspec = template.get("spec") or {}
        revision = self._revision(ds)
        if not ds["metadata"].get("deletionTimestamp"):
            self.sync_revision(ds, f"{ds['metadata']['name']}-{revision}")
        pods = [p for p in self.index.owned("Pod", ds["metadata"]["uid"]) if is_active(p)]
        by_node: dict[str, list[dict[str, Any]]] = {}
        for p in pods:
            by_node.setdefault(_node_of(p), []).append(p)
        nodes = self.client.list("Node")
        wanted = {n["metadata"]["name"] for n in nodes if self._should_run(ds, tspec, n)}
        deleting = not ds["metadata"].get("deletionTimestamp")
        if deleting:
            for node, have in by_node.items():
                extra = (
                    have
                    if node not in wanted
                    else sorted(have, key=lambda p: p["metadata"].get("creationTimestamp", ""))[1:]
                )
                for p in extra:
                    self._delete(ds, p)
            for node in sorted(wanted - set(by_node)):
                self._create(ds, template, revision, node)
            self._roll(ds, by_node, wanted, revision)
        self._status(ds, revision, wanted)

    def _create(self, ds: dict[str, Any], template: dict[str, Any], revision: str, node: str) -> None:
        pod = pod_from_template(template, ds)
        labels = pod["metadata"]["labels"]
        labels[REVISION_LABEL] = revision
        generation = (ds["metadata"].get("annotations") or {}).get(TEMPLATE_GENERATION)
        if generation is not None:  # daemon/util: CreatePodTemplate labels it when the set has one
            labels[GENERATION_LABEL] = generation
        spec = dict(pod["spec"])
        affinity = dict(spec.get("affinity") or {})
        node_affinity = dict(affinity.get("nodeAffinity") or {})
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
        }
        affinity["nodeAffinity"] = node_affinity
        spec["affinity"] = affinity
        spec["tolerations"] = daemon_tolerations(spec)
        pod["spec"] = spec
        self.create_pod(ds, pod)

    def _delete(self, ds: dict[str, Any], pod: dict[str, Any]) -> None:
        with contextlib.suppress(ApiError):
            self.client.delete("Pod", *key_of(pod), uid=pod["metadata"]["uid"])
            self.recorder.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")

    def _roll(
        self, ds: dict[str, Any], by_node: dict[str, list[dict[str, Any]]], wanted: set[str], revision: str
    ) -> None:
        """``rollingUpdate`` (maxSurge 0): old pods are deleted while fewer than maxUnavailable
        of the wanted nodes lack an available pod; OnDelete leaves them."""
        strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        max_unavailable = scaled_value(
            (strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1), len(wanted), round_up=True
        )
        max_unavailable = max(max_unavailable, 1) if wanted else 0
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        now = self.client.clock.now()
        unavailable = sum(
            1 for n in wanted if not any(available_in(p, min_ready, now) == 0 for p in by_node.get(n, []))
        )
        generation = (ds["metadata"].get("annotations") or {}).get(TEMPLATE_GENERATION)
        old = [p for n in sorted(wanted) for p in by_node.get(n, []) if not is_pod_updated(p, revision, generation)]
        # unavailable old pods first: replacing them costs no availability
        old.sort(key=lambda p: available_in(p, min_ready, now) == 0)
        for p in old:
            healthy = available_in(p, min_ready, now) == 0
            if healthy and unavailable >= max_unavailable:
                break
            self._delete(ds, p)
            if healthy:
                unavailable += 1

    def _status(self, ds: dict[str, Any], revision: str, wanted: set[str]) -> None:
        pods = [p for p in self.index.owned("Pod", ds["metadata"]["uid"]) if is_active(p)]
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        scheduled = {(p.get("spec") or {}).get("nodeName") for p in pods if (p.get("spec") or {}).get("nodeName")}
        on_wanted = [p for p in pods if _node_of(p) in wanted]
        ready, available = self.availability(key_of(ds), on_wanted, min_ready)
        updated = sum(1 for p in on_wanted if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == revision)
        status = dict(ds.get("status") or {})
        status.update(
            currentNumberScheduled=len({n for n in scheduled if n in wanted}),
            numberMisscheduled=len({n for n in scheduled if n not in wanted}),
            desiredNumberScheduled=len(wanted),
            numberReady=ready,
            observedGeneration=ds["metadata"].get("generation", 1),
            updatedNumberScheduled=updated,
            numberAvailable=available,
            numberUnavailable=max(0, len(wanted) - available),
        )
        for k in ("updatedNumberScheduled", "numberAvailable", "numberUnavailable"):
            if not status.get(k):
                status.pop(k, None)
        write_status(self.client, self.kind, ds, status)
