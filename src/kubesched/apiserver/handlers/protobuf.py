"""Request bodies in Kubernetes' protobuf encoding (``application/vnd.kubernetes.protobuf``), which
kubectl's typed generators send (``kubectl create deployment``, ``create job``, ``create namespace``,
``create configmap``...) and the policy/v1 Eviction of ``kubectl drain``.

The envelope (apimachinery ``runtime/serializer/protobuf``) is the magic ``k8s\\x00`` then a
``runtime.Unknown``: typeMeta (apiVersion, kind), raw (the object's message), contentEncoding,
contentType. Objects are decoded to the JSON form the rest of the server handles, for every kind
served, with the field numbers and types of the ``generated.proto`` files of k8s.io/api and
k8s.io/apimachinery (``protobuf.json``, made by ``scripts/gen_protobuf_schema.py``). Go marshals
every non-pointer field, empty ones included; as in JSON, zero values are left out unless the
field is a pointer or its JSON form has no ``omitempty``. Responses stay JSON, which clients accept
("application/vnd.kubernetes.protobuf,application/json").
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
from functools import cache
from pathlib import Path
from typing import Any

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
_META = "k8s.io.apimachinery.pkg.apis.meta.v1."
UNKNOWN = "k8s.io.apimachinery.pkg.runtime.Unknown"
QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension"


class ProtobufError(ValueError):
    """A body that is not a protobuf message of a known kind."""


class UnsupportedKind(ProtobufError):
    pass


@cache
def _schema() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(Path(__file__).with_name("protobuf.json").read_text())
    return doc


def field_shape(api_version: str, kind: str, path: tuple[str, ...]) -> tuple[str, bool] | None:
    """The Go field a FieldsV1 path (``f:`` fields, ``k:`` keyed items) ends at: its type in the
    generated.proto's terms and whether JSON keeps its zero value (a pointer, or no omitempty);
    None where the schema does not reach."""
    doc = _schema()
    message = doc["kinds"].get(f"{api_version} {kind}")
    type_, keep = message, True
    for el in path:
        if el.startswith("k:"):
            continue  # the keyed item is the list's element message, already stepped into
        if not el.startswith("f:") or message is None:
            return None
        fields = doc["messages"].get(message) or {}
        found = next((f for f in fields.values() if f[0] == el[2:]), None)
        if found is None:
            return None
        type_, flags = found[1], found[2] if len(found) > 2 else ""
        keep = "keep" in flags
        if "repeated" in flags:
            type_ = "repeated " + type_
        message = found[1] if found[1] in doc["messages"] else None
    return type_, keep


def kinds() -> list[str]:
    """The ``apiVersion kind`` pairs a protobuf body may hold."""
    return sorted(_schema()["kinds"])


def decode(body: bytes) -> dict[str, Any]:
    """The object of a protobuf request body, as its JSON form."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the protobuf body does not start with the k8s envelope")
    unknown = _message(body[len(MAGIC) :], UNKNOWN)
    type_meta = unknown.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    message = _schema()["kinds"].get(f"{api_version} {kind}")
    if message is None:
        raise UnsupportedKind(f"{kind or 'an object'} ({api_version or 'no apiVersion'})")
    if unknown.get("contentEncoding"):
        raise ProtobufError(f"content encoding {unknown['contentEncoding']!r} is not supported")
    raw = base64.b64decode(unknown.get("raw") or "")
    obj = _message(raw, message)
    return {"apiVersion": api_version, "kind": kind, **obj}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ProtobufError("truncated varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(number, wire type, value) of each field: ints for varints and fixed, bytes for the rest."""
    out, pos = [], 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            value, pos = data[pos : pos + size], pos + size
        elif wire == 1:
            value, pos = int.from_bytes(data[pos : pos + 8], "little"), pos + 8
        elif wire == 5:
            value, pos = int.from_bytes(data[pos : pos + 4], "little"), pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        if pos > len(data):
            raise ProtobufError("truncated field")
        out.append((number, wire, value))
    return out


def _signed(value: int, bits: int = 64) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _duration(nanos: int) -> str:
    """Go's ``time.Duration.String`` for whole units (what metav1.Duration marshals to)."""
    if nanos == 0:
        return "0s"
    sign, n = ("-", -nanos) if nanos < 0 else ("", nanos)
    seconds, frac = divmod(n, 1_000_000_000)
    h, rest = divmod(seconds, 3600)
    m, sec = divmod(rest, 60)
    tail = f"{sec}.{frac:09d}".rstrip("0").rstrip(".") + "s"
    if h:
        return f"{sign}{h}h{m}m{tail}"
    if m:
        return f"{sign}{m}m{tail}"
    return sign + tail


def _time(value: bytes, micro: bool) -> str | None:
    t = _message(value, _META + "Time")
    seconds, nanos = t.get("seconds", 0), t.get("nanos", 0)
    if not seconds and not nanos:
        return None
    when = dt.datetime.fromtimestamp(seconds, dt.UTC)
    if micro:
        return when.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos // 1000:06d}Z"
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _value(type_: str, wire: int, value: Any) -> Any:
    if type_ == "string":
        if wire != 2:
            raise ProtobufError("expected a string")
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise ProtobufError("a string field is not UTF-8") from None
    if type_ == "bytes":
        if wire != 2:
            raise ProtobufError("expected bytes")
        return base64.b64encode(bytes(value)).decode()
    if type_ in ("int32", "int64", "uint32", "uint64"):
        if wire != 0:
            raise ProtobufError("expected an integer")
        return _signed(value) if type_.startswith("int") else value
    if type_ == "bool":
        return bool(value)
    if type_ in ("double", "float"):
        if wire == 1:
            return struct.unpack("<d", int(value).to_bytes(8, "little"))[0]
        if wire == 5:
            return struct.unpack("<f", int(value).to_bytes(4, "little"))[0]
        raise ProtobufError("expected a number")
    if wire != 2:
        raise ProtobufError(f"expected a {type_.rsplit('.', 1)[-1]} message")
    data = bytes(value)
    if type_ == QUANTITY:
        return _message(data, QUANTITY).get("string", "0")
    if type_ in (_META + "Time", _META + "MicroTime"):
        return _time(data, type_.endswith("MicroTime"))
    if type_ == _META + "Duration":
        return _duration(_message(data, type_).get("duration", 0))
    if type_ == INT_OR_STRING:
        v = _message(data, INT_OR_STRING)
        return v.get("strVal", "") if v.get("type") == 1 else v.get("intVal", 0)
    if type_ in (RAW_EXTENSION, _META + "FieldsV1"):
        raw = base64.b64decode(_message(data, type_).get("raw", "") or "")
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            raise ProtobufError("an embedded object is not JSON") from None
    return _message(data, type_)


def _empty(v: Any) -> bool:
    return v in ("", 0, False, None) or v == {}


def _message(data: bytes, name: str) -> dict[str, Any]:
    schema = _schema()["messages"].get(name)
    if schema is None:
        raise ProtobufError(f"no schema for {name}")
    out: dict[str, Any] = {}
    for number, wire, value in _fields(bytes(data)):
        spec = schema.get(str(number))
        if spec is None:
            continue  # a field this release does not know
        key, type_ = spec[0], spec[1]
        flags = spec[2] if len(spec) > 2 else ""
        if type_.startswith("map<"):
            _, value_type = type_[4:-1].split(",", 1)
            entry = _fields(bytes(value)) if wire == 2 else []
            k = next((bytes(v).decode("utf-8", "replace") for n, _, v in entry if n == 1), "")
            v = next((_value(value_type, w, v) for n, w, v in entry if n == 2), None)
            if v is None:
                v = "" if value_type in ("string", "bytes") else ({} if "." in value_type else 0)
            out.setdefault(key, {})[k] = v
        elif "repeated" in flags:
            out.setdefault(key, []).append(_value(type_, wire, value))
        else:
            v = _value(type_, wire, value)
            if "keep" in flags or not _empty(v):
                out[key] = v
    return out
