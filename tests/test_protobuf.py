"""Protobuf request bodies: a body kubectl 1.33 sent (``kubectl create namespace foo``, captured
with -v=9) decodes to the object its JSON would be; bad bodies are errors, not crashes."""

from __future__ import annotations

import pytest

from kubesched.apiserver.handlers.protobuf import ProtobufError, UnsupportedKind, decode

# kubectl.1.33 create namespace foo (the request body as -v=9 dumps it)
CREATE_NAMESPACE_FOO = bytes.fromhex(
    "6b 38 73 00 0a 0f 0a 02 76 31 12 09 4e 61 6d 65"
    "73 70 61 63 65 12 1b 0a 13 0a 03 66 6f 6f 12 00"
    "1a 00 22 00 2a 00 32 00 38 00 42 00 12 00 1a 02"
    "0a 00 1a 00 22 00".replace(" ", "")
)


def _len(field: int, payload: bytes) -> bytes:
    return bytes([field << 3 | 2, len(payload)]) + payload


def _varint(field: int, value: int) -> bytes:
    out = bytearray([field << 3])
    while True:
        b = value & 0x7F
        value >>= 7
        out.append(b | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _len(1, api_version.encode()) + _len(2, kind.encode())
    return b"k8s\x00" + _len(1, type_meta) + _len(2, raw)


def test_kubectl_133_create_namespace():
    assert decode(CREATE_NAMESPACE_FOO) == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "foo"}}


def test_maps_intorstring_zero_values_and_labels():
    meta = _len(1, b"web") + _len(11, _len(1, b"app") + _len(2, b"web"))
    selector = _len(1, _len(1, b"app") + _len(2, b"web"))
    min_available = _varint(1, 1) + _len(3, b"50%")
    max_unavailable = _varint(1, 0) + _varint(2, 0)
    spec = _len(1, min_available) + _len(2, selector)
    pdb = _len(1, meta) + _len(2, spec)
    assert decode(_envelope("policy/v1", "PodDisruptionBudget", pdb)) == {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
    }
    pc = _len(1, _len(1, b"zero")) + _varint(2, 0)
    assert decode(_envelope("scheduling.k8s.io/v1", "PriorityClass", pc))["value"] == 0  # value has no omitempty
    pdb2 = _len(1, meta) + _len(2, _len(3, max_unavailable))
    assert decode(_envelope("policy/v1", "PodDisruptionBudget", pdb2))["spec"] == {"maxUnavailable": 0}
    negative = _len(1, _len(1, b"neg")) + _varint(2, (1 << 64) - 5)
    assert decode(_envelope("scheduling.k8s.io/v1", "PriorityClass", negative))["value"] == -5


@pytest.mark.parametrize(
    ("body", "error", "message"),
    [
        (b'{"kind": "Namespace"}', ProtobufError, "does not start with the k8s envelope"),
        (CREATE_NAMESPACE_FOO[:-3], ProtobufError, "truncated"),
        (_envelope("v1", "ComponentStatus", b""), UnsupportedKind, "ComponentStatus (v1)"),
        (b"k8s\x00\x0f", ProtobufError, "unsupported wire type 7"),
    ],
)
def test_bad_bodies(body, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        decode(body)


def test_deployment_pointer_zero_kept_and_quantities():
    """``kubectl create deployment web --image=nginx --replicas=0`` shape: replicas is a pointer,
    so 0 stays; a container's resource requests are Quantity messages; empty non-pointer
    fields (strategy, minReadySeconds) stay out, as their JSON omits them."""
    meta = _len(1, b"web") + _len(11, _len(1, b"app") + _len(2, b"web"))
    quantity = _len(1, b"100m")
    resources = _len(2, _len(1, b"cpu") + _len(2, quantity))
    container = _len(1, b"nginx") + _len(2, b"nginx") + _len(8, resources)
    pod_spec = _len(2, container)
    template = _len(1, _len(11, _len(1, b"app") + _len(2, b"web"))) + _len(2, pod_spec)
    selector = _len(1, _len(1, b"app") + _len(2, b"web"))
    spec = _varint(1, 0) + _len(2, selector) + _len(3, template) + _len(4, b"") + _varint(5, 0)
    obj = decode(_envelope("apps/v1", "Deployment", _len(1, meta) + _len(2, spec)))
    assert obj == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{"name": "nginx", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]
                },
            },
        },
    }
