"""Field ownership (kube-apiserver's ``endpoints/handlers/fieldmanager`` over
structured-merge-diff): ``metadata.managedFields`` records, per manager and operation, the
fields it set; server-side apply refuses to change a field another manager owns with a
different value (409 with upstream's conflict message) unless forced, and removes the fields
the applier owned and no longer applies; an update (create, PUT, other PATCHes) takes ownership
of the fields whose values it changed.

Field paths are tuples of FieldsV1 elements: ``f:name`` a field, ``k:{"name":"c"}`` an item of
a list keyed by its merge key (containers by name), ``v:"x"`` an item of a set (finalizers), and
``.`` the list item itself. Lists without a merge key are atomic: one field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.api.errors import Conflict
from kubesched.apiserver.handlers.patch import PRIMITIVE_MERGE, merge_key
from kubesched.apiserver.handlers.protobuf import field_shape

Path = tuple[str, ...]
# metadata fields that are the server's, never a manager's (fieldmanager's "reset" fields)
_SERVER_META = {
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "generateName",
}


def field_set(obj: Mapping[str, Any]) -> set[Path]:
    """The fields an object (or an applied configuration) sets; status is the status
    subresource's and the identity fields the server's, so neither is counted."""
    out: set[Path] = set()
    for k, v in obj.items():
        if k in ("apiVersion", "kind", "status"):
            continue
        if k == "metadata" and isinstance(v, Mapping):
            v = {mk: mv for mk, mv in v.items() if mk not in _SERVER_META}
            if not v:
                continue
        _walk(k, v, ("f:" + k,), out)
    return out


def _walk(name: str, value: Any, path: Path, out: set[Path]) -> None:
    if isinstance(value, Mapping) and value:
        for k, v in value.items():
            _walk(k, v, (*path, "f:" + k), out)
        return
    key = merge_key(name, value)
    if (
        isinstance(value, list)
        and value
        and key is not None
        and all(isinstance(i, Mapping) and key in i for i in value)
    ):
        for item in value:
            item_path = (*path, "k:" + json.dumps({key: item[key]}, separators=(",", ":")))
            out.add((*item_path, "."))
            for k, v in item.items():
                _walk(k, v, (*item_path, "f:" + k), out)
        return
    if isinstance(value, list) and value and name in PRIMITIVE_MERGE:
        for item in value:
            out.add((*path, "v:" + json.dumps(item, separators=(",", ":"))))
        return
    out.add(path)


_ABSENT = object()


def value_at(obj: Any, path: Path) -> Any:
    """The value at ``path`` (``_ABSENT`` when the object has none there)."""
    cur = obj
    for el in path:
        if el == ".":
            return cur
        kind, _, rest = el.partition(":")
        if kind == "f":
            if not isinstance(cur, Mapping) or rest not in cur:
                return _ABSENT
            cur = cur[rest]
        elif kind == "k":
            want = json.loads(rest)
            if not isinstance(cur, list):
                return _ABSENT
            cur = next(
                (i for i in cur if isinstance(i, Mapping) and all(i.get(a) == b for a, b in want.items())), _ABSENT
            )
            if cur is _ABSENT:
                return _ABSENT
        elif kind == "v":
            want = json.loads(rest)
            return want if isinstance(cur, list) and want in cur else _ABSENT
    return cur


def path_string(path: Path) -> str:
    """``fieldpath.Path.String``: ``.spec.template.spec.containers[name="c"].image``."""
    out = []
    for el in path:
        if el == ".":
            continue
        kind, _, rest = el.partition(":")
        if kind == "f":
            out.append("." + rest)
        elif kind == "k":
            fields = json.loads(rest)
            out.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in fields.items()) + "]")
        elif kind == "v":
            out.append(f"[={rest}]")
    return "".join(out)


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for el in path:
            node = node.setdefault(el, {})
    return tree


def from_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    if not isinstance(tree, Mapping):
        return out
    for k, v in tree.items():
        p = (*prefix, str(k))
        if k == "." or not v:
            out.add(p)
        else:
            out |= from_fields_v1(v, p)
    return out


def _remove(obj: dict[str, Any], path: Path) -> None:
    """Drop the field (or list item) at ``path`` from ``obj`` in place."""
    if path and path[-1] == ".":
        path = path[:-1]
    parents: list[Any] = [obj]
    cur: Any = obj
    for el in path[:-1]:
        cur = value_at(cur, (el,))
        if cur is _ABSENT or not isinstance(cur, dict | list):
            return
        parents.append(cur)
    last = path[-1]
    kind, _, rest = last.partition(":")
    if kind == "f" and isinstance(cur, dict):
        cur.pop(rest, None)
    elif kind == "k" and isinstance(cur, list):
        want = json.loads(rest)
        cur[:] = [i for i in cur if not (isinstance(i, Mapping) and all(i.get(a) == b for a, b in want.items()))]
    elif kind == "v" and isinstance(cur, list):
        want = json.loads(rest)
        cur[:] = [i for i in cur if i != want]


def _copy(obj: Any) -> Any:
    return json.loads(json.dumps(obj))


class Managers:
    """The managedFields of one object, by manager identity (manager, operation, apiVersion for
    updates, subresource: ``BuildManagerIdentifier``)."""

    def __init__(self, entries: list[dict[str, Any]] | None) -> None:
        self.entries: dict[tuple[str, str, str, str], tuple[dict[str, Any], set[Path]]] = {}
        for e in entries or []:
            if not isinstance(e, Mapping):
                continue
            ident = self.ident(
                str(e.get("manager") or ""),
                str(e.get("operation") or ""),
                str(e.get("apiVersion") or ""),
                str(e.get("subresource") or ""),
            )
            self.entries[ident] = (dict(e), from_fields_v1(e.get("fieldsV1") or {}))

    @staticmethod
    def ident(manager: str, operation: str, api_version: str, subresource: str = "") -> tuple[str, str, str, str]:
        return manager, operation, "" if operation == "Apply" else api_version, subresource

    def set(self, ident: tuple[str, str, str, str], api_version: str, paths: set[Path], now: str) -> None:
        manager, operation, _, subresource = ident
        entry: dict[str, Any] = {
            "manager": manager,
            "operation": operation,
            "apiVersion": api_version,
            "time": now,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(paths),
        }
        if subresource:
            entry["subresource"] = subresource
        self.entries[ident] = (entry, paths)

    def encoded(self) -> list[dict[str, Any]]:
        """The entries with fields, in ``sortEncodedManagedFields``' order: by operation, time,
        manager, apiVersion and subresource."""
        entries = [e for e, paths in self.entries.values() if paths]
        return sorted(
            entries,
            key=lambda e: (
                str(e.get("operation") or ""),
                str(e.get("time") or ""),
                str(e.get("manager") or ""),
                str(e.get("apiVersion") or ""),
                str(e.get("subresource") or ""),
            ),
        )


def _label(ident: tuple[str, str, str, str]) -> str:
    """``printManager``: an updater is named with the version it wrote."""
    manager, operation, api_version, _ = ident
    return f'"{manager}" using {api_version}' if operation == "Update" else f'"{manager}"'


def conflict_error(kind_plural: str, name: str, conflicts: list[tuple[tuple[str, str, str, str], Path]]) -> Conflict:
    """``NewConflictError``: 409 Conflict, one cause per field, upstream's message."""
    if len(conflicts) == 1:
        ident, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {_label(ident)}: {path_string(path)}"
    else:
        by: dict[str, list[str]] = {}
        for ident, path in conflicts:
            by.setdefault(_label(ident), []).append(path_string(path))
        lines = []
        for label in sorted(by):
            lines.append(f"conflicts with {label}:")
            lines.extend(f"- {p}" for p in by[label])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {_label(ident)}", "field": path_string(path)}
        for ident, path in conflicts
    ]
    return Conflict(message, details={"name": name, "kind": kind_plural, "causes": causes})


