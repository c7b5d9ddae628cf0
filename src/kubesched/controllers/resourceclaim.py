"""kube-controller-manager's resourceclaim controller (``pkg/controller/resourceclaim``), for the
embedded cluster and ``simulate``: a pod's claims from templates are created (owned by the pod,
recorded in ``status.resourceClaimStatuses``), and released when the pod is gone or done: the
pod leaves ``reservedFor``, a claim generated for it is deleted, and a claim reserved for nobody
is deallocated.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Mapping
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.names import generate_name
from kubesched.api.watch import DELETED
from kubesched.client.object_client import ObjectClient

POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


FINALIZER = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer, set by the scheduler


def _without_finalizer(claim: dict[str, Any]) -> dict[str, Any]:
    meta = claim.get("metadata") or {}
    finalizers = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
    new_meta = {k: v for k, v in meta.items() if k != "finalizers"}
    if finalizers:
        new_meta["finalizers"] = finalizers
    return {**claim, "metadata": new_meta}


def _done(pod: Mapping[str, Any]) -> bool:
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    return bool(meta.get("deletionTimestamp")) or status.get("phase") in ("Succeeded", "Failed")


def _owned_by(claim: Mapping[str, Any], uid: str) -> bool:
    return any(
        ref.get("uid") == uid and ref.get("controller")
        for ref in (claim.get("metadata") or {}).get("ownerReferences") or []
    )


class ResourceClaimController:
    """``sync`` handles the pod and claim changes seen since the last call."""

    def __init__(self, client: ObjectClient, notify: Callable[[], None] | None = None) -> None:
        self.client = client
        self._watch = client.watch(["Pod", "ResourceClaimTemplate", "ResourceClaim"], notify)
        for pod in client.list("Pod"):
            self._sync_pod(pod)

    def sync(self) -> None:
        for ev in self._watch.drain():
            if ev.kind == "ResourceClaim":
                if ev.type != DELETED:
                    self._sync_claim(ev.obj)
            elif ev.kind == "ResourceClaimTemplate":  # pods waiting for this template
                ns = (ev.obj.get("metadata") or {}).get("namespace") or "default"
                for pod in self.client.list("Pod", ns):
                    self._sync_pod(pod)
            elif ev.type == DELETED:
                self._release(ev.obj)
            else:
                self._sync_pod(ev.obj)

    def _sync_claim(self, claim: dict[str, Any]) -> None:
        """``syncClaim``: a deleted claim reserved for nobody is deallocated and loses the
        delete-protection finalizer, which unblocks its removal."""
        meta, status = claim.get("metadata") or {}, claim.get("status") or {}
        if not meta.get("deletionTimestamp") or status.get("reservedFor"):
            return
        if FINALIZER not in (meta.get("finalizers") or []):
            return

        def unblock(o: dict[str, Any]) -> dict[str, Any]:
            rest = {k: v for k, v in (o.get("status") or {}).items() if k != "allocation"}
            return {**_without_finalizer(o), "status": rest}

        with contextlib.suppress(ApiError):
            self.client.patch("ResourceClaim", meta.get("namespace") or "default", meta["name"], unblock)

    def _sync_pod(self, pod: dict[str, Any]) -> None:
        spec = pod.get("spec") or {}
        entries = [e for e in spec.get("resourceClaims") or [] if isinstance(e, Mapping)]
        if not entries:
            return
        if _done(pod):
            self._release(pod)
            return
        meta = pod["metadata"]
        ns = meta.get("namespace") or "default"
        statuses = list((pod.get("status") or {}).get("resourceClaimStatuses") or [])
        known = {s.get("name") for s in statuses}
        added = False
        for entry in entries:
            template_name = entry.get("resourceClaimTemplateName")
            if not template_name or entry.get("name") in known:
                continue
            template = self.client.get("ResourceClaimTemplate", ns, str(template_name))
            if template is None:
                continue  # the pod waits (DynamicResources' PreEnqueue) until the template exists
            claim = self._claim_for(pod, entry, template)
            try:
                created = self.client.create("ResourceClaim", claim)
            except ApiError:
                continue
            statuses.append({"name": entry["name"], "resourceClaimName": created["metadata"]["name"]})
            added = True
        if added:

            def record(o: dict[str, Any]) -> dict[str, Any]:
                return {**o, "status": {**(o.get("status") or {}), "resourceClaimStatuses": statuses}}

            self.client.patch("Pod", ns, meta["name"], record)

    def _claim_for(self, pod: dict[str, Any], entry: Mapping[str, Any], template: dict[str, Any]) -> dict[str, Any]:
        """The claim a template makes for a pod: ``<pod>-<claim>-<5 characters>``, owned by the pod."""
        meta = pod["metadata"]
        tspec = template.get("spec") or {}
        tmeta = tspec.get("metadata") or {}
        rng = random.Random(f"{meta.get('uid')}/{entry['name']}")  # the same name for the same pod: deterministic
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "name": generate_name(f"{meta['name']}-{entry['name']}-", rng),
                "namespace": meta.get("namespace") or "default",
                "labels": dict(tmeta.get("labels") or {}),
                "annotations": {**(tmeta.get("annotations") or {}), POD_CLAIM_NAME_ANNOTATION: entry["name"]},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": meta["name"],
                        "uid": meta.get("uid"),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": tspec.get("spec") or {},
        }

    def _release(self, pod: Mapping[str, Any]) -> None:
        """The pod no longer needs its claims (gone, terminating or done): it leaves their
        ``reservedFor``; a claim generated for it is deleted (as the garbage collector would
        with its owner gone); a claim then reserved for nobody is deallocated."""
        meta = pod.get("metadata") or {}
        ns, uid = meta.get("namespace") or "default", meta.get("uid")
        for claim in self.client.list("ResourceClaim", ns):
            name, status = claim["metadata"]["name"], claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            if any(r.get("uid") == uid for r in reserved):
                rest = [r for r in reserved if r.get("uid") != uid]

                def release(o: dict[str, Any], rest: list[Any] = rest) -> dict[str, Any]:
                    new_status = {**(o.get("status") or {}), "reservedFor": rest}
                    if not rest:  # structured parameters: deallocated as soon as nobody uses it
                        new_status.pop("reservedFor")
                        new_status.pop("allocation", None)
                        return {**_without_finalizer(o), "status": new_status}
                    return {**o, "status": new_status}

                with contextlib.suppress(ApiError):  # an update first: the scheduler's hint sees the deallocation
                    self.client.patch("ResourceClaim", ns, name, release)
            if _owned_by(claim, str(uid)):
                with contextlib.suppress(ApiError):  # already gone
                    self.client.delete("ResourceClaim", ns, name)
