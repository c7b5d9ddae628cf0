"""The core/v1 events kube-controller-manager's controllers record (client-go ``tools/record``):
``SuccessfulCreate``, ``ScalingReplicaSet``, ``Completed``... what ``kubectl describe`` and
``kubectl get events`` show beside the scheduler's."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.client.object_client import ObjectClient
from kubesched.clock import rfc3339


class Recorder:
    """``record.EventRecorder`` for one component (``replicaset-controller``...)."""

    def __init__(self, client: ObjectClient, component: str) -> None:
        self.client = client
        self.component = component

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        now = self.client.clock.now()
        stamp = rfc3339(now)
        # record.makeEvent: "<object name>.<unix nanoseconds in hex>"
        name = f"{meta.get('name', '')}.{time.time_ns():x}"
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", ""),
                "kind": obj.get("kind", ""),
                "name": meta.get("name", ""),
                "namespace": namespace,
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": reason,
            "message": message,
            "source": {"component": self.component},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": type_,
            "eventTime": None,
            "reportingComponent": self.component,
            "reportingInstance": "",
        }
        with contextlib.suppress(ApiError):  # events are best effort, as the broadcaster's are
            self.client.create("Event", event)
