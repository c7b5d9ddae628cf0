"""The OpenAPI documents kubectl reads (``kubectl explain``, and whether it may leave field
validation to the server): ``/openapi/v3`` lists a document per group-version, each with the
schemas of the kinds served there (``x-kubernetes-group-version-kind``) and everything they
reference, and the write operations with the ``fieldValidation`` parameter; ``/openapi/v2`` is
the same schemas as one Swagger document. Built from the project's own schemas (``api/schema.json``,
the Go types' field shapes) and the types' doc comments (``api/descriptions.json``), both made by
``scripts/gen_api_schema.py`` from k8s.io/api."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from kubesched.api.schema import type_of
from kubesched.apiextensions.definitions import CustomResource
from kubesched.apiserver.resources import OFF_BY_DEFAULT, RESOURCES, Resource

_API = Path(__file__).resolve().parent.parent.parent / "api"
# package key of schema.json -> the OpenAPI name prefix kube-apiserver uses
_PREFIX = {
    "meta": "io.k8s.apimachinery.pkg.apis.meta.v1",
    "apiextensionsv1": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
}
_SPECIAL: dict[str, tuple[str, dict[str, Any]]] = {
    "Quantity": (
        "io.k8s.apimachinery.pkg.api.resource.Quantity",
        {"type": "string", "description": "Quantity is a fixed-point representation of a number (e.g. 100m, 1Gi)."},
    ),
    "IntOrString": (
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        {
            "type": "string",
            "format": "int-or-string",
            "x-kubernetes-int-or-string": True,
            "description": "IntOrString is a type that can hold an int32 or a string.",
        },
    ),
    "Time": (
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
        {"type": "string", "format": "date-time", "description": "Time is a wrapper around time.Time (RFC 3339)."},
    ),
}


V3_PREFIX = "#/components/schemas/"
_V3_ONE_OF = {"Quantity": ("string", "number"), "IntOrString": ("integer", "string")}
_VERSIONED = re.compile(r"^([a-z]+?)(v\d+(?:(?:alpha|beta)\d+)?)$")


def schema_name(key: str) -> str:
    """The OpenAPI name of a schema.json type: ``core.Pod`` is ``io.k8s.api.core.v1.Pod``, a package
    key with its version (``autoscalingv2``, ``schedulingv1beta1``) names that version."""
    pkg, _, name = key.partition(".")
    if pkg in _PREFIX:
        return f"{_PREFIX[pkg]}.{name}"
    versioned = _VERSIONED.match(pkg)
    group, version = (versioned.group(1), versioned.group(2)) if versioned else (pkg, "v1")
    return f"io.k8s.api.{group}.{version}.{name}"


@cache
def _sources() -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    types = json.loads((_API / "schema.json").read_text())["types"]
    docs = json.loads((_API / "descriptions.json").read_text())["types"]
    return types, docs


@cache
def _required() -> dict[str, list[str]]:
    """Per type, the fields OpenAPI lists as required (``kubectl explain`` marks them -required-)."""
    required: dict[str, list[str]] = json.loads((_API / "descriptions.json").read_text()).get("required") or {}
    return required


def _ref(name: str, prefix: str) -> dict[str, Any]:
    return {"$ref": f"{prefix}{name}"}


def _field(t: str, prefix: str, reach: set[str]) -> dict[str, Any]:
    if t.startswith("[]"):
        return {"type": "array", "items": _field(t[2:], prefix, reach)}
    if t.startswith("map[string]"):
        return {"type": "object", "additionalProperties": _field(t[11:], prefix, reach)}
    base = t.split(":")[0]
    if base == "string":
        return {"type": "string"}
    if base in ("int32", "int64", "int", "uint32", "uint64"):
        return {"type": "integer", "format": "int64" if base in ("int64", "int", "uint64") else "int32"}
    if base in ("float64", "float32"):
        return {"type": "number", "format": "double"}
    if base == "bool":
        return {"type": "boolean"}
    if base == "raw":
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if base in _SPECIAL:
        reach.add(base)
        return _ref(_SPECIAL[base][0], prefix)
    reach.add(base)
    return _ref(schema_name(base), prefix)


def _schemas(roots: list[str], prefix: str) -> dict[str, Any]:
    types, docs = _sources()
    out: dict[str, Any] = {}
    pending = list(roots)
    done: set[str] = set()
    while pending:
        key = pending.pop()
        if key in done:
            continue
        done.add(key)
        if key in _SPECIAL:
            special, special_schema = _SPECIAL[key]
            if key in _V3_ONE_OF and prefix == V3_PREFIX:
                # the types' OpenAPIV3OneOfTypes: with no single type, kubectl explain names them
                # <Quantity> and <IntOrString>, as against kube-apiserver
                rest = {k: v for k, v in special_schema.items() if k != "type"}
                special_schema = {"oneOf": [{"type": t} for t in _V3_ONE_OF[key]], **rest}
            out[special] = special_schema
            continue
        fields = types.get(key)
        if fields is None:
            continue
        reach: set[str] = set()
        doc = docs.get(key, {})
        props = {}
        for field, t in fields.items():
            prop = _field(t, prefix, reach)
            if doc.get(field):
                prop = (
                    {**prop, "description": doc[field]}
                    if "$ref" not in prop
                    else {
                        "allOf": [prop],
                        "description": doc[field],
                    }
                )
            props[field] = prop
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if doc.get(""):
            schema["description"] = doc[""]
        if _required().get(key):
            schema["required"] = _required()[key]
        out[schema_name(key)] = schema
        pending.extend(reach - done)
    return out


def _gvk(r: Resource) -> dict[str, str]:
    return {"group": r.group, "kind": r.kind, "version": r.version}


def _served(group: str, version: str) -> list[tuple[Resource, str]]:
    out = []
    for r in RESOURCES:
        if r.group == group and r.version == version and not r.virtual:
            key = type_of(r.group, r.kind, r.version)
            if key is not None:
                out.append((r, key))
    return out


def _path(r: Resource) -> tuple[str, str]:
    base = f"/apis/{r.group}/{r.version}" if r.group else "/api/v1"
    ns = "/namespaces/{namespace}" if r.namespaced else ""
    return f"{base}{ns}/{r.plural}", f"{base}{ns}/{r.plural}/{{name}}"


_FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "description": "How the server treats unknown or duplicate fields: Ignore, Warn or Strict.",
    "schema": {"type": "string", "uniqueItems": True},
}


def _operations(r: Resource, ref: dict[str, Any]) -> dict[str, Any]:
    collection, item = _path(r)
    op = {"x-kubernetes-group-version-kind": _gvk(r), "parameters": [_FIELD_VALIDATION]}
    ok = {"responses": {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}}
    return {
        collection: {"post": {**op, **ok, "x-kubernetes-action": "post"}},
        item: {
            "put": {**op, **ok, "x-kubernetes-action": "put"},
            "patch": {**op, **ok, "x-kubernetes-action": "patch"},
        },
    }


@cache
def v3_document(group: str, version: str) -> dict[str, Any] | None:
    """The OpenAPI 3.0 document of one group-version, or None when nothing is served there."""
    served = _served(group, version)
    if not served:
        return None
    prefix = V3_PREFIX
    schemas = _schemas([key for _, key in served], prefix)
    paths: dict[str, Any] = {}
    for r, key in served:
        name = schema_name(key)
        gvks = schemas[name].setdefault("x-kubernetes-group-version-kind", [])
        if _gvk(r) not in gvks:
            gvks.append(_gvk(r))
        paths.update(_operations(r, _ref(name, prefix)))
    title = f"Kubernetes ({group or 'core'}/{version})"
    return {
        "openapi": "3.0.0",
        "info": {"title": title, "version": "v1.37.2"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


@cache
def v3_root(off: frozenset[tuple[str, str]] = OFF_BY_DEFAULT) -> dict[str, Any]:
    """``/openapi/v3``: each served group-version's document, with a hash that changes with it."""
    paths = {}
    seen = set()
    for r in RESOURCES:
        gv = (r.group, r.version)
        if gv in seen or gv in off:
            continue
        seen.add(gv)
        doc = v3_document(*gv)
        if doc is None:
            continue
        digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:64].upper()
        paths[_gv_path(*gv)] = {"serverRelativeURL": f"/openapi/v3/{_gv_path(*gv)}?hash={digest}"}
    return {"paths": paths}


