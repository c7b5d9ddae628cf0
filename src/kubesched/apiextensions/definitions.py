"""CustomResourceDefinitions (apiextensions.k8s.io/v1): the defaults and validation a CRD gets on
its way in (``apis/apiextensions/v1/defaults.go``, ``apis/apiextensions/validation``: the checks
CRD authors meet most), the status the naming and establishing controllers give it, and what an
established CRD serves: one ``CustomResource`` per served version."""

from __future__ import annotations

import json
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.kinds import Resource
from kubesched.api.validation import SUBDOMAIN_MSG, dns_subdomain_errors
from kubesched.apiextensions import patterns, rules, structural
from kubesched.apiextensions.cel import crd as cel_crd
from kubesched.apiextensions.structural import FieldError, Schema, go_shown

KIND = "CustomResourceDefinition"
GROUP = "apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"  # the finalizer controller's
COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
# a CR that declares no printer columns is listed with its age (``printers.go``'s default)
# the verbs a custom resource serves, in the order its discovery lists them
VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")
AGE_COLUMN = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


@dataclass(frozen=True, slots=True)
class Scale:
    """``CustomResourceSubresourceScale``: where a CR keeps its replicas and selector."""

    spec_replicas: str
    status_replicas: str
    label_selector: str | None


@dataclass(frozen=True)
class CustomResource:
    """One served version of an established CRD: the resource as the server routes and lists it,
    its structural schema, its printer columns and its subresources."""

    resource: Resource
    schema: Schema
    columns: tuple[dict[str, Any], ...]
    status: bool
    scale: Scale | None
    crd_name: str
    versions: tuple[str, ...] = field(default=())  # every served version, preferred first
    storage_version: str = ""  # the version whose storage is true (discovery's storageVersionHash)
    list_kind: str = ""
    selectable_fields: tuple[str, ...] = ()  # the version's selectableFields' JSON paths

    @property
    def group_kind(self) -> str:
        return f"{self.resource.kind}.{self.resource.group}"


def default(crd: dict[str, Any]) -> dict[str, Any]:
    """``SetDefaults_CustomResourceDefinition``: listKind and singular from the kind, conversion
    None, served/storage flags as given; the status a new CRD starts with."""
    spec = dict(crd.get("spec") or {})
    names = dict(spec.get("names") or {})
    if names.get("kind") and not names.get("listKind"):
        names["listKind"] = f"{names['kind']}List"
    if names.get("kind") and not names.get("singular"):
        names["singular"] = str(names["kind"]).lower()
    spec["names"] = names
    spec.setdefault("conversion", {"strategy": "None"})
    return {**crd, "spec": spec}


def initial_status(crd: dict[str, Any]) -> dict[str, Any]:
    """What a create stores as status: nothing accepted yet, the storage version stored."""
    storage = [v.get("name") for v in _versions(crd) if isinstance(v, dict) and v.get("storage")]
    return {"conditions": None, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": storage}


def established_status(crd: dict[str, Any], now: str) -> dict[str, Any]:
    """The naming controller's NamesAccepted and the establishing controller's Established."""
    names = (crd.get("spec") or {}).get("names") or {}
    status = dict(crd.get("status") or {})
    status["conditions"] = [
        {
            "type": "NamesAccepted",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "NoConflicts",
            "message": "no conflicts found",
        },
        {
            "type": "Established",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
        },
    ]
    status["acceptedNames"] = dict(names)
    return status


def is_established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions if isinstance(c, dict))


def _versions(crd: dict[str, Any]) -> list[Any]:
    versions = (crd.get("spec") or {}).get("versions")
    return versions if isinstance(versions, list) else []


def _go_versions(versions: list[Any]) -> str:
    """The versions as ``field.Invalid`` prints the internal Go structs."""
    out = []
    for v in versions:
        v = v if isinstance(v, dict) else {}
        out.append(
            {
                "Name": v.get("name", ""),
                "Served": bool(v.get("served")),
                "Storage": bool(v.get("storage")),
                "Deprecated": bool(v.get("deprecated")),
                "DeprecationWarning": v.get("deprecationWarning"),
                "Schema": None,
                "Subresources": None,
                "AdditionalPrinterColumns": None,
                "SelectableFields": None,
            }
        )
    return json.dumps(out, separators=(",", ":"))


