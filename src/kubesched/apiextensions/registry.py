"""The custom resources a Store's established CRDs serve (apiextensions-apiserver's
``crdHandler`` and its storage map): looked up by path for requests and by Store kind for
admission, rebuilt whenever a CRD changes."""

from __future__ import annotations

from typing import Any, Protocol

from kubesched.api.kinds import BUILTIN_KINDS, builtin_kind
from kubesched.apiextensions.definitions import KIND, CustomResource, is_established, served


class Objects(Protocol):
    def list(self, kind: str, namespace: str | None = None) -> tuple[list[dict[str, Any]], int]: ...


class CustomResources:
    """The served custom resources, rebuilt from the CRDs when one of them changes."""

    def __init__(self, store: Objects) -> None:
        self.store = store
        self._seen: tuple[tuple[str, str], ...] | None = None
        self._by_path: dict[tuple[str, str, str], CustomResource] = {}
        self._by_kind: dict[str, CustomResource] = {}
        self._all: list[CustomResource] = []

    def _refresh(self) -> None:
        crds, _ = self.store.list(KIND)
        seen = tuple((str(c["metadata"].get("name")), str(c["metadata"].get("resourceVersion"))) for c in crds)
        if seen == self._seen:
            return
        by_path: dict[tuple[str, str, str], CustomResource] = {}
        by_kind: dict[str, CustomResource] = {}
        every: list[CustomResource] = []
        for crd in sorted(crds, key=lambda c: str(c["metadata"].get("name"))):
            if not is_established(crd):
                continue
            versions = served(crd)
            storage = next(
                (
                    v.get("name")
                    for v in (crd.get("spec") or {}).get("versions") or []
                    if isinstance(v, dict) and v.get("storage")
                ),
                None,
            )
            for cr in versions:
                r = cr.resource
                by_path[(r.group, r.version, r.plural)] = cr
                every.append(cr)
                if r.version == storage or cr.crd_name not in by_kind:
                    by_kind[cr.crd_name] = cr
        self._by_path, self._by_kind, self._all, self._seen = by_path, by_kind, every, seen

    def by_path(self, group: str, version: str, plural: str) -> CustomResource | None:
        self._refresh()
        return self._by_path.get((group, version, plural))

    def by_kind(self, kind: str) -> CustomResource | None:
        """The storage version of the CRD named ``kind`` (a Store kind of a custom resource)."""
        self._refresh()
        return self._by_kind.get(kind)

    def all(self) -> list[CustomResource]:
        self._refresh()
        return list(self._all)

    def groups(self) -> dict[str, list[str]]:
        """Each custom group's served versions, in the CRDs' listed order."""
        out: dict[str, list[str]] = {}
        for cr in self.all():
            versions = out.setdefault(cr.resource.group, [])
            if cr.resource.version not in versions:
                versions.append(cr.resource.version)
        return out


def store_kind(objects: Objects, obj: dict[str, Any]) -> str | None:
    """The Store kind of an object by its apiVersion and kind: a built-in kind, else the name of
    the established CRD serving that group, version and kind (kubectl's REST mapping); None when
    nothing serves it (kubectl's "no matches for kind")."""
    api_version = str(obj.get("apiVersion") or "")
    kind = str(obj.get("kind") or "")
    if not api_version:  # a manifest that leaves it out: the built-in kind of that name
        return next((k for g, k in BUILTIN_KINDS if k == kind), None)
    group, _, version = api_version.rpartition("/")
    found = builtin_kind(group, kind)
    if found is not None or not group:
        return found
    for crd in objects.list(KIND)[0]:
        if not is_established(crd):
            continue
        for cr in served(crd):
            r = cr.resource
            if (r.group, r.version, r.kind) == (group, version, kind):
                return cr.crd_name
    return None
