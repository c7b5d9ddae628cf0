"""DynamicResources' queueing hints (``isSchedulableAfterClaimChange``,
``isSchedulableAfterPodChange``) and the events it registers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.pod import PodInfo
from kubesched.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.interface import (
    EnqueueExtensions,
)
from kubesched.scheduler.plugins.dynamicresources.claims import (
    ClaimMissing,
    resource_claims,
)
from kubesched.scheduler.plugins.dynamicresources.state import (
    DEVICE_CLASS,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    STATE_KEY,
)


class ClaimQueueing(EnqueueExtensions):
    """The events that may make a pod DynamicResources rejected schedulable, with their hints."""

    def _pod_claims(self, pod: PodInfo) -> list[Mapping[str, Any]]:
        raise NotImplementedError

    def _claim_refs(self, pod: PodInfo) -> set[str]:
        """The names of the claims the pod references, as far as they are known (kept on the
        PodInfo: a new version of the pod is a new PodInfo)."""
        cached = pod.extra.get(STATE_KEY)
        if cached is not None and cached[0] is pod.obj:  # ``extra`` is shared by evolve()d versions
            return cached[1]
        names: set[str] = set()
        statuses = {
            s.get("name"): s.get("resourceClaimName")
            for s in (pod.obj.get("status") or {}).get("resourceClaimStatuses") or []
            if isinstance(s, Mapping)
        }
        for entry in resource_claims(pod):
            if isinstance(entry, Mapping):
                name = entry.get("resourceClaimName") or statuses.get(entry.get("name"))
                if name:
                    names.add(str(name))
        pod.extra[STATE_KEY] = (pod.obj, names)
        return names

    def _after_claim_change(self, pod: PodInfo, old: Any, new: Any) -> bool:
        """``isSchedulableAfterClaimChange``: a claim of the pod's created or with a new status,
        or any claim deallocated (devices freed), once every claim of the pod exists."""
        if not isinstance(new, Mapping):
            return True
        meta = new.get("metadata") or {}
        deallocated = (
            isinstance(old, Mapping)
            and bool((old.get("status") or {}).get("allocation"))
            and not (new.get("status") or {}).get("allocation")
        )
        uses = meta.get("namespace") == pod.namespace and meta.get("name") in self._claim_refs(pod)
        if not deallocated and not uses:
            return False  # QueueSkip: an unrelated claim
        try:
            self._pod_claims(pod)
        except ClaimMissing:
            return False
        if deallocated or old is None:
            return True
        return (old.get("status") or {}) != (new.get("status") or {})

    def _after_pod_change(self, pod: PodInfo, _old: Any, new: Any) -> bool:
        """``isSchedulableAfterPodChange``: the pod's own update gave it its generated claims."""
        if not isinstance(new, PodInfo) or new.uid != pod.uid:
            return False
        try:
            self._pod_claims(new)
        except ClaimMissing:
            return False
        return True

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A claim's availability may depend on node labels (ResourceSlices' node selectors);
        # with queueing hints on, UpdateNodeTaint is not needed (v1.36's EventsToRegister).
        # Claims, classes and slices: any add or update may make the pod schedulable.
        return [
            # (allocatable too: a node's extended resources decide what is left to DRA)
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE)
            ),
            ClusterEventWithHint(
                ClusterEvent(RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE), self._after_claim_change
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM), self._after_pod_change
            ),
            ClusterEventWithHint(ClusterEvent(DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)),
        ]
