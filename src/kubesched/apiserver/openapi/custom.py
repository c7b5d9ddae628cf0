"""A CRD's OpenAPI paths and schemas as apiextensions-apiserver builds them
(``pkg/controller/openapi/builder/builder.go``): the routes of a custom resource are the same for
every CRD of a scope but for its names, so they come from a template CRD recorded from
kube-apiserver (``scripts/gen_openapi.py``) with the names substituted; the kind's own schema is
the CRD's structural schema published for OpenAPI v3 (int-or-string unfolded) or v2
(``v2/conversion.go``: no junctors, nullable and preserve-unknown-fields untyped, no defaults)."""

from __future__ import annotations

import json
from typing import Any

from kubesched.apiextensions.definitions import CustomResource
from kubesched.apiserver.openapi import recorded
from kubesched.apiserver.openapi.prune import V3_SCHEMAS, reachable

TEMPLATE_GROUPS = {"Namespaced": "zqnamespaced.zqexample.com", "Cluster": "zqcluster.zqexample.com"}
TEMPLATE_NAMES = {
    "version": "zqversion",
    "kind": "Zqkind",
    "listKind": "ZqkindList",
    "plural": "zqkinds",
    "singular": "zqkind",
}
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# builder.go's addEmbeddedProperties: an embedded resource's own descriptions of apiVersion and kind
_EMBEDDED_DOCS = {
    "apiVersion": "apiVersion defines the versioned schema of this representation of an object. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
    "kind": "kind is a string value representing the type of this object. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
}
_NOT_STRUCTURAL = ("example", "externalDocs", "id", "$schema", "definitions")
# kube-openapi ``spec.Schema``'s MarshalJSON: SchemaProps in field order, then the extensions (a
# map: sorted), then $ref, then SwaggerSchemaProps (validation/spec/schema.go)
_SCHEMA_PROPS = [
    "id",
    "description",
    "type",
    "nullable",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
]
_SWAGGER_PROPS = ("discriminator", "readOnly", "externalDocs", "example")
# apiextensions ``ValidationRule``'s fields in order (x-kubernetes-validations' entries)
_RULE_FIELDS = ("rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf")


def operation_id(s: str, capitalize: bool) -> str:
    """``ToValidOperationID`` (apiserver ``endpoints/openapi/openapi.go``): letters, ``_`` and
    digits not first kept; anything else dropped and the next kept letter upper-cased."""
    out = []
    upper = capitalize
    for i, c in enumerate(s):
        if c.isalpha() or c == "_" or (i and c.isdigit()):
            out.append(c.upper() if upper else c)
            upper = False
        else:
            upper = True
    return "".join(out)


def article(noun: str) -> str:
    """``GetArticleForNoun`` (apiserver ``endpoints/installer.go``) padded with spaces: none for a
    plural-looking noun (ending in s but not ss), else a or an by the first letter."""
    if noun.endswith("s") and not noun.endswith("ss"):
        return " "
    return " an " if noun[:1].lower() in "aeiou" else " a "


def schema_name(group: str, version: str, kind: str) -> str:
    """``builder.go``'s name of a custom kind: the group reversed, the version, the kind
    (``com.example.stable.v1.CronTab``)."""
    return ".".join(reversed(group.split("."))) + f".{version}.{kind}"


def _substitutions(cr: CustomResource) -> list[tuple[str, str]]:
    """The template's names, in every form a document spells them, and this resource's, longest
    first (``GetOperationIDAndTags``: the group without ``.k8s.io`` in operation ids and tags)."""
    r = cr.resource
    template = TEMPLATE_GROUPS["Namespaced" if r.namespaced else "Cluster"]
    names = TEMPLATE_NAMES

    def forms(group: str, version: str) -> list[str]:
        trimmed = group.removesuffix(".k8s.io")
        return [
            ".".join(reversed(group.split("."))),
            group,
            operation_id(trimmed, True),
            operation_id(trimmed, False),
            "_" + operation_id(version, False),
            operation_id(version, True),
            version,
        ]

    pairs = list(zip(forms(template, names["version"]), forms(r.group, r.version), strict=True))
    pairs += [
        (f" a {names['kind']}", article(r.kind) + r.kind),  # "create a …", "delete a …"
        (names["listKind"], cr.list_kind or f"{r.kind}List"),
        (names["kind"], r.kind),
        (names["plural"], r.plural),
        (names["singular"], r.singular),
    ]
    return pairs


