"""The StatefulSet controller (``pkg/controller/statefulset``): pods ``<name>-<ordinal>`` with
stable identity (hostname, subdomain, the pod-name and pod-index labels), one claim per
``volumeClaimTemplates`` entry and ordinal (``<template>-<name>-<ordinal>``, created before
its pod so the volume plugins place the pair), OrderedReady (one ordinal at a time, each
Running and Ready before the next; scale-down from the highest ordinal) or Parallel
management, failed pods replaced, a RollingUpdate from the highest ordinal down to the
partition, and the claim retention policy."""

from __future__ import annotations

import contextlib
from typing import Any

from kubesched.api.errors import AlreadyExists, ApiError
from kubesched.controllers.base import (
    Controller,
    available_in,
    is_ready,
    is_terminating,
    key_of,
    owner_reference,
    pod_from_template,
    template_hash,
    write_status,
)

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"


def _ordinal(sts_name: str, pod: dict[str, Any]) -> int | None:
    name = (pod.get("metadata") or {}).get("name") or ""
    prefix, _, tail = name.rpartition("-")
    if prefix != sts_name or not tail.isdigit():
        return None
    return int(tail)


def claim_name(template: dict[str, Any], sts: dict[str, Any], ordinal: int) -> str:
    return f"{(template.get('metadata') or {}).get('name', '')}-{sts['metadata']['name']}-{ordinal}"


