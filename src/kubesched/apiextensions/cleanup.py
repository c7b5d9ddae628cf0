"""The CRD finalizer (apiextensions-apiserver's ``controller/finalizer/crd_finalizer.go``): a
deleted CustomResourceDefinition stays, Terminating, while its custom resources are deleted (those
with finalizers of their own wait for them); once none is left its cleanup finalizer is removed
and it goes. While it is Terminating no custom resource of it can be created."""

from __future__ import annotations

from typing import Any, Protocol

from kubesched.api.errors import Forbidden, NotFound
from kubesched.apiextensions.definitions import CLEANUP_FINALIZER, KIND
from kubesched.clock import rfc3339

IN_PROGRESS = ("True", "InstanceDeletionInProgress", "CustomResource deletion is in progress")
COMPLETED = ("False", "InstanceDeletionCompleted", "removed all instances")


class Objects(Protocol):
    """What the finalizer reads and writes (the in-process client's methods)."""

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]: ...

    def update(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]: ...

    def delete(self, kind: str, namespace: str, name: str, *, grace_period_seconds: int | None = None) -> None: ...


def terminating(crd: dict[str, Any] | None) -> bool:
    """Whether the CRD's Terminating condition is True."""
    conditions = ((crd or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Terminating" and c.get("status") == "True" for c in conditions)


def refuse_create(crd: dict[str, Any] | None, name: str) -> None:
    """A create of a custom resource of a Terminating CRD is Forbidden."""
    if crd is not None and terminating(crd):
        raise Forbidden(
            f'{crd["metadata"]["name"]} "{name}" is forbidden: '
            "create not allowed while custom resource definition is terminating"
        )


def _with_condition(crd: dict[str, Any], state: tuple[str, str, str], now: float) -> dict[str, Any]:
    status, reason, message = state
    conditions = [c for c in (crd.get("status") or {}).get("conditions") or [] if c.get("type") != "Terminating"]
    condition = {"type": "Terminating", "status": status, "lastTransitionTime": rfc3339(now)}
    condition |= {"reason": reason, "message": message}
    return {**crd, "status": {**(crd.get("status") or {}), "conditions": [*conditions, condition]}}


def finalize(objects: Objects, name: str, now: float) -> bool:
    """One sync of a deleted CRD: its custom resources deleted, and, when none is left, its
    finalizer removed (the CRD is gone then). True when it is gone (or was not being deleted)."""
    crd = objects.get(KIND, "", name)
    if crd is None:
        return True
    meta = crd["metadata"]
    if not meta.get("deletionTimestamp") or CLEANUP_FINALIZER not in (meta.get("finalizers") or []):
        return True
    if not terminating(crd):
        crd = objects.update(KIND, _with_condition(crd, IN_PROGRESS, now))
    for obj in objects.list(name):
        if not obj["metadata"].get("deletionTimestamp"):
            try:
                objects.delete(
                    name, obj["metadata"].get("namespace") or "", obj["metadata"]["name"], grace_period_seconds=0
                )
            except NotFound:
                continue
    if objects.list(name):
        return False  # custom resources with finalizers: they go when those are removed
    done = _with_condition(crd, COMPLETED, now)
    finalizers = [f for f in done["metadata"].get("finalizers") or [] if f != CLEANUP_FINALIZER]
    objects.update(KIND, {**done, "metadata": {**done["metadata"], "finalizers": finalizers}})
    return True
