"""The service account controller (``pkg/controller/serviceaccount``): every active namespace has
the ``default`` ServiceAccount, created when the namespace appears or the account is deleted."""

from __future__ import annotations

from kubesched.api.errors import ApiError
from kubesched.api.watch import WatchEvent
from kubesched.client.objects import ObjectClient

DEFAULT_ACCOUNTS = ("default",)


class ServiceAccountsController:
    """A loop of the controller manager: namespaces seen since the last run get their accounts."""

    def __init__(self, client: ObjectClient) -> None:
        self.client = client
        self._dirty: set[str] = {ns["metadata"]["name"] for ns in client.list("Namespace")}

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "Namespace" and ev.type != "DELETED":
            self._dirty.add(ev.obj["metadata"]["name"])
        elif ev.kind == "ServiceAccount" and ev.type == "DELETED":
            self._dirty.add((ev.obj.get("metadata") or {}).get("namespace") or "default")

    def run(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for name in sorted(dirty):
            ns = self.client.get("Namespace", "", name)
            if ns is None or (ns.get("status") or {}).get("phase") == "Terminating":
                continue  # upstream skips namespaces that are going away
            for account in DEFAULT_ACCOUNTS:
                if self.client.get("ServiceAccount", name, account) is not None:
                    continue
                body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": name}}
                try:
                    self.client.create("ServiceAccount", body)
                except ApiError:
                    continue  # created meanwhile, or the namespace began terminating
