"""``ObjectClient``: what kube-controller-manager's controllers ask of the API server (client-go's
typed clients and shared informers, reduced to what they use), and ``StoreObjects``, its
in-process implementation over the embedded Store.

Reads come from the informer cache (here the Store itself); writes go through the Store's
admission chain exactly as an HTTP write would, so a pod a ReplicaSet makes is defaulted and
validated like one ``kubectl create`` makes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from kubesched.api.watch import Watch
from kubesched.clock import Clock
from kubesched.cluster.store import Store


class ObjectClient(Protocol):
    clock: Clock

    @property
    def revision(self) -> int:
        """The latest resourceVersion the cache has seen (client-go's LastSyncResourceVersion):
        it moves whenever anything was written."""
        ...

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The cached object, or None."""
        ...

    def list(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]: ...

    def watch(self, kinds: Iterable[str], notify: Callable[[], None] | None = None) -> Watch:
        """Every change of these kinds from now on."""
        ...

    def create(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]: ...

    def update(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """``Update`` (and ``UpdateStatus``): ``obj`` as last seen, else a 409 Conflict."""
        ...

    def patch(
        self, kind: str, namespace: str, name: str, fn: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        """A patch computed from the stored object (no conflict window), as a merge patch is."""
        ...

    def delete(
        self,
        kind: str,
        namespace: str,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        propagation: str | None = None,
    ) -> None:
        """``Delete`` with DeleteOptions: a UID precondition and a propagationPolicy."""
        ...


class StoreObjects:
    """ObjectClient over the embedded Store (no serialization, no network)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.clock: Clock = store.clock

    @property
    def revision(self) -> int:
        return self.store.resource_version

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.store.try_get(kind, namespace, name)

    def list(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.store.list(kind, namespace)[0]

    def watch(self, kinds: Iterable[str], notify: Callable[[], None] | None = None) -> Watch:
        return self.store.watch(list(kinds), notify=notify)

    def create(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        return self.store.create(kind, obj)

    def update(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        return self.store.update(kind, obj)

    def patch(
        self, kind: str, namespace: str, name: str, fn: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        return self.store.mutate(kind, namespace, name, fn)

    def delete(
        self,
        kind: str,
        namespace: str,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        propagation: str | None = None,
    ) -> None:
        self.store.delete(kind, namespace, name, grace_period_seconds, uid=uid, propagation=propagation)
