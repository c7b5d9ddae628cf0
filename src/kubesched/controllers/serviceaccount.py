"""The service account controller (``pkg/controller/serviceaccount``): every active namespace has
the ``default`` ServiceAccount, created when the namespace appears or the account is deleted."""

from __future__ import annotations

from collections.abc import Callable

from kubesched.api.errors import AlreadyExists, Forbidden
from kubesched.api.watch import WatchEvent
from kubesched.client.object_client import ObjectClient
from kubesched.controllers.workqueue import Retries
from kubesched.health import LoopHealth, describe

DEFAULT_ACCOUNTS = ("default",)


class ServiceAccountsController:
    """A loop of the controller manager: namespaces seen since the last run get their accounts."""

    def __init__(
        self, client: ObjectClient, wake: Callable[[], None] | None = None, health: LoopHealth | None = None
    ) -> None:
        self.client = client
        self._dirty: set[str] = {ns["metadata"]["name"] for ns in client.list("Namespace")}
        self._retries = Retries(client, "serviceaccount-controller", self._dirty.add, wake or (lambda: None), health)

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "Namespace" and ev.type != "DELETED":
            self._dirty.add(ev.obj["metadata"]["name"])
        elif ev.kind == "ServiceAccount" and ev.type == "DELETED":
            self._dirty.add((ev.obj.get("metadata") or {}).get("namespace") or "default")

    def run(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for name in sorted(dirty):
            self._retries.attempt(name, describe("Namespace", name), self._sync)

    def _sync(self, name: str) -> None:
        ns = self.client.get("Namespace", "", name)
        if ns is None or (ns.get("status") or {}).get("phase") == "Terminating":
            return  # upstream skips namespaces that are going away
        for account in DEFAULT_ACCOUNTS:
            if self.client.get("ServiceAccount", name, account) is not None:
                continue
            body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": name}}
            try:
                self.client.create("ServiceAccount", body)
            except (AlreadyExists, Forbidden):
                continue  # created meanwhile, or the namespace began terminating (NamespaceLifecycle)
