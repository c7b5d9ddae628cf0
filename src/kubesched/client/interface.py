"""``ClusterClient``: what kube-scheduler asks of the API server.

Reads (``list_and_watch``, ``list``, ``get``) are served from informer caches as upstream's
listers are; writes are the few calls kube-scheduler makes: pods/binding, the pod status patch
(PodScheduled condition, nominatedNodeName, DisruptionTarget), deletes with a UID
precondition, pods/eviction and events.k8s.io/v1 Events.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from kubesched.api.watch import Watch


class ClusterClient(Protocol):
    def watch_custom(self, kind: str, group: str, version: str, plural: str) -> None:
        """Keep an informer of a custom resource (one a plugin registers events for) under the
        Store kind ``kind``, before ``list_and_watch`` names it (the dynamic informer factory)."""
        ...

    def list_and_watch(
        self, kinds: Iterable[str], field_selectors: Mapping[str, str] | None = None
    ) -> tuple[dict[str, list[dict[str, Any]]], Watch]:
        """The current objects of each kind and a Watch that delivers every change after them;
        a kind in ``field_selectors`` is listed and watched with that selector (an informer's
        tweaked list options): objects leaving the selection arrive as deletions."""
        ...

    def list(self, kind: str, namespace: str | None = None) -> tuple[list[dict[str, Any]], int]: ...

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]: ...

    def bind(
        self, namespace: str, name: str, uid: str, node_name: str, annotations: dict[str, str] | None = None
    ) -> None:
        """POST pods/binding; ``annotations`` ride in the Binding's metadata, which the API
        server copies onto the pod with the node (``setPodNodeAndMetadata``)."""
        ...

    def bind_later(self, namespace: str, name: str, uid: str, node_name: str) -> concurrent.futures.Future[None] | None:
        """The same POST sent without waiting for it: a future that holds its answer (an ApiError
        when refused or unanswered), or None where the client binds only by ``bind`` (in process:
        a function call)."""
        ...

    def patch_pod_status(
        self, namespace: str, name: str, condition: dict[str, Any] | None, nominated_node_name: str | None
    ) -> None:
        """``util.PatchPodStatus``: the condition (merged by type; stamped with the current time
        unless it carries its lastTransitionTime) and status.nominatedNodeName ("" clears it)."""
        ...

    def annotate_pod(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        """A merge patch of the pod's ``metadata.annotations``, as a plugin records what it decided
        on the pod (the GPU-sharing plugins' device index)."""
        ...

    def delete(
        self, kind: str, namespace: str, name: str, grace_period_seconds: int | None = None, *, uid: str | None = None
    ) -> None: ...

    def evict(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> None: ...

    def update_claim_status(self, claim: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        """``UpdateStatus`` of a ResourceClaim: ``claim`` as last seen (its resourceVersion must
        still be current, else a 409 Conflict) with ``status`` in place of its own."""
        ...

    def update_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        """``Update`` of a ResourceClaim (its metadata, here the finalizers): ``claim`` as last
        seen, else a 409 Conflict; returns it as stored."""
        ...

    def settle(self, seconds: float) -> bool:
        """Give the cluster's controllers up to ``seconds`` to act (VolumeBinding's PreBind waits
        for the PV controller this way): a remote cluster is waited for; the embedded one runs
        its controllers at once. False when nothing more can change by waiting."""
        ...

    def update_volume(self, pv: dict[str, Any]) -> dict[str, Any]:
        """``PersistentVolumes().Update``: ``pv`` as last seen, else a 409 Conflict; returns it
        as stored (VolumeBinding's PreBind binds a PV to its claim this way)."""
        ...

    def update_volume_claim(self, pvc: dict[str, Any]) -> dict[str, Any]:
        """``PersistentVolumeClaims().Update`` (VolumeBinding's PreBind sets the selected-node
        annotation); as ``update_volume``."""
        ...

    def create_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        """Create a ResourceClaim (the special claim of extended resources backed by DRA, its name
        generated); returns it as stored."""
        ...

    def delete_claim(self, namespace: str, name: str) -> None: ...

    def patch_pod_group_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        """A merge patch of a scheduling.k8s.io/v1beta1 PodGroup's status (its conditions), as
        ``util.PatchPodGroupStatus`` writes them."""
        ...

    def patch_pod_status_fields(self, namespace: str, name: str, fields: dict[str, Any]) -> None:
        """A merge patch of fields of the pod's status (``extendedResourceClaimStatus``)."""
        ...

    def record_event(
        self,
        type_: str,
        reason: str,
        action: str,
        regarding: dict[str, Any],
        message: str,
        related: dict[str, Any] | None = None,
    ) -> None:
        """An events.k8s.io/v1 Event, written as client-go's broadcaster writes it: queued, with
        repeats folded into a series (``client/eventseries.py``)."""
        ...
