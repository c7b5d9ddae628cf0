"""A schema node's CEL type as apiextensions-apiserver declares it (``DeclType``,
``apiserver/pkg/cel/common/schemas.go`` ``SchemaDeclType``): the most elements it can hold and the
fewest bytes it serializes to, which the cost model sizes with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.apiextensions.cel.limits import (
    JSON_DATE,
    MAX_DATETIME_JSON,
    MAX_DURATION_JSON,
    MAX_REQUEST_SIZE_BYTES,
    MIN_BOOL,
    MIN_DATETIME_JSON,
    MIN_DURATION_JSON,
    MIN_NUMBER,
    MIN_STRING,
)


@dataclass(slots=True)
class Decl:
    """A ``DeclType``: the CEL type of a schema node, with the most elements (items, properties,
    string length) it can hold and the fewest bytes it serializes to."""

    kind: str  # object, map, list, string, bytes, int, double, bool, dyn, duration, timestamp
    max_elements: int = 0
    min_size: int = 0
    fields: dict[str, Decl] = field(default_factory=dict)
    elem: Decl | None = None
    key: Decl | None = None
    type_name: str = ""  # the checker's name of an opaque type (DRA's google.protobuf.Any, kubernetes.Quantity)

    def member(self, name: str) -> Decl | None:
        """An object's field as a rule names it: a reserved word finds its escaped field too
        (``self.namespace`` or ``self.__namespace__``, ``DeclTypeProvider.FindStructFieldType``
        with ``recognizeKeywordAsFieldName``)."""
        found = self.fields.get(name)
        if found is None and name in RESERVED:
            found = self.fields.get(f"__{name}__")
        return found


# CEL's reserved words: a property so named is ``__name__`` in a rule (apiserver/pkg/cel/escaping.go)
RESERVED = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
_ESCAPES = {".": "__dot__", "-": "__dash__", "/": "__slash__"}


def escape(name: str) -> str | None:
    """A property's name as a rule spells it (``Escape``): a reserved word as ``__namespace__``,
    ``__`` as ``__underscores__``, ``.``, ``-`` and ``/`` as ``__dot__``, ``__dash__`` and
    ``__slash__``; None for a name a rule cannot reach (it starts with a digit or holds another
    character), which is then not declared."""
    if not name or "0" <= name[0] <= "9":
        return None
    if name in RESERVED:
        return f"__{name}__"
    out: list[str] = []
    i = 0
    while i < len(name):
        if name.startswith("__", i):
            out.append("__underscores__")
            i += 2
            continue
        c = name[i]
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif c.isascii() and (c.isalnum() or c == "_"):
            out.append(c)
        else:
            return None
        i += 1
    return "".join(out)


def _max_string(schema: dict[str, Any]) -> int:
    """``estimateMaxStringLengthPerRequest``."""
    if schema.get("x-kubernetes-int-or-string"):
        return MAX_REQUEST_SIZE_BYTES - 2
    return {"duration": MAX_DURATION_JSON, "date": JSON_DATE, "date-time": MAX_DATETIME_JSON}.get(
        str(schema.get("format") or ""), MAX_REQUEST_SIZE_BYTES - 2
    )


def _with_type_and_meta(schema: dict[str, Any]) -> dict[str, Any]:
    """``WithTypeAndObjectMeta``: a resource root declares kind, apiVersion and metadata's names."""
    props = dict(schema.get("properties") or {})
    string = {"type": "string"}
    props["kind"] = string
    props["apiVersion"] = string
    props["metadata"] = {"type": "object", "properties": {"name": string, "generateName": string}}
    return {**schema, "properties": props}


def decl_type(schema: Any, root: bool = False) -> Decl | None:
    """``SchemaDeclType``: None where CEL cannot see the node (no type)."""
    if not isinstance(schema, dict):
        return None
    if schema.get("x-kubernetes-int-or-string"):
        ml = schema.get("maxLength")
        return Decl("dyn", max(int(ml), 0) * 4 if isinstance(ml, int) else _max_string(schema), 1)
    if root:
        schema = _with_type_and_meta(schema)
    t = schema.get("type")
    if t == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            return None
        elem = decl_type(items, bool(items.get("x-kubernetes-embedded-resource")))
        if elem is None:
            return None
        mi = schema.get("maxItems")
        n = max(int(mi), 0) if isinstance(mi, int) else (MAX_REQUEST_SIZE_BYTES - 2) // (elem.min_size + 1)
        return Decl("list", n, 2, elem=elem)
    if t == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            val = decl_type(extra, bool(extra.get("x-kubernetes-embedded-resource")))
            if val is None:
                return None
            mp = schema.get("maxProperties")
            n = max(int(mp), 0) if isinstance(mp, int) else (MAX_REQUEST_SIZE_BYTES - 2) // (val.min_size + 6)
            return Decl("map", n, 2, elem=val, key=Decl("string", 0, MIN_STRING))
        fields: dict[str, Decl] = {}
        required = set(schema.get("required") or ())
        min_size = 2
        for name, prop in (schema.get("properties") or {}).items():
            ft = decl_type(prop, bool(isinstance(prop, dict) and prop.get("x-kubernetes-embedded-resource")))
            spelled = escape(name)
            if ft is None or spelled is None:
                continue
            fields[spelled] = ft
            if name in required and "default" not in prop:
                min_size += len(name) + ft.min_size + 4
        return Decl("object", 0, min_size, fields=fields)
    if t == "string":
        fmt = schema.get("format")
        ml = schema.get("maxLength")
        if fmt == "byte":
            return Decl("bytes", max(int(ml), 0) if isinstance(ml, int) else _max_string(schema), MIN_STRING)
        if fmt == "duration":
            return Decl("duration", _max_string(schema), MIN_DURATION_JSON)
        if fmt == "date":
            return Decl("timestamp", _max_string(schema), JSON_DATE)
        if fmt == "date-time":
            return Decl("timestamp", _max_string(schema), MIN_DATETIME_JSON)
        if isinstance(ml, int):
            n = max(ml, 0) * 4
        elif schema.get("enum"):
            n = max((len(v) for v in schema["enum"] if isinstance(v, str)), default=0)
        else:
            n = _max_string(schema)
        return Decl("string", n, MIN_STRING)
    if t == "boolean":
        return Decl("bool", 0, MIN_BOOL)
    if t == "number":
        return Decl("double", 0, MIN_NUMBER)
    if t == "integer":
        return Decl("int", 0, MIN_NUMBER)
    return None
