"""DefaultBinder (Bind): POST the pods/binding subresource through the cluster client, with the
scheduling results as the Binding's annotations when they are written on pods. ``send`` is the
same POST handed to the client without waiting for it (``Framework.send_bind``)."""

from __future__ import annotations

import concurrent.futures

from kubesched.api.errors import ApiError
from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import BindPlugin
from kubesched.framework.status import Status


class DefaultBinder(BindPlugin):
    name = "DefaultBinder"

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        assert self.handle is not None
        rec = state.results
        annotations = None
        if rec is not None and rec.write:
            # the scheduling results ride in the Binding (one write): its own success included,
            # as the write happens only if the binding does
            rec.bind[self.name] = "success"
            annotations = rec.pod_annotations(pod.obj["metadata"].get("annotations"))
        try:
            self.handle.client.bind(pod.namespace, pod.name, pod.uid, node_name, annotations)
        except ApiError as exc:
            return Status.error(exc.message)
        if rec is not None and annotations is not None:
            rec.written = True
        return None

    def send(self, state: CycleState, pod: PodInfo, node_name: str) -> concurrent.futures.Future[None] | None:
        """The binding sent, its answer to come (an ApiError when refused), for a cycle without
        results to write; None where the client binds only by waiting."""
        assert self.handle is not None and state.results is None
        return self.handle.client.bind_later(pod.namespace, pod.name, pod.uid, node_name)
