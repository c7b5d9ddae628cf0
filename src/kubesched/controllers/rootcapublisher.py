"""The root CA publisher (``pkg/controller/certificates/rootcacertpublisher``): every namespace
holds the ConfigMap ``kube-root-ca.crt`` with the API server's CA bundle under ``ca.crt``, put back
when it is deleted or changed."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kubesched.api.errors import AlreadyExists, Forbidden
from kubesched.api.watch import WatchEvent
from kubesched.client.object_client import ObjectClient
from kubesched.controllers.workqueue import Retries
from kubesched.health import LoopHealth, describe

NAME = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
    "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of "
    "Kubernetes clusters."
)


class RootCAPublisher:
    """A loop of the controller manager: namespaces seen since the last run get the ConfigMap."""

    def __init__(
        self,
        client: ObjectClient,
        root_ca: str,
        wake: Callable[[], None] | None = None,
        health: LoopHealth | None = None,
    ) -> None:
        self.client = client
        self.data = {"ca.crt": root_ca}
        self._dirty: set[str] = {ns["metadata"]["name"] for ns in client.list("Namespace")}
        name = "root-ca-certificate-publisher-controller"
        self._retries = Retries(client, name, self._dirty.add, wake or (lambda: None), health)

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "Namespace" and ev.type != "DELETED":
            self._dirty.add(ev.obj["metadata"]["name"])
        elif ev.kind == "ConfigMap" and (ev.obj.get("metadata") or {}).get("name") == NAME:
            self._dirty.add((ev.obj.get("metadata") or {}).get("namespace") or "default")

    def run(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for ns in sorted(dirty):
            self._retries.attempt(ns, describe("Namespace", ns), self._sync)

    def _sync(self, ns: str) -> None:
        namespace = self.client.get("Namespace", "", ns)
        if namespace is None or (namespace.get("status") or {}).get("phase") == "Terminating":
            return
        current = self.client.get("ConfigMap", ns, NAME)
        try:
            if current is None:
                meta = {"name": NAME, "namespace": ns, "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}}
                self.client.create(
                    "ConfigMap", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": self.data}
                )
            elif current.get("data") != self.data or not (current["metadata"].get("annotations") or {}).get(
                DESCRIPTION_ANNOTATION
            ):
                self.client.patch("ConfigMap", ns, NAME, functools.partial(_published, data=self.data))
        except (AlreadyExists, Forbidden):
            return  # made meanwhile, or the namespace began terminating: nothing to retry


def _published(obj: dict[str, Any], data: dict[str, str]) -> dict[str, Any]:
    meta = dict(obj["metadata"])
    meta["annotations"] = {**(meta.get("annotations") or {}), DESCRIPTION_ANNOTATION: DESCRIPTION}
    return {**obj, "metadata": meta, "data": data}
