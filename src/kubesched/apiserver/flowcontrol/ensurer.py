"""The ``priority-and-fairness-config-producer`` post-start hook
(``pkg/registry/flowcontrol/rest/storage_flowcontrol.go``, ``pkg/registry/flowcontrol/ensurer``):
at start and then every minute, the suggested objects are created when missing and their spec
put back when their ``apf.kubernetes.io/autoupdate-spec`` annotation says so (absent: only
while the object is at generation 1); the mandatory ones (``exempt``, ``catch-all``) are always
put back; objects that claim to be auto-updated but are no longer part of the bootstrap
configuration are deleted."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from kubesched.api.errors import AlreadyExists, Conflict, NotFound
from kubesched.api.flowcontrol import bootstrap_objects, same_spec
from kubesched.cluster.store import Store

AUTOUPDATE = "apf.kubernetes.io/autoupdate-spec"
KINDS = ("PriorityLevelConfiguration", "FlowSchema")  # levels first: the schemas name them


def _parse_bool(value: str | None) -> bool | None:
    """``strconv.ParseBool``: None when the value is not a boolean."""
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None


def _revised(current: dict[str, Any], boot: dict[str, Any], mandatory: bool) -> dict[str, Any] | None:
    """``ReviseIfNeeded``: the object to write back, or None when it is as it should be."""
    annotations = (current.get("metadata") or {}).get("annotations") or {}
    auto = mandatory
    if not auto:
        parsed = _parse_bool(annotations.get(AUTOUPDATE))
        auto = parsed if parsed is not None else (current["metadata"].get("generation") or 0) == 1
    annotate = _parse_bool(annotations.get(AUTOUPDATE)) != auto
    respec = auto and not _spec_equalish(boot, current)
    if not (annotate or respec):
        return None
    out = copy.deepcopy(current)
    if respec:
        out["spec"] = copy.deepcopy(boot["spec"])
    if annotate:
        meta = out["metadata"]
        meta["annotations"] = {**(meta.get("annotations") or {}), AUTOUPDATE: "true" if auto else "false"}
    return out


def _spec_equalish(boot: dict[str, Any], current: dict[str, Any]) -> bool:
    """``SpecEqualish``: the exempt level's own shares and lendable percent are the operator's
    (``plcSpecEqualish``); everything else must be the bootstrap's."""
    want, have = boot["spec"], current.get("spec") or {}
    if boot["metadata"]["name"] == "exempt" and "type" in want and want.get("type") == "Exempt":
        if not isinstance(have.get("exempt"), dict):
            return False
        want = {**want, "exempt": have["exempt"]}
    return same_spec(want, have)


def ensure(store: Store) -> None:
    """One round of the hook: suggested, then mandatory, then the unwanted removed."""
    for mandatory in (False, True):
        for kind in KINDS:
            for boot in bootstrap_objects(kind):
                if boot["mandatory"] == mandatory:
                    _ensure_one(store, kind, boot, mandatory)
    for kind in KINDS:
        _remove_unwanted(store, kind, {o["metadata"]["name"] for o in bootstrap_objects(kind)})


def _ensure_one(store: Store, kind: str, boot: dict[str, Any], mandatory: bool) -> None:
    name = boot["metadata"]["name"]
    current = store.try_get(kind, "", name)
    if current is None:
        obj = {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": kind,
            "metadata": copy.deepcopy(boot["metadata"]),
            "spec": copy.deepcopy(boot["spec"]),
        }
        with contextlib.suppress(AlreadyExists):  # created meanwhile: checked next round
            store.create(kind, obj)
        return
    revised = _revised(current, boot, mandatory)
    if revised is not None:
        with contextlib.suppress(Conflict):  # updated meanwhile: checked next round
            store.update(kind, revised)


def _remove_unwanted(store: Store, kind: str, wanted: set[str]) -> None:
    """``RemoveUnwantedObjects``: an object not of the bootstrap configuration that carries the
    annotation with true was made by an earlier release's ensurer: it goes."""
    for obj in list(store.list(kind)[0]):
        meta = obj.get("metadata") or {}
        if meta.get("name") in wanted:
            continue
        if _parse_bool((meta.get("annotations") or {}).get(AUTOUPDATE)):
            with contextlib.suppress(NotFound):
                store.delete(kind, "", meta["name"])
