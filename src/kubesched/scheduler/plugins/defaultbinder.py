"""DefaultBinder (Bind): POST the pods/binding subresource through the cluster client."""

from __future__ import annotations

from kubesched.api.errors import ApiError
from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import BindPlugin
from kubesched.framework.status import Status


class DefaultBinder(BindPlugin):
    name = "DefaultBinder"

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        assert self.handle is not None
        try:
            self.handle.client.bind(pod.namespace, pod.name, pod.uid, node_name)
        except ApiError as exc:
            return Status.error(exc.message)
        return None