def validate(crd: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
    """``ValidateCustomResourceDefinition``: the name, group, scope, names, versions, each
    version's schema (present, structural, defaults valid), printer columns, and a protected
    group's API approval (``old``: the stored CRD, on an update)."""
    errors: list[FieldError] = []
    meta = crd.get("metadata") or {}
    spec = crd.get("spec") or {}
    name = str(meta.get("name") or "")
    names = spec.get("names") or {}
    group = str(spec.get("group") or "")
    plural = str(names.get("plural") or "")

    def invalid(path: str, value: Any, detail: str, shown: str | None = None) -> None:
        errors.append(FieldError(path, "FieldValueInvalid", f"Invalid value: {shown or go_shown(value)}: {detail}"))

    def required(path: str, detail: str = "") -> None:
        errors.append(FieldError(path, "FieldValueRequired", "Required value" + (f": {detail}" if detail else "")))

    if name and dns_subdomain_errors(name):
        invalid("metadata.name", name, SUBDOMAIN_MSG)
    if name != f"{plural}.{group}":
        invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
    if not group:
        required("spec.group")
    elif "." not in group:
        invalid("spec.group", group, "should be a domain with at least one dot")
    scope = spec.get("scope")
    if not scope:
        required("spec.scope")
    elif scope not in ("Cluster", "Namespaced"):
        errors.append(
            FieldError(
                "spec.scope",
                "FieldValueNotSupported",
                f'Unsupported value: {go_shown(scope)}: supported values: "Cluster", "Namespaced"',
            )
        )
    for key in ("plural", "singular", "kind", "listKind"):
        value = names.get(key)
        if not value:
            required(f"spec.names.{key}")
            continue
        if key in ("plural", "singular") and not _DNS1035.match(str(value)):
            invalid(f"spec.names.{key}", value, DNS1035_MSG)
    versions = _versions(crd)
    storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
    if len(storage) != 1:
        invalid(
            "spec.versions", versions, "must have exactly one version marked as storage version", _go_versions(versions)
        )
        invalid("status.storedVersions", None, "must have at least one stored version", "null")
    seen: set[str] = set()
    for i, v in enumerate(versions):
        if not isinstance(v, dict):
            continue
        vname = str(v.get("name") or "")
        if not vname:
            required(f"spec.versions[{i}].name")
        elif vname in seen:
            errors.append(
                FieldError(f"spec.versions[{i}].name", "FieldValueDuplicate", f"Duplicate value: {go_shown(vname)}")
            )
        seen.add(vname)
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            required(f"spec.versions[{i}].schema.openAPIV3Schema")
            continue
        shape = shape_errors(schema, f"spec.versions[{i}].schema.openAPIV3Schema")
        if shape:  # the keywords' values are not what JSONSchemaProps holds: nothing more to check
            errors.extend(shape)
            continue
        status_on = "status" in (v.get("subresources") or {})
        structural_errors = _structural_errors(schema, status_on)
        errors.extend(structural_errors)
        if not structural_errors:  # upstream types and costs rules only on a schema CEL can type
            errors.extend(cel_crd.cel_errors(schema, cel_crd.SCHEMA_PATH))
        for j, column in enumerate(v.get("additionalPrinterColumns") or []):
            if not isinstance(column, dict):
                continue
            at = f"spec.additionalPrinterColumns[{j}]"
            if column.get("type") not in COLUMN_TYPES:
                invalid(f"{at}.type", column.get("type"), "must be one of " + ",".join(COLUMN_TYPES))
            path = column.get("jsonPath")
            if not isinstance(path, str) or not path.startswith("."):
                invalid(f"{at}.JSONPath", path, "must be a simple json path starting with .")
            if not column.get("name"):
                required(f"{at}.name")
    errors.extend(_approval_errors(crd, old))
    return errors


APPROVAL = "api-approved.kubernetes.io"
_APPROVAL_PR = "see https://github.com/kubernetes/enhancements/pull/1111"


def _approval_state(crd: dict[str, Any] | None) -> str:
    """``GetAPIApprovalState``: missing, bypassed (``unapproved...``), approved (a URL), invalid."""
    value = str(((crd or {}).get("metadata") or {}).get("annotations", {}).get(APPROVAL) or "")
    if not value:
        return "missing"
    if value.startswith("unapproved"):
        return "bypassed"
    parsed = urllib.parse.urlsplit(value)
    return "approved" if parsed.scheme and parsed.netloc and value.startswith(f"{parsed.scheme}:") else "invalid"


def _approval_errors(crd: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """``validateAPIApproval``: a group under k8s.io or kubernetes.io needs the approval
    annotation (a URL, or a reason starting with "unapproved"), unless an update leaves its state
    as it was."""
    group = str((crd.get("spec") or {}).get("group") or "")
    if not (group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))):
        return []
    state = _approval_state(crd)
    if (old is not None and _approval_state(old) == state) or state in ("approved", "bypassed"):
        return []
    at = f"metadata.annotations[{APPROVAL}]"
    if state == "missing":
        why = f'protected groups must have approval annotation "{APPROVAL}", {_APPROVAL_PR}'
        return [FieldError(at, "FieldValueRequired", f"Required value: {why}")]
    value = (crd.get("metadata") or {}).get("annotations", {}).get(APPROVAL)
    why = (
        f'protected groups must have approval annotation "{APPROVAL}" with either a URL or a reason starting '
        f'with "unapproved", {_APPROVAL_PR}'
    )
    return [FieldError(at, "FieldValueInvalid", f"Invalid value: {go_shown(value)}: {why}")]