def v3_lookup(
    rest: list[str], custom: Sequence[CustomResource] = (), off: frozenset[tuple[str, str]] = OFF_BY_DEFAULT
) -> dict[str, Any] | None:
    """The document at ``/openapi/v3/<rest>``: ``api/v1`` or ``apis/<group>/<version>``, a
    custom resource's group-version included, a group-version not served (``off``) excluded."""
    if rest[:1] == ["api"] and len(rest) == 2:
        return v3_document("", rest[1])
    if rest[:1] == ["apis"] and len(rest) == 3:
        doc = None if (rest[1], rest[2]) in off else v3_document(rest[1], rest[2])
        if doc is None:
            served = [cr for cr in custom if (cr.resource.group, cr.resource.version) == (rest[1], rest[2])]
            return custom_document(served) if served else None
        return doc
    return None


def v3_root_with(custom: Sequence[CustomResource], off: frozenset[tuple[str, str]] = OFF_BY_DEFAULT) -> dict[str, Any]:
    """``/openapi/v3`` with the custom resources' group-versions besides the built-in ones."""
    paths = dict(v3_root(off)["paths"])
    for gv in sorted({(cr.resource.group, cr.resource.version) for cr in custom}):
        if _gv_path(*gv) in paths:
            continue
        doc = custom_document([cr for cr in custom if (cr.resource.group, cr.resource.version) == gv])
        digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:64].upper()
        paths[_gv_path(*gv)] = {"serverRelativeURL": f"/openapi/v3/{_gv_path(*gv)}?hash={digest}"}
    return {"paths": paths}