def _named(text: str, cr: CustomResource) -> Any:
    for old, new in _substitutions(cr):
        text = text.replace(old, new)
    return json.loads(text)


def _subresource_kept(path: str, cr: CustomResource) -> bool:
    if path.endswith("/status"):
        return cr.status
    if path.endswith("/scale"):
        return cr.scale is not None
    return True


def _unfold(schema: Any) -> Any:
    """``Structural.Unfold`` and ``ToKubeOpenAPI``: an int-or-string without its anyOf pattern gets
    ``anyOf: [integer, string]`` (or that first in an ``allOf``); keys a structural schema does not
    hold dropped."""
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k not in _NOT_STRUCTURAL}
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: _unfold(v) for k, v in schema["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out[key] = _unfold(schema[key])
    if schema.get("x-kubernetes-int-or-string"):
        pattern = [{"type": "integer"}, {"type": "string"}]
        if "anyOf" not in schema:
            out = {"anyOf": pattern, **out}
        elif schema["anyOf"] != pattern and (schema.get("allOf") or [{}])[0].get("anyOf") != pattern:
            out["allOf"] = [{"anyOf": pattern}, *(schema.get("allOf") or [])]
    return out


def _to_v2(schema: Any) -> Any:
    """``ToStructuralOpenAPIV2`` and ``PruneDefaults``: what OpenAPI v2 cannot say taken out."""
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k not in ("allOf", "oneOf", "anyOf", "not", "default")}
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: _to_v2(v) for k, v in schema["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out[key] = _to_v2(schema[key])
    if out.pop("nullable", False):
        out.pop("type", None)
        out.pop("items", None)
        out.pop("properties", None)
    if out.get("x-kubernetes-preserve-unknown-fields"):
        out.pop("items", None)
        out.pop("properties", None)
    if out.get("type") == "array" and "items" not in out:
        out.pop("type")
    if out.get("x-kubernetes-preserve-unknown-fields") and out.get("type") == "object":
        out.pop("type")
    props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    required = [f for f in out.get("required") or [] if not (props.get(f) or {}).get("nullable")]
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict) and additional.get("nullable"):
        required = []
    if "required" in out:
        if required:
            out["required"] = required
        else:
            out.pop("required")
    return out


def _type_meta(v2: bool) -> dict[str, Any]:
    """apiVersion, kind and metadata as the template's kind schema has them (``addTypeMetaProperties``)."""
    template = recorded.crd_template(True)
    if v2:
        defs = template["v2"]["definitions"]
        kind = defs[schema_name(TEMPLATE_GROUPS["Namespaced"], TEMPLATE_NAMES["version"], TEMPLATE_NAMES["kind"])]
    else:
        doc = json.loads(template["v3"])
        name = schema_name(TEMPLATE_GROUPS["Namespaced"], TEMPLATE_NAMES["version"], TEMPLATE_NAMES["kind"])
        kind = doc["components"]["schemas"][name]
    props: dict[str, Any] = kind["properties"]
    return {k: props[k] for k in ("apiVersion", "kind", "metadata")}


def _embedded(schema: Any, meta: dict[str, Any], v2: bool) -> Any:
    """``addEmbeddedProperties``: an ``x-kubernetes-embedded-resource`` object gets apiVersion, kind
    (with their own descriptions) and metadata, and requires kind and apiVersion; not in v2 where it
    also preserves unknown fields."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: _embedded(v, meta, v2) for k, v in schema["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out[key] = _embedded(schema[key], meta, v2)
    if v2 and schema.get("x-kubernetes-preserve-unknown-fields"):
        return out
    if schema.get("x-kubernetes-embedded-resource"):
        props = dict(out.get("properties") or {})
        for field in ("apiVersion", "kind"):
            props[field] = {**meta[field], "description": _EMBEDDED_DOCS[field]}
        props["metadata"] = meta["metadata"]
        out["properties"] = dict(sorted(props.items()))
        required = list(out.get("required") or [])
        out["required"] = required + [f for f in ("kind", "apiVersion") if f not in required]
    return out


def go_order(schema: Any) -> Any:
    """A schema with its keys in the order kube-openapi writes them, nested schemas too."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key in (*_SCHEMA_PROPS, *sorted(k for k in schema if k.startswith("x-")), "$ref", *_SWAGGER_PROPS):
        if key not in schema:
            continue
        value = schema[key]
        if key in ("properties", "patternProperties"):
            value = {k: go_order(v) for k, v in sorted(value.items())}
        elif key in ("items", "additionalProperties", "not"):
            value = go_order(value)
        elif key in ("allOf", "oneOf", "anyOf"):
            value = [go_order(v) for v in value]
        elif key == "x-kubernetes-validations" and isinstance(value, list):
            value = [{f: r[f] for f in _RULE_FIELDS if f in r} if isinstance(r, dict) else r for r in value]
        out[key] = value
    return out