# what each keyword of a schema holds (``JSONSchemaProps``' Go types), for the ones kubesched reads
_SCALARS: dict[str, tuple[type, ...]] = {
    "type": (str,),
    "format": (str,),
    "pattern": (str,),
    "description": (str,),
    "title": (str,),
    "maximum": (int, float),
    "minimum": (int, float),
    "multipleOf": (int, float),
    "exclusiveMaximum": (bool,),
    "exclusiveMinimum": (bool,),
    "nullable": (bool,),
    "uniqueItems": (bool,),
    "maxLength": (int,),
    "minLength": (int,),
    "maxItems": (int,),
    "minItems": (int,),
    "maxProperties": (int,),
    "minProperties": (int,),
    "x-kubernetes-int-or-string": (bool,),
    "x-kubernetes-preserve-unknown-fields": (bool,),
    "x-kubernetes-embedded-resource": (bool,),
    "x-kubernetes-list-type": (str,),
}
_SHOWN = {(str,): "a string", (int,): "an integer", (int, float): "a number", (bool,): "a boolean"}


def shape_errors(schema: Any, path: str) -> list[FieldError]:
    """A schema whose keywords hold values of the wrong JSON type (``properties`` not a map of
    schemas, ``enum`` not a list...), which kube-apiserver cannot even decode: one error each,
    naming the keyword (checked before anything reads the schema)."""
    errors: list[FieldError] = []

    def wrong(at: str, value: Any, what: str) -> None:
        errors.append(FieldError(at, "FieldValueInvalid", f"Invalid value: {go_shown(value)}: must be {what}"))

    def walk(node: Any, at: str) -> None:
        if not isinstance(node, dict):
            wrong(at, node, "a schema (an object)")
            return
        for key, kinds in _SCALARS.items():
            value = node.get(key)
            if key in node and (not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool))):
                wrong(f"{at}.{key}", value, _SHOWN[kinds])
        for key in ("required", "enum", "x-kubernetes-list-map-keys", "x-kubernetes-validations"):
            if key in node and not isinstance(node[key], list):
                wrong(f"{at}.{key}", node[key], "an array")
        for key in ("required", "x-kubernetes-list-map-keys"):
            if isinstance(node.get(key), list) and not all(isinstance(x, str) for x in node[key]):
                wrong(f"{at}.{key}", node[key], "an array of strings")
        validations = node.get("x-kubernetes-validations")
        for i, rule in enumerate(validations if isinstance(validations, list) else []):
            if not isinstance(rule, dict):
                wrong(f"{at}.x-kubernetes-validations[{i}]", rule, "a rule (an object)")
        props = node.get("properties")
        if "properties" in node and not isinstance(props, dict):
            wrong(f"{at}.properties", props, "a map of schemas")
        elif isinstance(props, dict):
            for name, sub in props.items():
                walk(sub, f"{at}.properties[{name}]")
        if "items" in node:
            walk(node["items"], f"{at}.items")
        extra = node.get("additionalProperties")
        if "additionalProperties" in node and not isinstance(extra, bool):
            walk(extra, f"{at}.additionalProperties")

    walk(schema, path)
    return errors


def _structural_errors(schema: Schema, status_on: bool) -> list[FieldError]:
    """``ValidateStructural`` and the defaults check, with upstream's paths (its internal
    ``spec.validation`` names)."""
    errors: list[FieldError] = []
    root = "spec.validation.openAPIV3Schema"
    t = schema.get("type")
    if t != "object":
        if status_on:
            errors.append(
                FieldError(
                    f"{root}.type",
                    "FieldValueInvalid",
                    f'Invalid value: {go_shown(t)}: only "object" is allowed as the type at the root of the schema '
                    "if the status subresource is enabled",
                )
            )
        errors.append(
            FieldError(f"{root}.type", "FieldValueInvalid", f"Invalid value: {go_shown(t)}: must be object at the root")
        )
    _walk(schema, root, errors)
    return errors