def custom_schema_name(r: Resource) -> str:
    """``builder.go``'s name of a custom kind: the group reversed, the version, the kind
    (``com.example.stable.v1.CronTab``)."""
    return ".".join(reversed(r.group.split("."))) + f".{r.version}.{r.kind}"


_OBJECT_DOCS = {
    "apiVersion": "APIVersion defines the versioned schema of this representation of an object. Servers should "
    "convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
    "kind": "Kind is a string value representing the REST resource this object represents. Servers may infer this "
    "from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
    "metadata": "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
}


def _published(schema: Any) -> Any:
    """The published form of a structural schema: int-or-string fields as anyOf integer, string."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: _published(v) for k, v in schema["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out[key] = _published(schema[key])
    if schema.get("x-kubernetes-int-or-string") and "anyOf" not in schema:
        out = {"anyOf": [{"type": "integer"}, {"type": "string"}], **out}
    return out


def custom_document(served: list[CustomResource]) -> dict[str, Any]:
    """The OpenAPI 3.0 document of a custom group-version (``controller/openapi/builder``): each
    kind's schema with apiVersion, kind and metadata, its List, ObjectMeta and what it needs."""
    prefix = V3_PREFIX
    schemas = _schemas(["meta.ObjectMeta", "meta.ListMeta"], prefix)
    paths: dict[str, Any] = {}
    for cr in served:
        r = cr.resource
        name = custom_schema_name(r)
        published = _published(cr.schema)
        props = dict(published.get("properties") or {})
        props["apiVersion"] = {"description": _OBJECT_DOCS["apiVersion"], "type": "string"}
        props["kind"] = {"description": _OBJECT_DOCS["kind"], "type": "string"}
        props["metadata"] = {
            "description": _OBJECT_DOCS["metadata"],
            "allOf": [_ref(schema_name("meta.ObjectMeta"), prefix)],
        }
        schemas[name] = {
            **published,
            "type": "object",
            "properties": dict(sorted(props.items())),
            "x-kubernetes-group-version-kind": [_gvk(r)],
        }
        schemas[f"{name}List"] = {
            "description": f"{r.kind}List is a list of {r.kind}",
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": {"description": _OBJECT_DOCS["apiVersion"], "type": "string"},
                "items": {"type": "array", "items": _ref(name, prefix)},
                "kind": {"description": _OBJECT_DOCS["kind"], "type": "string"},
                "metadata": {"allOf": [_ref(schema_name("meta.ListMeta"), prefix)]},
            },
            "x-kubernetes-group-version-kind": [{**_gvk(r), "kind": f"{r.kind}List"}],
        }
        paths.update(_operations(r, _ref(name, prefix)))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


@cache
def v2_document(off: frozenset[tuple[str, str]] = OFF_BY_DEFAULT) -> dict[str, Any]:
    """``/openapi/v2`` (JSON): every served kind's schema as Swagger 2.0 definitions."""
    roots = []
    gvks: dict[str, list[dict[str, str]]] = {}
    for r in RESOURCES:
        key = type_of(r.group, r.kind, r.version)
        if key is None or r.virtual or (r.group, r.version) in off:
            continue
        roots.append(key)
        gvks.setdefault(schema_name(key), []).append(_gvk(r))
    definitions = _schemas(roots, "#/definitions/")
    for name, gv in gvks.items():
        definitions[name]["x-kubernetes-group-version-kind"] = gv
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.37.2"},
        "paths": {},
        "definitions": definitions,
    }