def kind_schema(cr: CustomResource, v2: bool) -> dict[str, Any]:
    """``buildKubeNative``: the CRD's schema with apiVersion, kind and metadata, and the group
    version kind (and selectable fields) extensions."""
    r = cr.resource
    schema: dict[str, Any]
    if not cr.schema or (v2 and cr.schema.get("x-kubernetes-preserve-unknown-fields")):
        schema = {"type": "object"}
    else:
        meta = _type_meta(v2)
        published = _unfold(cr.schema)
        if v2:
            published = _to_v2(published)
        published = _embedded(published, meta, v2)
        props = {**(published.get("properties") or {}), **meta}
        schema = {**published, "properties": dict(sorted(props.items()))}
    schema["x-kubernetes-group-version-kind"] = [{"group": r.group, "kind": r.kind, "version": r.version}]
    return _with_selectable_fields(schema, cr)


def _with_selectable_fields(schema: dict[str, Any], cr: CustomResource) -> dict[str, Any]:
    """``buildSelectableFields``: the kind's and its List's schema name the version's selectable
    fields (CustomResourceFieldSelectors, GA)."""
    if cr.selectable_fields:
        fields = [{"fieldPath": f.removeprefix(".")} for f in cr.selectable_fields]
        schema = {**schema, "x-kubernetes-selectable-fields": fields}
    return dict(go_order(schema))


def _list_name(cr: CustomResource) -> str:
    r = cr.resource
    return schema_name(r.group, r.version, cr.list_kind or f"{r.kind}List")


def v3_document(served: list[CustomResource]) -> dict[str, Any]:
    """The ``/openapi/v3`` document of a custom group version: each kind's routes, its schema, its
    List and the meta types they reach (``openapiv3/controller.go`` merges a version's CRDs)."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    doc: dict[str, Any] = {}
    for cr in served:
        r = cr.resource
        template = recorded.crd_template(r.namespaced)
        doc = _named(template["v3"], cr)
        paths.update({p: v for p, v in doc["paths"].items() if _subresource_kept(p, cr)})
        schemas.update(doc["components"]["schemas"])
        schemas[schema_name(r.group, r.version, r.kind)] = kind_schema(cr, v2=False)
        schemas[_list_name(cr)] = _with_selectable_fields(schemas[_list_name(cr)], cr)
    reached = reachable([paths], {V3_SCHEMAS: schemas})
    kept = {k: schemas[k] for k in sorted(schemas) if V3_SCHEMAS + k in reached}
    components = {**doc.get("components", {}), "schemas": kept}
    return {**doc, "paths": dict(sorted(paths.items())), "components": components}


def v2_parts(cr: CustomResource) -> tuple[dict[str, Any], dict[str, Any]]:
    """The paths and definitions a served CRD version adds to ``/openapi/v2``."""
    r = cr.resource
    template = recorded.crd_template(r.namespaced)
    parts = _named(json.dumps(template["v2"]), cr)
    paths = {p: v for p, v in parts["paths"].items() if _subresource_kept(p, cr)}
    definitions = dict(parts["definitions"])
    definitions[schema_name(r.group, r.version, r.kind)] = kind_schema(cr, v2=True)
    definitions[_list_name(cr)] = _with_selectable_fields(definitions[_list_name(cr)], cr)
    return paths, definitions


def merged_v2(doc: dict[str, Any], custom: list[CustomResource]) -> dict[str, Any]:
    """``/openapi/v2`` with every served CRD version's paths and definitions merged in."""
    if not custom:
        return doc
    paths, definitions = dict(doc["paths"]), dict(doc["definitions"])
    for cr in custom:
        more_paths, more_definitions = v2_parts(cr)
        paths.update(more_paths)
        definitions.update(more_definitions)
    return {**doc, "paths": dict(sorted(paths.items())), "definitions": dict(sorted(definitions.items()))}
