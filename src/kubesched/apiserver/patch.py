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

from kubesched.cluster.errors import BadRequest, Invalid

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


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise BadRequest(f"JSON pointer must start with '/': {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str], path: str) -> Any:
    """The value at ``parts`` (a JSON pointer split), or 422 naming ``path``."""
    cur = doc
    for p in parts:
        if isinstance(cur, dict) and p in cur:
            cur = cur[p]
        elif isinstance(cur, list) and p.isdigit() and int(p) < len(cur):
            cur = cur[int(p)]
        else:
            raise Invalid(f"the server rejected our request due to an error in our request: missing path {path!r}")
    return cur


def _parent(doc: Any, parts: list[str], path: str) -> tuple[Any, str]:
    return _walk(doc, parts[:-1], path), parts[-1]


def _get(doc: Any, path: str) -> Any:
    return _walk(doc, _pointer(path), path)


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902; a malformed document is 400, an operation that cannot apply 422."""
    if not isinstance(ops, list):
        raise BadRequest("json patch must be a JSON array of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or not isinstance(op.get("op"), str) or not isinstance(op.get("path"), str):
            raise BadRequest(f"invalid JSON patch operation: {op!r}")
        kind, path = op["op"], op["path"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise BadRequest(f"missing value for {kind} operation at {path!r}")
        if kind == "test":
            if _get(doc, path) != op["value"]:
                raise Invalid(
                    f"the server rejected our request due to an error in our request: test failed at {path!r}"
                )
            continue
        if kind in ("move", "copy"):
            if not isinstance(op.get("from"), str):
                raise BadRequest(f"missing from for {kind} operation")
            value = copy.deepcopy(_get(doc, op["from"]))
            if kind == "move":
                doc = _remove(doc, op["from"])
            doc = _add(doc, path, value)
            continue
        if kind == "remove":
            doc = _remove(doc, path)
        elif kind == "add":
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "replace":
            _get(doc, path)
            doc = _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        else:
            raise BadRequest(f"Unexpected kind: {kind}")
    return doc


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, last = _parent(doc, parts, path)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise Invalid(f"the server rejected our request due to an error in our request: bad index {path!r}")
    else:
        raise Invalid(f"the server rejected our request due to an error in our request: missing path {path!r}")
    return doc


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    parent, last = _parent(doc, parts, path)
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        parent.pop(int(last))
    else:
        raise Invalid(f"the server rejected our request due to an error in our request: missing path {path!r}")
    return doc
