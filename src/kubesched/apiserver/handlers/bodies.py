"""Request bodies: reading them whole under kube-apiserver's size limit, and decoding them by
content type (JSON, YAML, the protobuf kubectl's generators send).

Upstream reads a body through ``limitedReadBody`` (``apiserver/pkg/endpoints/handlers/rest.go``):
up to ``MaxRequestBodyBytes`` (3 MiB), then 413 ``Request entity too large: limit is N``. Here a
declared Content-Length over the limit is refused before a byte is read, and a chunked body as
soon as its running size passes the limit, so an oversized body never sits in memory.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from aiohttp import web

from kubesched.api.errors import BadRequest, RequestEntityTooLarge, UnsupportedMediaType
from kubesched.apiserver.handlers import protobuf
from kubesched.cluster.loader import YAML_LOADER, check_yaml_structure
from kubesched.errors import InputError

MAX_BODY_BYTES = 3 * 1024 * 1024  # apiserver's MaxRequestBodyBytes
MAX_OBJECT_BYTES = 1536 * 1024  # etcd's default --max-request-bytes: the largest object it stores
JSON = "application/json"
_READ_CHUNK = 64 * 1024


def too_large(limit: int = MAX_BODY_BYTES) -> RequestEntityTooLarge:
    return RequestEntityTooLarge(f"Request entity too large: limit is {limit}")


async def read_body(request: web.Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The whole body, however the client sent it (Content-Length or chunked, in any number of
    TCP segments); 413 once it is larger than ``limit``. After a 413 the rest of the body is
    left unread and the connection is closed (``Connection: close`` on the answer)."""
    declared = request.content_length
    if declared is not None and declared > limit:
        raise too_large(limit)
    parts: list[bytes] = []
    size = 0
    stream = request.content
    while True:
        part = await stream.read(_READ_CHUNK)
        if not part:
            break
        size += len(part)
        if size > limit:
            raise too_large(limit)
        parts.append(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def check_object_size(obj: dict[str, Any]) -> None:
    """An object larger than etcd would store is refused (413) before anything is written; under
    kube-apiserver the same write fails in etcd with ``etcdserver: request is too large``."""
    size = len(orjson.dumps(obj))
    if size > MAX_OBJECT_BYTES:
        raise RequestEntityTooLarge(
            f"Request entity too large: the object is {size} bytes, over the {MAX_OBJECT_BYTES} bytes "
            "etcd stores in one object (etcdserver: request is too large)"
        )


def decode_json(data: bytes) -> Any:
    if not data.strip():
        raise BadRequest("the body of the request is empty")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"the body of the request could not be decoded as JSON: {exc}") from None


def decode_yaml(data: bytes) -> Any:
    """YAML (the apply content type): hostile nesting and alias bombs are refused with 400 by our
    own scan before libyaml composes anything."""
    if not data.strip():
        raise BadRequest("the body of the request is empty")
    try:
        check_yaml_structure(data.decode("utf-8", errors="replace"), "the body of the request")
    except InputError as exc:
        raise BadRequest(f"the body of the request could not be decoded as YAML: {exc.message}") from None
    try:
        return yaml.load(data, Loader=YAML_LOADER)
    except (yaml.YAMLError, RecursionError, UnicodeDecodeError, ValueError) as exc:
        raise BadRequest(f"the body of the request could not be decoded as YAML: {str(exc).splitlines()[0]}") from None


def content_type(request: web.Request, default: str = "") -> str:
    return request.headers.get("Content-Type", default).split(";")[0].strip().lower() or default


async def read_object(request: web.Request, *, yaml_ok: bool = True) -> dict[str, Any]:
    """A body that must be one object, decoded by its Content-Type (415 for any other)."""
    ctype = content_type(request, JSON)
    data = await read_body(request)
    if ctype in (JSON, "*/*", "application/x-www-form-urlencoded"):
        value = decode_json(data)
    elif ctype in ("application/yaml", "application/apply-patch+yaml") and yaml_ok:
        value = decode_yaml(data)
    elif ctype == protobuf.CONTENT_TYPE and yaml_ok:
        try:
            value = protobuf.decode(data)
        except protobuf.UnsupportedKind as exc:
            raise UnsupportedMediaType(
                f"protobuf bodies are decoded for the kinds this server serves, not {exc}; send it as application/json"
            ) from None
        except protobuf.ProtobufError as exc:
            raise BadRequest(f"the body of the request is not valid protobuf: {exc}") from None
    else:
        raise UnsupportedMediaType(
            f"the body of the request was in an unknown format - accepted media types include: "
            f"application/json, application/yaml, application/vnd.kubernetes.protobuf (got {ctype})"
        )
    if not isinstance(value, dict):
        raise BadRequest("the body of the request must be a JSON object")
    return value