SCHEMA_TYPES = ("array", "boolean", "integer", "number", "object", "string")


def _walk(schema: Schema, path: str, errors: list[FieldError]) -> None:
    kind = schema.get("type")
    if kind and kind not in SCHEMA_TYPES and path != "spec.validation.openAPIV3Schema":
        supported = ", ".join(f'"{t}"' for t in SCHEMA_TYPES)
        errors.append(
            FieldError(
                f"{path}.type",
                "FieldValueNotSupported",
                f"Unsupported value: {go_shown(kind)}: supported values: {supported}",
            )
        )
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and pattern:
        try:
            patterns.compiled(pattern)
        except patterns.PatternError as exc:
            errors.append(
                FieldError(
                    f"{path}.pattern",
                    "FieldValueInvalid",
                    f"Invalid value: {go_shown(pattern)}: must be a valid regular expression, but isn't: {exc}",
                )
            )
    for i, rule in enumerate(schema.get("x-kubernetes-validations") or []):
        text = rule.get("rule") if isinstance(rule, dict) else None
        at = f"{path}.x-kubernetes-validations[{i}].rule"
        if not isinstance(text, str) or not text:
            errors.append(FieldError(at, "FieldValueRequired", "Required value"))
            continue
        try:
            rules.compiled(text)
        except rules.RuleError as exc:  # (the parser's words are cel-python's, not cel-go's)
            errors.append(
                FieldError(
                    at, "FieldValueInvalid", f"Invalid value: {cel_crd.go_rule(rule)}: compilation failed: {exc}"
                )
            )
    for key, sub in (schema.get("properties") or {}).items():
        if not isinstance(sub, dict):
            continue
        at = f"{path}.properties[{key}]"
        if (
            not sub.get("type")
            and not sub.get("x-kubernetes-int-or-string")
            and not sub.get("x-kubernetes-preserve-unknown-fields")
        ):
            errors.append(
                FieldError(
                    f"{at}.type", "FieldValueRequired", "Required value: must not be empty for specified object fields"
                )
            )
        if "default" in sub:
            for e in structural.validate_value(sub, sub["default"]):
                errors.append(FieldError(f"{at}.default", e.reason, e.message))
        _walk(sub, at, errors)
    items = schema.get("items")
    if isinstance(items, dict):
        if (
            not items.get("type")
            and not items.get("x-kubernetes-int-or-string")
            and not items.get("x-kubernetes-preserve-unknown-fields")
        ):
            errors.append(
                FieldError(
                    f"{path}.items.type",
                    "FieldValueRequired",
                    "Required value: must not be empty for specified array items",
                )
            )
        _walk(items, f"{path}.items", errors)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        _walk(extra, f"{path}.additionalProperties", errors)


def served(crd: dict[str, Any]) -> list[CustomResource]:
    """The versions an established CRD serves, storage version's first among equals as listed."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = str(spec.get("group") or "")
    name = str((crd.get("metadata") or {}).get("name") or "")
    versions = [v for v in _versions(crd) if isinstance(v, dict) and v.get("served")]
    order = tuple(str(v.get("name")) for v in versions)
    storage = next((str(v.get("name")) for v in _versions(crd) if isinstance(v, dict) and v.get("storage")), "")
    out = []
    for v in versions:
        subresources = v.get("subresources") or {}
        scale_spec = subresources.get("scale")
        scale = (
            Scale(
                str(scale_spec.get("specReplicasPath") or ""),
                str(scale_spec.get("statusReplicasPath") or ""),
                scale_spec.get("labelSelectorPath"),
            )
            if isinstance(scale_spec, dict)
            else None
        )
        subs = tuple(s for s in ("status", "scale") if s in subresources)
        resource = Resource(
            group,
            str(v.get("name")),
            str(names.get("plural") or ""),
            str(names.get("kind") or ""),
            spec.get("scope") == "Namespaced",
            str(names.get("singular") or ""),
            tuple(names.get("shortNames") or ()),
            tuple(names.get("categories") or ()),
            subs,
            storage_kind=name,
            verbs=VERBS,
            custom=True,
        )
        columns = tuple(v.get("additionalPrinterColumns") or (AGE_COLUMN,))
        schema = (v.get("schema") or {}).get("openAPIV3Schema") or {}
        selectable = tuple(str(f.get("jsonPath") or "") for f in v.get("selectableFields") or () if isinstance(f, dict))
        list_kind = str(names.get("listKind") or f"{resource.kind}List")
        out.append(
            CustomResource(
                resource, schema, columns, "status" in subresources, scale, name, order, storage, list_kind, selectable
            )
        )
    return out
