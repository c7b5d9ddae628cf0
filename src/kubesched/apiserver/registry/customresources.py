"""What kube-apiserver's ``crdHandler`` does to custom resources on the way in and out, beside
their strategy (``apiextensions.strategy``): unknown fields pruned under ``fieldValidation``, the
kind checked, the scale subresource's Scale, printer columns as Table cells."""

from __future__ import annotations

from typing import Any

from kubesched.api.errors import BadRequest
from kubesched.apiextensions import structural
from kubesched.apiextensions.definitions import CustomResource
from kubesched.apiextensions.strategy import CRD_KIND, FieldError, invalid, lookup, prepare_update, scaled
from kubesched.apiextensions.structural import go_shown
from kubesched.apiserver.handlers.tables import human_duration
from kubesched.clock import parse_rfc3339

__all__ = [
    "CRD_KIND",
    "PATCH_TYPES",
    "check_kind",
    "decode",
    "prepare_update",
    "printer",
    "pruned",
    "scale_of",
    "scaled",
]

# the patch types a custom resource accepts: no strategic merge (it has no Go struct tags)
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")


INT64 = range(-(2**63), 2**63)


def unstructured(value: Any) -> Any:
    """A copy of a JSON value as the unstructured decoder reads it: an integer outside int64 is a
    float64 (so a schema's ``integer`` refuses it as a ``number``)."""
    if isinstance(value, dict):
        return {k: unstructured(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unstructured(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and value not in INT64:
        try:
            return float(value)
        except OverflowError:
            raise BadRequest(
                f"json: cannot unmarshal number {str(value)[:40]}... into Go value of type float64"
            ) from None
    return value


def decode(cr: CustomResource, body: dict[str, Any], mode: str) -> tuple[dict[str, Any], list[str]]:
    """The body (as ``unstructured`` reads it) pruned to what the schema declares; unknown fields
    refused under Strict, warned of under Warn, dropped always."""
    obj = unstructured(body)
    unknown = structural.prune(cr.schema, obj)
    if not unknown or mode == "Ignore":
        return obj, []
    r = cr.resource
    message = "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in unknown)
    if mode == "Strict":
        raise BadRequest(f'{r.kind} in version "{r.version}" cannot be handled as a {r.kind}: {message}')
    return obj, [f'unknown field "{p}"' for p in unknown]


def pruned(cr: CustomResource, obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` without what the schema does not declare (what storage keeps)."""
    out = unstructured(obj)
    structural.prune(cr.schema, out)
    return out


def check_kind(cr: CustomResource, body: dict[str, Any]) -> None:
    """A body of another kind is a 422 on ``kind`` (the unstructured decoder's check)."""
    r = cr.resource
    kind = body.get("kind")
    if kind is not None and kind != r.kind:
        name = str((body.get("metadata") or {}).get("name") or "")
        field = FieldError("kind", "FieldValueInvalid", f"Invalid value: {go_shown(kind)}: must be {r.kind}")
        raise invalid(str(kind), r.group, name, [field])
    api_version = body.get("apiVersion")
    if api_version is not None and api_version != r.group_version:
        raise BadRequest(
            f"the API version in the data ({api_version}) does not match the expected API version ({r.group_version})"
        )


def scale_of(cr: CustomResource, obj: dict[str, Any]) -> dict[str, Any]:
    """The autoscaling/v1 Scale of a custom resource (``scale.go``): replicas at the CRD's
    paths, the selector string at labelSelectorPath."""
    assert cr.scale is not None
    meta = obj["metadata"]
    _, spec_replicas, _ = lookup(obj, cr.scale.spec_replicas)
    _, status_replicas, _ = lookup(obj, cr.scale.status_replicas)
    status: dict[str, Any] = {"replicas": status_replicas if isinstance(status_replicas, int) else 0}
    if cr.scale.label_selector:
        _, selector, _ = lookup(obj, cr.scale.label_selector)
        if isinstance(selector, str) and selector:
            status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
        },
        "spec": {"replicas": spec_replicas if isinstance(spec_replicas, int) else 0},
        "status": status,
    }


# -- printer columns (``tableconvertor``) ------------------------------------------------------------


def printer(cr: CustomResource) -> tuple[list[dict[str, Any]], Any]:
    """The Table columns of a custom resource: Name, then its printer columns; dates shown as ages."""
    columns = [
        {
            "name": "Name",
            "type": "string",
            "format": "name",
            "description": "Name must be unique within a namespace.",
            "priority": 0,
        }
    ]
    for c in cr.columns:
        columns.append(
            {
                "name": c.get("name", ""),
                "type": c.get("type", "string"),
                "format": c.get("format", ""),
                "description": c.get("description")
                or f"Custom resource definition column (in JSONPath format): {c.get('jsonPath', '')}",
                "priority": int(c.get("priority") or 0),
            }
        )

    def render(obj: dict[str, Any], now: float) -> list[Any]:
        cells: list[Any] = [(obj.get("metadata") or {}).get("name", "")]
        for c in cr.columns:
            found, value, _ = lookup(obj, str(c.get("jsonPath") or ""))
            cells.append(_cell(c.get("type"), value, now) if found else None)
        return cells

    return columns, render


def _cell(kind: Any, value: Any, now: float) -> Any:
    if value is None:
        return None
    if kind == "date" and isinstance(value, str):
        try:
            return human_duration(now - parse_rfc3339(value))
        except ValueError:
            return value
    if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if kind == "boolean" and isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, separators=(",", ":"))