def apply(
    live: dict[str, Any],
    merged: dict[str, Any],
    config: dict[str, Any],
    manager: str,
    api_version: str,
    now: str,
    *,
    force: bool,
    kind_plural: str,
) -> dict[str, Any]:
    """Server-side apply of ``config`` by ``manager`` to ``live``; ``merged`` is ``live`` with the
    configuration merged in. Returns the object to store, with its managedFields; raises the
    409 of the conflicts unless ``force``."""
    managers = Managers((live.get("metadata") or {}).get("managedFields"))
    me = Managers.ident(manager, "Apply", api_version)
    applied = field_set(config)
    conflicts = []
    for ident, (_, owned) in managers.entries.items():
        if ident == me:
            continue
        for path in sorted(applied & owned):
            if path[-1] == ".":
                continue
            if value_at(config, path) != value_at(live, path):
                conflicts.append((ident, path))
    if conflicts and not force:
        raise conflict_error(kind_plural, str((live.get("metadata") or {}).get("name") or ""), conflicts)
    out = _copy(merged)
    previously = managers.entries.get(me, ({}, set()))[1]
    others = set().union(*(p for i, (_, p) in managers.entries.items() if i != me)) if managers.entries else set()
    for path in sorted(previously - applied - others, key=len, reverse=True):
        _remove(out, path)
    for ident, path in conflicts:  # forced: the field changes hands
        entry, owned = managers.entries[ident]
        managers.set(ident, entry.get("apiVersion", api_version), owned - {path}, entry.get("time", now))
    managers.set(me, api_version, applied, now)
    out.setdefault("metadata", {})["managedFields"] = managers.encoded()
    return out


