"""The namespace controller (``pkg/controller/namespace/deletion``): a namespace being deleted is
Terminating while everything in it is deleted (pods gracefully, dependents in the background);
its status conditions say what remains; once it is empty the ``kubernetes`` finalizer is
removed from ``spec.finalizers`` and the namespace goes."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.watch import WatchEvent
from kubesched.client.object_client import ObjectClient
from kubesched.clock import parse_rfc3339, rfc3339
from kubesched.cluster.store import KNOWN_KINDS, is_namespaced, resource_name
from kubesched.controllers.workqueue import Later, Retries
from kubesched.health import LoopHealth

FINALIZER = "kubernetes"
# namespace_controller.go's namespaceDeletionGracePeriod: content is deleted this long after the
# namespace is, so that writes racing the deletion are seen (and ``kubectl delete -f`` of a
# namespace and its objects finds them still there)
DELETION_GRACE_PERIOD = 5.0


class NamespaceController:
    name = "namespace"

    def __init__(
        self,
        client: ObjectClient,
        kinds: list[str],
        wake: Callable[[], None] | None = None,
        grace: float = DELETION_GRACE_PERIOD,
        health: LoopHealth | None = None,
    ) -> None:
        self.client = client
        self.grace = grace
        self.kinds = [k for k in kinds if k in KNOWN_KINDS and is_namespaced(k)]
        self._dirty: dict[str, None] = {}
        self._later = Later(client, self._mark, wake or (lambda: None))
        self._retries = Retries(client, "namespace-controller", self._mark, wake or (lambda: None), health)
        for ns in client.list("Namespace"):
            if ns["metadata"].get("deletionTimestamp"):
                self._dirty[ns["metadata"]["name"]] = None

    def _mark(self, name: str) -> None:
        self._dirty[name] = None

    def on_event(self, ev: WatchEvent) -> None:
        meta = ev.obj.get("metadata") or {}
        if ev.kind == "Namespace":
            if meta.get("deletionTimestamp"):
                self._dirty[meta["name"]] = None
        elif ev.kind in self.kinds and meta.get("namespace"):
            ns = self.client.get("Namespace", "", meta["namespace"])
            if ns is not None and ns["metadata"].get("deletionTimestamp"):
                self._dirty[meta["namespace"]] = None

    def run(self) -> None:
        names, self._dirty = list(self._dirty), {}
        for name in names:
            self._retries.attempt(name, f"Namespace {name}", self._sync)

    def _sync(self, name: str) -> None:
        ns = self.client.get("Namespace", "", name)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        due = parse_rfc3339(ns["metadata"]["deletionTimestamp"]) + self.grace
        if self.client.clock.now() < due:
            self._later.at(name, due)
            return
        self._delete_contents(ns)

    def _delete_contents(self, ns: dict[str, Any]) -> None:
        name = ns["metadata"]["name"]
        remaining: dict[str, int] = {}
        finalizers: dict[str, int] = {}
        for kind in [*self.kinds, *self._custom_kinds()]:
            for obj in self.client.list(kind, name):
                meta = obj["metadata"]
                remaining[resource_name(kind)] = remaining.get(resource_name(kind), 0) + 1
                for f in meta.get("finalizers") or []:
                    finalizers[f] = finalizers.get(f, 0) + 1
                if not meta.get("deletionTimestamp"):
                    with contextlib.suppress(ApiError):
                        self.client.delete(kind, name, meta["name"], propagation="Background")
        if not remaining:
            self._finalize(name)
            return
        self._conditions(ns, remaining, finalizers)

    def _custom_kinds(self) -> list[str]:
        """The namespaced custom resources the CRDs serve (the deleter's discovery finds them)."""
        return [
            str(crd["metadata"]["name"])
            for crd in self.client.list("CustomResourceDefinition")
            if (crd.get("spec") or {}).get("scope") == "Namespaced"
        ]

    def _conditions(self, ns: dict[str, Any], remaining: dict[str, int], finalizers: dict[str, int]) -> None:
        """The deleter's status conditions (``updateNamespaceStatusFunc``), as ``kubectl describe
        namespace`` shows them while it terminates."""
        now = rfc3339(self.client.clock.now())
        left = ", ".join(f"{r} has {n} resource instances" for r, n in sorted(remaining.items()))
        fins = ", ".join(f"{f} in {n} resource instances" for f, n in sorted(finalizers.items()))
        wanted = [
            (
                "NamespaceDeletionDiscoveryFailure",
                "False",
                "ResourcesDiscovered",
                "All resources successfully discovered",
            ),
            (
                "NamespaceDeletionGroupVersionParsingFailure",
                "False",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed",
            ),
            (
                "NamespaceDeletionContentFailure",
                "False",
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization",
            ),
            ("NamespaceContentRemaining", "True", "SomeResourcesRemain", f"Some resources are remaining: {left}"),
            (
                "NamespaceFinalizersRemaining",
                "True" if fins else "False",
                "SomeFinalizersRemain" if fins else "ContentHasNoFinalizers",
                f"Some content in the namespace has finalizers remaining: {fins}"
                if fins
                else "All content-preserving finalizers finished",
            ),
        ]
        old = {c.get("type"): c for c in (ns.get("status") or {}).get("conditions") or []}
        conds = []
        for type_, status, reason, message in wanted:
            prev = old.get(type_)
            same = prev is not None and (prev.get("status"), prev.get("reason"), prev.get("message")) == (
                status,
                reason,
                message,
            )
            conds.append(
                prev
                if same
                else {"type": type_, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}
            )
        if conds == list(old.values()):
            return
        with contextlib.suppress(ApiError):
            self.client.patch(
                "Namespace",
                "",
                ns["metadata"]["name"],
                lambda o: {**o, "status": {**(o.get("status") or {}), "conditions": conds}},
            )

    def _finalize(self, name: str) -> None:
        """``PUT namespaces/{name}/finalize`` without our finalizer: the namespace is then gone."""

        def put(o: dict[str, Any]) -> dict[str, Any]:
            fins = [f for f in (o.get("spec") or {}).get("finalizers") or [] if f != FINALIZER]
            return {**o, "spec": {**(o.get("spec") or {}), "finalizers": fins}}

        with contextlib.suppress(ApiError):
            self.client.patch("Namespace", "", name, put)
