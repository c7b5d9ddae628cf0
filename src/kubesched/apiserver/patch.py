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
        elif isinstance(v, list) and k in MERGE_KEYS:
            result[k] = _merge_list(result.get(k) or [], v, MERGE_KEYS[k])
        elif isinstance(v, list) and k in PRIMITIVE_MERGE:
            have = list(result.get(k) or [])
            result[k] = have + [x for x in v if x not in have]
        else:
            result[k] = copy.deepcopy(v)
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    for field, order in orders.items():
        key = MERGE_KEYS.get(field)
        items = result.get(field)
        if key is None or not isinstance(items, list):
            continue
        rank = {(o.get(key) if isinstance(o, dict) else o): i for i, o in enumerate(order)}
        items.sort(key=lambda it: rank.get(it.get(key) if isinstance(it, dict) else it, len(rank)))
    return result


def _merge_list(target: list[Any], patch: list[Any], key: str) -> list[Any]:
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and p.get("$patch") == "replace")]
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
    return result


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
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, KeyError, IndexError, TypeError) as exc:
        cause = {"causes": [{"message": str(exc)}]}
        raise Invalid("the server rejected our request due to an error in our request", details=cause) from None


def patched(ctype: str, current: Any, patch: Any) -> Any:
    """``current`` with a JSON, merge or strategic merge patch applied (by its content type)."""
    if ctype == "application/json-patch+json":
        return json_patch(current, patch)
    if not isinstance(patch, dict):
        raise BadRequest("the patch must be a JSON object")
    if ctype == "application/merge-patch+json":
        return merge_patch(current, patch)
    return strategic_merge_patch(current, patch)