def update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    api_version: str,
    now: str,
    subresource: str = "",
) -> dict[str, Any]:
    """An update (or create) by ``manager``: it owns the fields whose values it changed; fields
    that are gone are no one's. managedFields the request itself changed are taken as sent
    (how ``kubectl apply --server-side`` moves client-side-apply ownership to itself)."""
    live = ((old or {}).get("metadata") or {}).get("managedFields")
    sent = (new.get("metadata") or {}).get("managedFields")
    managers = Managers(sent if isinstance(sent, list) and sent and sent != live else live)
    before = field_set(old) if old is not None else set()
    after = field_set(new)
    changed = {p for p in after if old is None or p not in before or value_at(new, p) != value_at(old, p)}
    changed |= _added_nodes(old, new, changed)
    gone = before - after
    me = Managers.ident(manager, "Update", api_version, subresource)
    for ident, (entry, owned) in list(managers.entries.items()):
        keep = owned - gone - (changed if ident != me else set())
        if keep != owned:
            managers.set(ident, entry.get("apiVersion", api_version), keep, entry.get("time", now))
    if changed:
        mine = managers.entries.get(me, ({}, set()))[1] - gone
        managers.set(me, api_version, mine | changed, now)
    out = dict(new)
    out["metadata"] = {**(new.get("metadata") or {}), "managedFields": managers.encoded()}
    if not out["metadata"]["managedFields"]:
        out["metadata"].pop("managedFields")
    return out


def _added_nodes(old: dict[str, Any] | None, new: dict[str, Any], changed: set[Path]) -> set[Path]:
    """The ``.`` members an update adds: a map or list the request created where the Go field
    omits its empty value (labels, data, finalizers, ports; not containers, always written)."""
    api_version, kind = str(new.get("apiVersion") or ""), str(new.get("kind") or "")
    out: set[Path] = set()
    seen: set[Path] = set()
    for path in changed:
        for end in range(1, len(path)):
            prefix = path[:end]
            if prefix in seen or prefix[-1].startswith(("k:", "v:")) or prefix[-1] == ".":
                continue
            seen.add(prefix)
            if old is not None and value_at(old, prefix) is not _ABSENT:
                continue
            shape = field_shape(api_version, kind, prefix)
            if shape is None:
                continue
            type_, keep = shape
            if not keep and (type_.startswith("repeated ") or type_.startswith("map<")):
                out.add((*prefix, "."))
    return out


def manager_name(field_manager: str | None, user_agent: str | None) -> str:
    """The ``fieldManager`` parameter, else the User-Agent's first part (``prefixFromUserAgent``)."""
    if field_manager:
        return field_manager
    return (user_agent or "").split("/")[0][:128]
