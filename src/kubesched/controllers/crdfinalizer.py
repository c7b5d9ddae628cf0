"""The CRD finalizer's loop (apiextensions-apiserver's ``controller/finalizer``, which runs in
kube-apiserver's process): a deleted CustomResourceDefinition whose custom resources wait on
finalizers of their own is synced again every 5 seconds, as upstream polls, and goes once the
last of them is gone (``apiextensions/cleanup.py`` does the work; the API server's delete does
the first sync at once)."""

from __future__ import annotations

from collections.abc import Callable

from kubesched.api.watch import WatchEvent
from kubesched.apiextensions import cleanup
from kubesched.apiextensions.definitions import KIND
from kubesched.client.object_client import ObjectClient
from kubesched.controllers.workqueue import Later
from kubesched.health import LoopHealth, describe

POLL = 5.0  # seconds between syncs of a CRD waiting for its custom resources (crd_finalizer.go)


class CRDFinalizer:
    """Syncs each deleted CRD until it is gone."""

    name = "crd-finalizer"

    def __init__(self, client: ObjectClient, wake: Callable[[], None], health: LoopHealth) -> None:
        self.client = client
        self.health = health
        self._due: set[str] = set()
        self._scan = True  # the first sync finds the CRDs deleted before this process started
        self._later = Later(client, lambda name: self._due.add(name), wake)
        health.register(self.name)

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == KIND and ev.type != "DELETED" and (ev.obj.get("metadata") or {}).get("deletionTimestamp"):
            self._due.add(ev.obj["metadata"]["name"])

    def run(self) -> None:
        if self._scan:
            self._scan = False
            self._due.update(
                c["metadata"]["name"] for c in self.client.list(KIND) if c["metadata"].get("deletionTimestamp")
            )
        due, self._due = self._due, set()
        for name in sorted(due):
            try:
                gone = cleanup.finalize(self.client, name, self.client.clock.now())
            except Exception as exc:
                self.health.error(self.name, describe(KIND, name), exc)
                gone = False
            if not gone:
                self._later.at(name, self.client.clock.now() + POLL)
        self.health.ok(self.name)