class StatefulSetController(Controller):
    name = "statefulset"
    kind = "StatefulSet"
    watches = ("Pod",)

    def _revision(self, sts: dict[str, Any]) -> str:
        spec = sts.get("spec") or {}
        h = template_hash(spec.get("template") or {}, (sts.get("status") or {}).get("collisionCount"))
        return f"{sts['metadata']['name']}-{h}"

    def reconcile(self, sts: dict[str, Any]) -> None:
        spec = sts.get("spec") or {}
        name = sts["metadata"]["name"]
        replicas = int(spec.get("replicas", 1))
        start = int((spec.get("ordinals") or {}).get("start") or 0)
        update_revision = self._revision(sts)
        if not sts["metadata"].get("deletionTimestamp"):
            self.sync_revision(sts, update_revision)
        pods: dict[int, dict[str, Any]] = {}
        for p in self.index.owned("Pod", sts["metadata"]["uid"]):
            i = _ordinal(name, p)
            if i is not None:
                pods[i] = p
        if not sts["metadata"].get("deletionTimestamp"):
            self._manage(sts, pods, range(start, start + replicas), update_revision)
            pods = {}
            for p in self.index.owned("Pod", sts["metadata"]["uid"]):
                i = _ordinal(name, p)
                if i is not None:
                    pods[i] = p
        self._status(sts, pods, range(start, start + replicas), update_revision)

    def _manage(self, sts: dict[str, Any], pods: dict[int, dict[str, Any]], wanted: range, revision: str) -> None:
        spec = sts.get("spec") or {}
        parallel = spec.get("podManagementPolicy") == "Parallel"
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = self.client.clock.now()
        # failed pods are deleted, to be recreated with the same identity
        for failed in list(pods.values()):
            if (failed.get("status") or {}).get("phase") == "Failed" and not is_terminating(failed):
                self._delete(sts, failed)
        for i in wanted:
            p = pods.get(i)
            if p is None:
                self._create(sts, i, revision)
                if not parallel:
                    return
                continue
            if not parallel and (is_terminating(p) or not is_ready(p)):
                return  # OrderedReady: wait for this one before the next
            if not parallel and available_in(p, min_ready, now) not in (0, 0.0):
                left = available_in(p, min_ready, now)
                if left is not None:
                    self.requeue_after(key_of(sts), left)
                return
        # scale down: ordinals outside the wanted range, the highest first
        extra = sorted((i for i in pods if i not in wanted), reverse=True)
        for i in extra:
            p = pods[i]
            if is_terminating(p):
                if not parallel:
                    return
                continue
            self._delete(sts, p)
            self._retire_claims(sts, i)
            if not parallel:
                return
        self._update(sts, pods, wanted, revision, parallel)

    def _update(
        self, sts: dict[str, Any], pods: dict[int, dict[str, Any]], wanted: range, revision: str, parallel: bool
    ) -> None:
        """RollingUpdate: from the highest ordinal down to the partition, one pod at a time (all
        others Running and Ready); OnDelete leaves the pods to their users."""
        strategy = (sts.get("spec") or {}).get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        current = [pods[i] for i in wanted if i in pods]
        if any(is_terminating(p) or not is_ready(p) for p in current):
            return
        for i in sorted(wanted, reverse=True):
            if i < wanted.start + partition:
                break
            p = pods.get(i)
            if p is not None and (p["metadata"].get("labels") or {}).get(REVISION_LABEL) != revision:
                self._delete(sts, p)
                return

    def _create(self, sts: dict[str, Any], ordinal: int, revision: str) -> None:
        spec = sts.get("spec") or {}
        name = sts["metadata"]["name"]
        pod_name = f"{name}-{ordinal}"
        pod = pod_from_template(spec.get("template") or {}, sts, name=pod_name)
        labels = pod["metadata"]["labels"]
        labels[POD_NAME_LABEL] = pod_name
        labels[POD_INDEX_LABEL] = str(ordinal)
        labels[REVISION_LABEL] = revision
        pspec = dict(pod["spec"])
        pspec["hostname"] = pod_name
        if spec.get("serviceName"):
            pspec["subdomain"] = spec["serviceName"]
        volumes = [v for v in pspec.get("volumes") or []]
        for template in spec.get("volumeClaimTemplates") or []:
            claim = claim_name(template, sts, ordinal)
            if not self._ensure_claim(sts, template, claim):
                return
            vname = (template.get("metadata") or {}).get("name")
            volumes = [v for v in volumes if v.get("name") != vname]
            volumes.append({"name": vname, "persistentVolumeClaim": {"claimName": claim}})
        if volumes:
            pspec["volumes"] = volumes
        pod["spec"] = pspec
        try:
            created = self.client.create("Pod", pod)
        except AlreadyExists:
            return
        except ApiError as err:
            self.recorder.event(
                sts, "Warning", "FailedCreate", f"create Pod {pod_name} in StatefulSet {name} failed error: {err}"
            )
            return
        self.index.apply_created("Pod", created)
        self.recorder.event(
            sts, "Normal", "SuccessfulCreate", f"create Pod {pod_name} in StatefulSet {name} successful"
        )

    def _ensure_claim(self, sts: dict[str, Any], template: dict[str, Any], claim: str) -> bool:
        ns = sts["metadata"].get("namespace") or "default"
        existing = self.client.get("PersistentVolumeClaim", ns, claim)
        if existing is not None:
            return not is_terminating(existing)
        tmeta = template.get("metadata") or {}
        selector_labels = ((sts.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        meta: dict[str, Any] = {
            "name": claim,
            "namespace": ns,
            "labels": {**(tmeta.get("labels") or {}), **selector_labels},
        }
        if tmeta.get("annotations"):
            meta["annotations"] = dict(tmeta["annotations"])
        policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
        if policy.get("whenDeleted") == "Delete":
            meta["ownerReferences"] = [owner_reference(sts)]
        pvc = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta,
            "spec": dict(template.get("spec") or {}),
        }
        try:
            self.client.create("PersistentVolumeClaim", pvc)
        except AlreadyExists:
            return True
        except ApiError as err:
            self.recorder.event(
                sts,
                "Warning",
                "FailedCreate",
                f"create Claim {claim} for StatefulSet {sts['metadata']['name']} failed error: {err}",
            )
            return False
        self.recorder.event(
            sts,
            "Normal",
            "SuccessfulCreate",
            f"create Claim {claim} Pod {sts['metadata']['name']}-{claim.rsplit('-', 1)[1]} "
            f"in StatefulSet {sts['metadata']['name']} success",
        )
        return True

    def _retire_claims(self, sts: dict[str, Any], ordinal: int) -> None:
        """whenScaled: Delete removes a scaled-down ordinal's claims."""
        policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
        if policy.get("whenScaled") != "Delete":
            return
        ns = sts["metadata"].get("namespace") or "default"
        for template in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
            with contextlib.suppress(ApiError):
                self.client.delete("PersistentVolumeClaim", ns, claim_name(template, sts, ordinal))

    def _delete(self, sts: dict[str, Any], pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        with contextlib.suppress(ApiError):
            self.client.delete("Pod", *key_of(pod), uid=pod["metadata"]["uid"])
            self.recorder.event(
                sts,
                "Normal",
                "SuccessfulDelete",
                f"delete Pod {name} in StatefulSet {sts['metadata']['name']} successful",
            )

    def _status(self, sts: dict[str, Any], pods: dict[int, dict[str, Any]], wanted: range, revision: str) -> None:
        spec = sts.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = self.client.clock.now()
        live = [p for p in pods.values() if not is_terminating(p)]
        waits = [w for p in live if (w := available_in(p, min_ready, now))]
        if waits:
            self.requeue_after(key_of(sts), min(waits))
        updated = [p for p in live if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == revision]
        old_status = sts.get("status") or {}
        current_revision = old_status.get("currentRevision") or revision
        if len(updated) == len(live) == len(wanted) and all(is_ready(p) for p in live):
            current_revision = revision  # the rollout is complete
        current = [p for p in live if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == current_revision]
        status = dict(old_status)
        status.update(
            observedGeneration=sts["metadata"].get("generation", 1),
            replicas=len(live),
            readyReplicas=sum(1 for p in live if is_ready(p)),
            currentReplicas=len(current),
            updatedReplicas=len(updated),
            availableReplicas=sum(1 for p in live if available_in(p, min_ready, now) == 0),
            currentRevision=current_revision,
            updateRevision=revision,
            collisionCount=int(old_status.get("collisionCount") or 0),
        )
        for k in ("readyReplicas", "currentReplicas", "updatedReplicas"):
            if not status.get(k):
                status.pop(k, None)
        write_status(self.client, self.kind, sts, status)
