"""Taking out of a recorded OpenAPI document what this server does not serve: the paths of a
resource or subresource it does not list in discovery, then every schema (and, in Swagger 2.0,
every shared parameter) that no path left reaches. kube-apiserver's documents hold only what
their paths reach (kube-openapi builds them from the routes), so this is the document it would
serve without those routes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

V3_SCHEMAS = "#/components/schemas/"
V2_DEFINITIONS = "#/definitions/"
V2_PARAMETERS = "#/parameters/"


def resource_of(path: str) -> tuple[str, str] | None:
    """The group version and ``resource[/subresource]`` a path serves
    (``/api/v1/namespaces/{namespace}/pods/{name}/log`` is ``("v1", "pods/log")``), or None for a
    path of no resource (discovery, ``/version``)."""
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) >= 2:
        gv, rest = parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3:
        gv, rest = f"{parts[1]}/{parts[2]}", parts[3:]
    else:
        return None
    if rest[:1] == ["watch"]:
        rest = rest[1:]
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[1] == "{namespace}":
        rest = rest[2:]
    if not rest:
        return None
    return gv, rest[0] if len(rest) < 3 else f"{rest[0]}/{rest[2]}"


def _refs(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            out.add(ref)
        for value in node.values():
            _refs(value, out)
    elif isinstance(node, list):
        for value in node:
            _refs(value, out)


def reachable(roots: Iterable[Any], named: dict[str, dict[str, Any]]) -> set[str]:
    """Every ``$ref`` reached from ``roots`` through the documents' named sections (``prefix`` →
    ``{name: schema}``), as full references."""
    todo: set[str] = set()
    for root in roots:
        _refs(root, todo)
    seen: set[str] = set()
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        for prefix, section in named.items():
            if ref.startswith(prefix):
                _refs(section.get(ref[len(prefix) :]), todo)
    return seen


def keep_paths(doc: dict[str, Any], served: Callable[[str], bool]) -> dict[str, Any]:
    """``doc`` (v2 or v3) with the paths ``served`` refuses taken out, and what no remaining path
    reaches."""
    paths = {p: v for p, v in (doc.get("paths") or {}).items() if served(p)}
    if len(paths) == len(doc.get("paths") or {}):
        return doc
    out = {**doc, "paths": paths}
    if "components" in doc:
        schemas = doc["components"].get("schemas") or {}
        reached = reachable([paths], {V3_SCHEMAS: schemas})
        kept = {k: v for k, v in schemas.items() if V3_SCHEMAS + k in reached}
        components = {**doc["components"]}
        if kept:
            components["schemas"] = kept
        else:
            components.pop("schemas", None)
        out["components"] = components
    if "definitions" in doc:
        named = {V2_DEFINITIONS: doc["definitions"], V2_PARAMETERS: doc.get("parameters") or {}}
        reached = reachable([paths], named)
        out["definitions"] = {k: v for k, v in doc["definitions"].items() if V2_DEFINITIONS + k in reached}
        if "parameters" in doc:
            out["parameters"] = {k: v for k, v in doc["parameters"].items() if V2_PARAMETERS + k in reached}
    return out
