"""The four PATCH content types kube-apiserver accepts (``staging/.../endpoints/handlers/patch.go``).

- JSON merge patch (RFC 7386), ``application/merge-patch+json``;
- JSON patch (RFC 6902), ``application/json-patch+json``;
- strategic merge patch, ``application/strategic-merge-patch+json``: maps merge, lists whose
  Go field carries ``patchStrategy:"merge"`` merge by their ``patchMergeKey`` (containers by name,
  conditions by type, ...), other lists are replaced; the ``$patch``, ``$retainKeys``,
  ``$setElementOrder/`` and ``$deleteFromPrimitiveList/`` directives are honoured;
- apply, ``application/apply-patch+yaml``: handled by the server as a create-or-merge.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer

from kubesched.api.errors import BadRequest, Invalid
from kubesched.api.schema import json_kind

# list fields with patchStrategy "merge" and their patchMergeKey (k8s.io/api core/v1, meta/v1)
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "conditions": "type",
    "addresses": "type",
    "podIPs": "ip",
    "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey",
    "schedulingGates": "name",
    "resourceClaims": "name",
}
# "ports" merge by containerPort in a container, by port in a Service's spec
PORT_KEYS = ("containerPort", "port")


def merge_key(field: str, items: Any) -> str | None:
    """The patchMergeKey of the list ``field`` holding ``items`` (None: replaced whole)."""
    if field == "ports" and isinstance(items, list):
        present = [k for k in PORT_KEYS if any(isinstance(i, dict) and k in i for i in items)]
        return present[0] if present else PORT_KEYS[0]
    return MERGE_KEYS.get(field)


# primitive lists with patchStrategy "merge" (set union)
PRIMITIVE_MERGE = {"finalizers"}

_MISSING = object()


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise BadRequest(f"Unknown patch type: {directive!r}")
    result = dict(target) if isinstance(target, dict) else {}
    orders: dict[str, list[Any]] = {}
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys"):
            continue
        if k.startswith("$setElementOrder/"):
            orders[k.split("/", 1)[1]] = v if isinstance(v, list) else []
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            drop = set(map(str, v or []))
            result[field] = [x for x in result.get(field) or [] if str(x) not in drop]
            continue
        if v is None:
            result.pop(k, None)
        elif isinstance(v, dict):
            merged = strategic_merge_patch(result.get(k), v)
            if merged is None:
                result.pop(k, None)
            else:
                result[k] = merged
        elif isinstance(v, list) and (key := merge_key(k, [*(result.get(k) or []), *v])) is not None:
            result[k] = _merge_list(result.get(k) or [], v, key)
        elif isinstance(v, list) and k in PRIMITIVE_MERGE:
            have = list(result.get(k) or [])
            result[k] = _element_order(have + [x for x in v if x not in have], v, have, None)
        else:
            result[k] = copy.deepcopy(v)
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    for field, order in orders.items():
        items = result.get(field)
        key = merge_key(field, items)
        if key is None or not isinstance(items, list):
            continue
        rank = {(o.get(key) if isinstance(o, dict) else o): i for i, o in enumerate(order)}
        items.sort(key=lambda it: rank.get(it.get(key) if isinstance(it, dict) else it, len(rank)))
    return result


def _merge_list(target: list[Any], patch: list[Any], key: str) -> list[Any]:
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and p.get("$patch") == "replace")]
    original = list(target)
    result = list(target)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            result.append(copy.deepcopy(item))
            continue
        at = next((i for i, o in enumerate(result) if isinstance(o, dict) and o.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if at is not None:
                result.pop(at)
            continue
        if at is None:
            result.append(strategic_merge_patch({}, item))
        else:
            result[at] = strategic_merge_patch(result[at], item)
    return _element_order(result, patch, original, key)


def _element_order(merged: list[Any], patch: list[Any], original: list[Any], key: str | None) -> list[Any]:
    """strategicpatch's ``normalizeElementOrder``: the merged items the patch names, in the patch's
    order, interleaved with the others in the live object's order; an item the live object lacks
    goes before the server-only items that follow it (``mergeSortedSlice``)."""

    def ident(item: Any) -> Any:
        return item.get(key) if key is not None and isinstance(item, dict) else item

    named = [ident(p) for p in patch if not (isinstance(p, dict) and p.get("$patch") == "delete")]
    live = [ident(o) for o in original]

    def rank(order: list[Any], item: Any) -> int:
        try:
            return order.index(ident(item))
        except ValueError:
            return -1

    patched = sorted((m for m in merged if ident(m) in named), key=lambda m: rank(named, m))
    server_only = [m for m in merged if ident(m) not in named]
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(patched):
        if j >= len(patched):
            out.append(server_only[i])
            i += 1
        elif i >= len(server_only):
            out.append(patched[j])
            j += 1
        else:
            left, right = rank(live, server_only[i]), rank(live, patched[j])
            if left >= 0 and right >= 0 and left < right:
                out.append(server_only[i])
                i += 1
            else:
                out.append(patched[j])
                j += 1
    return out


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 with the ``jsonpatch`` package, answered as patch.go's ``applyJSPatch`` answers:
    a body that is not an array of operation objects is 400 (``jsonpatch.DecodePatch``), an
    operation that cannot apply (a failed ``test``, a missing path, an unknown op) is 422 with
    apimachinery's generic message, the library's reason as its cause, and nothing changed."""
    if not isinstance(ops, list):
        raise BadRequest(f"json: cannot unmarshal {json_kind(ops)} into Go value of type jsonpatch.Patch")
    for op in ops:
        if not isinstance(op, dict):
            raise BadRequest(f"json: cannot unmarshal {json_kind(op)} into Go value of type jsonpatch.Operation")
    try:
        return jsonpatch.JsonPatch(ops).apply(doc)  # works on a deep copy: ``doc`` is never touched
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, KeyError, IndexError, TypeError):
        # kube-apiserver v1.37.2 answers with empty details, the library's reason in its log only
        raise Invalid("the server rejected our request due to an error in our request", details={}) from None


def patched(ctype: str, current: Any, patch: Any) -> Any:
    """``current`` with a JSON, merge or strategic merge patch applied (by its content type)."""
    if ctype == "application/json-patch+json":
        return json_patch(current, patch)
    if not isinstance(patch, dict):
        raise BadRequest("the patch must be a JSON object")
    if ctype == "application/merge-patch+json":
        return merge_patch(current, patch)
    return strategic_merge_patch(current, patch)
