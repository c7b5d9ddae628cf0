"""What a request addresses (``Target``: a resource path parsed) and how it is answered:
JSON bodies, ``metav1.Status`` errors, warnings, and the query parameters every verb reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from kubesched.api.errors import ApiError, BadRequest, Invalid
from kubesched.apiserver.handlers.bodies import JSON
from kubesched.apiserver.resources import Resource


@dataclass(slots=True)
class Target:
    """A parsed resource path."""

    resource: Resource
    namespace: str | None  # None: all namespaces (or cluster-scoped)
    name: str | None
    subresource: str


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def respond(body: Any, status: int = 200, content_type: str = JSON) -> web.Response:
    """A JSON response with ``Content-Type: application/json`` exactly (no charset: lightkube
    maps errors to ApiError only then)."""
    resp = web.Response(body=dumps(body), status=status)
    resp.headers["Content-Type"] = content_type
    return resp


def respond_encoded(body: bytes, content_type: str = JSON) -> web.Response:
    """A 200 with a body already encoded as JSON (the OpenAPI documents, kept as bytes)."""
    resp = web.Response(body=body, status=200)
    resp.headers["Content-Type"] = content_type
    return resp


def status_response(err: ApiError) -> web.Response:
    return respond(err.status(), err.code)


def success(code: int = 201) -> web.Response:
    return respond({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}, code)


def parse_bool(value: str | None) -> bool:
    """A boolean query parameter as apimachinery's ``Convert_Slice_string_To_bool`` decodes it:
    absent is false, ``0`` and ``false`` (any case) are false, and anything else is true. RBAC's
    request attributes decode it the same way, so what is authorized is what is served."""
    return value is not None and value != "0" and value.lower() != "false"


def wants_table(accept: str) -> bool:
    for part in accept.split(","):
        params = {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in part.split(";")[1:])}
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return True
    return False


def int_param(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BadRequest(f"invalid {name}: {text!r} is not an integer") from None


def with_warnings(resp: Callable[[], web.Response], warnings: list[str]) -> web.Response:
    """The response ``resp()`` makes with one ``Warning: 299 - "<text>"`` header per warning, as
    kube-apiserver sends them; a refusal carries them too (on the ApiError, for its Status)."""
    try:
        out = resp()
    except ApiError as exc:
        exc.warnings.extend(warnings)
        raise
    for w in warnings:
        out.headers.add("Warning", f"299 - {json.dumps(w)}")
    return out


def dry_run(request: web.Request) -> bool:
    values = request.query.getall("dryRun", [])
    for v in values:
        if v != "All":
            raise Invalid(f'dryRun: Unsupported value: "{v}": supported values: "All"')
    return bool(values)
