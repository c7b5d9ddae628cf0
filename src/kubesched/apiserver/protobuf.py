"""Request bodies in Kubernetes' protobuf encoding (``application/vnd.kubernetes.protobuf``), which
kubectl 1.33's typed generators send (``kubectl create namespace``, ``create configmap``,
``create priorityclass``, ``create poddisruptionbudget``, ``create service``) and the policy/v1
Eviction of ``kubectl drain``.

The envelope (apimachinery ``runtime/serializer/protobuf``) is the magic ``k8s\\x00`` then a
``runtime.Unknown``: typeMeta (apiVersion, kind), raw (the object's message), contentEncoding,
contentType. Objects are decoded to the JSON form the rest of the server handles, for the kinds
and fields listed below (field numbers from the ``generated.proto`` files of k8s.io/api and
k8s.io/apimachinery). Go marshals every non-pointer field, empty ones included; as in JSON, empty
strings, zero numbers (unless the JSON field has no ``omitempty``) and empty objects are left out.
Responses stay JSON, which clients accept ("application/vnd.kubernetes.protobuf,application/json").
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    """A body that is not a protobuf message of a known kind."""


class UnsupportedKind(ProtobufError):
    pass


# field number -> (JSON name, type); types: str, bytes, int, bool, time, intstr, map, map_bytes,
# or a message name; a list type (``[T]``) is a repeated field; ``keep`` keeps a zero value
Field = tuple[str, str]
SCHEMAS: dict[str, dict[int, Field]] = {
    # runtime/generated.proto
    "Unknown": {
        1: ("typeMeta", "TypeMeta"),
        2: ("raw", "bytes"),
        3: ("contentEncoding", "str"),
        4: ("contentType", "str"),
    },
    "TypeMeta": {1: ("apiVersion", "str"), 2: ("kind", "str")},
    # map<K, V> fields travel as repeated entries {key = 1, value = 2}
    "MapEntry": {1: ("key", "str"), 2: ("value", "str")},
    "MapBytesEntry": {1: ("key", "str"), 2: ("value", "bytes")},
    # meta/v1 Time; util/intstr IntOrString (type 0: intVal, 1: strVal)
    "Time": {1: ("seconds", "int"), 2: ("nanos", "int")},
    "IntOrString": {1: ("type", "int"), 2: ("intVal", "int keep"), 3: ("strVal", "str")},
    # meta/v1/generated.proto
    "ObjectMeta": {
        1: ("name", "str"),
        2: ("generateName", "str"),
        3: ("namespace", "str"),
        4: ("selfLink", "str"),
        5: ("uid", "str"),
        6: ("resourceVersion", "str"),
        7: ("generation", "int"),
        8: ("creationTimestamp", "time"),
        9: ("deletionTimestamp", "time"),
        10: ("deletionGracePeriodSeconds", "int"),
        11: ("labels", "map"),
        12: ("annotations", "map"),
        13: ("ownerReferences", "[OwnerReference]"),
        14: ("finalizers", "[str]"),
    },
    "OwnerReference": {
        1: ("kind", "str"),
        3: ("name", "str"),
        4: ("uid", "str"),
        5: ("apiVersion", "str"),
        6: ("controller", "bool"),
        7: ("blockOwnerDeletion", "bool"),
    },
    "LabelSelector": {1: ("matchLabels", "map"), 2: ("matchExpressions", "[LabelSelectorRequirement]")},
    "LabelSelectorRequirement": {1: ("key", "str"), 2: ("operator", "str"), 3: ("values", "[str]")},
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "int keep"),
        2: ("preconditions", "Preconditions"),
        3: ("orphanDependents", "bool"),
        4: ("propagationPolicy", "str"),
        5: ("dryRun", "[str]"),
    },
    "Preconditions": {1: ("uid", "str"), 2: ("resourceVersion", "str")},
    # core/v1/generated.proto
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec"), 3: ("status", "NamespaceStatus")},
    "NamespaceSpec": {1: ("finalizers", "[str]")},
    "NamespaceStatus": {1: ("phase", "str")},
    "ConfigMap": {
        1: ("metadata", "ObjectMeta"),
        2: ("data", "map"),
        3: ("binaryData", "map_bytes"),
        4: ("immutable", "bool"),
    },
    "Service": {1: ("metadata", "ObjectMeta"), 2: ("spec", "ServiceSpec")},
    "ServiceSpec": {
        1: ("ports", "[ServicePort]"),
        2: ("selector", "map"),
        3: ("clusterIP", "str"),
        4: ("type", "str"),
        5: ("externalIPs", "[str]"),
        7: ("sessionAffinity", "str"),
        10: ("externalName", "str"),
        11: ("externalTrafficPolicy", "str"),
        17: ("ipFamilyPolicy", "str"),
        18: ("clusterIPs", "[str]"),
        19: ("ipFamilies", "[str]"),
        22: ("internalTrafficPolicy", "str"),
    },
    "ServicePort": {
        1: ("name", "str"),
        2: ("protocol", "str"),
        3: ("port", "int keep"),
        4: ("targetPort", "intstr"),
        5: ("nodePort", "int"),
        6: ("appProtocol", "str"),
    },
    # scheduling/v1/generated.proto
    "PriorityClass": {
        1: ("metadata", "ObjectMeta"),
        2: ("value", "int keep"),
        3: ("globalDefault", "bool"),
        4: ("description", "str"),
        5: ("preemptionPolicy", "str"),
    },
    # policy/v1/generated.proto
    "PodDisruptionBudget": {1: ("metadata", "ObjectMeta"), 2: ("spec", "PodDisruptionBudgetSpec")},
    "PodDisruptionBudgetSpec": {
        1: ("minAvailable", "intstr"),
        2: ("selector", "LabelSelector"),
        3: ("maxUnavailable", "intstr"),
        4: ("unhealthyPodEvictionPolicy", "str"),
    },
    "Eviction": {1: ("metadata", "ObjectMeta"), 2: ("deleteOptions", "DeleteOptions")},
}
KINDS = {
    ("v1", "Namespace"),
    ("v1", "ConfigMap"),
    ("v1", "Service"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("policy/v1", "PodDisruptionBudget"),
    ("policy/v1", "Eviction"),
}


def decode(body: bytes) -> dict[str, Any]:
    """The object of a protobuf request body, as its JSON form."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the protobuf body does not start with the k8s envelope")
    unknown = _message(body[len(MAGIC) :], "Unknown")
    type_meta = unknown.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    if (api_version, kind) not in KINDS:
        raise UnsupportedKind(f"{kind or 'an object'} ({api_version or 'no apiVersion'})")
    if unknown.get("contentEncoding"):
        raise ProtobufError(f"content encoding {unknown['contentEncoding']!r} is not supported")
    obj = _message(unknown.get("raw") or b"", kind)
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


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind: str, wire: int, value: Any) -> Any:
    if kind == "str":
        if wire != 2:
            raise ProtobufError("expected a string")
        return bytes(value).decode("utf-8")
    if kind == "bytes":
        return bytes(value)
    if kind == "int":
        if wire != 0:
            raise ProtobufError("expected an integer")
        return _signed(value)
    if kind == "bool":
        return bool(value)
    if kind == "time":
        t = _message(bytes(value), "Time") if isinstance(value, bytes | bytearray) else {}
        seconds = t.get("seconds", 0)
        if not seconds:
            return None
        return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if kind == "intstr":
        v = _message(value, "IntOrString")
        return v.get("strVal", "") if v.get("type") == 1 else v.get("intVal", 0)
    return _message(value, kind)


def _message(data: bytes, name: str) -> dict[str, Any]:
    schema = SCHEMAS[name]
    out: dict[str, Any] = {}
    for number, wire, value in _fields(bytes(data)):
        spec = schema.get(number)
        if spec is None:
            continue  # a field this server does not read
        key, kind = spec
        keep = kind.endswith(" keep")
        kind = kind.removesuffix(" keep")
        if kind in ("map", "map_bytes"):
            entry = _message(value, "MapEntry" if kind == "map" else "MapBytesEntry")
            v = entry.get("value", "" if kind == "map" else b"")
            out.setdefault(key, {})[entry.get("key", "")] = v if kind == "map" else base64.b64encode(v).decode()
        elif kind.startswith("["):
            out.setdefault(key, []).append(_scalar(kind[1:-1], wire, value))
        else:
            v = _scalar(kind, wire, value)
            # an IntOrString is a pointer in Go: present means set, even to 0
            if keep or kind == "intstr" or v not in ("", 0, False, None, {}):
                out[key] = v
    return out
