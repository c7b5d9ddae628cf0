"""The OpenAPI documents the embedded API server serves, without a kube-apiserver at hand (the
comparison with one is in test_upstream_discovery.py): every served kind has a document with its
schema, every reference resolves, what is not served is taken out with what only it reached, and a
CRD's schema is published for v3 and v2 as apiextensions-apiserver publishes it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubesched.apiextensions.definitions import default, served
from kubesched.apiserver.handlers import openapi
from kubesched.apiserver.openapi import custom
from kubesched.apiserver.openapi.prune import keep_paths, resource_of
from kubesched.apiserver.resources import RESOURCES


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        out = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        for v in node.values():
            out += _refs(v)
        return out
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def test_every_served_kind_has_a_complete_v3_document():
    index = openapi.v3_index(off=frozenset())["paths"]  # every gate on
    default_index = openapi.v3_index()["paths"]
    assert "apis/scheduling.k8s.io/v1beta1" in index
    assert "apis/scheduling.k8s.io/v1beta1" not in default_index  # GenericWorkload is off by default
    for r in RESOURCES:
        if r.virtual:
            continue
        entry = _gv_path(r.group, r.version)
        body = openapi.v3_lookup(entry.split("/"), off=frozenset())
        assert body is not None, entry
        assert index[entry]["serverRelativeURL"].endswith(openapi._digest(body))
        doc = json.loads(body)
        schemas = doc["components"]["schemas"]
        gvk = {"group": r.group, "kind": r.kind, "version": r.version}
        owners = [s for s in schemas.values() if gvk in s.get("x-kubernetes-group-version-kind", [])]
        assert len(owners) == 1, r.kind
        assert all(ref.removeprefix("#/components/schemas/") in schemas for ref in _refs(doc))
        base = "/" + entry + ("/namespaces/{namespace}" if r.namespaced else "")
        create = doc["paths"][f"{base}/{r.plural}"].get("post")
        # kubectl leaves field validation to a server that documents fieldValidation on its writes
        if "create" in r.verbs:
            assert any(p["name"] == "fieldValidation" for p in create["parameters"]), r.plural


def test_not_served_paths_and_what_only_they_reach_are_left_out():
    # certificates.k8s.io is not served: no document, no path in v2
    assert openapi.v3_lookup(["apis", "certificates.k8s.io", "v1"]) is None
    v2 = json.loads(openapi.v2_document())
    assert not [p for p in v2["paths"] if "certificates.k8s.io" in p or p.startswith("/logs/")]
    assert not [d for d in v2["definitions"] if d.startswith("io.k8s.api.certificates.")]
    assert all(ref.split("/", 2)[1] in ("definitions", "parameters") for ref in _refs(v2))
    assert all(ref.split("/")[-1] in v2[ref.split("/")[1]] for ref in _refs(v2))
    # networking.k8s.io/v1 is served without ipaddresses and servicecidrs
    doc = json.loads(openapi.v3_lookup(["apis", "networking.k8s.io", "v1"]) or b"{}")
    assert "/apis/networking.k8s.io/v1/ingresses" in doc["paths"]
    assert not [p for p in doc["paths"] if "ipaddresses" in p or "servicecidrs" in p]
    assert "io.k8s.api.networking.v1.ServiceCIDR" not in doc["components"]["schemas"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/api/v1/namespaces/{namespace}/pods/{name}/log", ("v1", "pods/log")),
        ("/api/v1/watch/namespaces/{namespace}/pods", ("v1", "pods")),
        ("/api/v1/namespaces/{name}/finalize", ("v1", "namespaces/finalize")),
        ("/api/v1/namespaces", ("v1", "namespaces")),
        ("/api/v1/nodes/{name}/proxy/{path}", ("v1", "nodes/proxy")),
        ("/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", ("apps/v1", "deployments/scale")),
        ("/apis/apps/v1/", None),
        ("/apis/apps/", None),
        ("/version/", None),
    ],
)
def test_resource_of_a_path(path, expected):
    assert resource_of(path) == expected


def test_keep_paths_prunes_only_what_no_kept_path_reaches():
    doc = {
        "paths": {"/a": {"$ref": "#/components/schemas/A"}, "/b": {"$ref": "#/components/schemas/B"}},
        "components": {
            "schemas": {
                "A": {"$ref": "#/components/schemas/Shared"},
                "B": {"$ref": "#/components/schemas/Shared"},
                "Shared": {},
            }
        },
    }
    assert keep_paths(doc, lambda p: True) is doc
    kept = keep_paths(doc, lambda p: p == "/a")
    assert list(kept["paths"]) == ["/a"]
    assert set(kept["components"]["schemas"]) == {"A", "Shared"}


@pytest.mark.parametrize(
    ("text", "capitalize", "expected"),
    [
        ("scheduling.x-k8s", True, "SchedulingXK8s"),
        ("scheduling.x-k8s", False, "schedulingXK8s"),
        ("gateway.networking", True, "GatewayNetworking"),
        ("v1alpha1", True, "V1alpha1"),
        ("v1-beta", False, "v1Beta"),
        ("1abc", False, "Abc"),  # a leading digit is dropped and capitalises what follows
    ],
)
def test_operation_id(text, capitalize, expected):
    assert custom.operation_id(text, capitalize) == expected


def _crd(schema: dict[str, Any], group: str = "stable.example.com", **version: Any) -> dict[str, Any]:
    return default(
        {
            "metadata": {"name": f"widgets.{group}"},
            "spec": {
                "group": group,
                "scope": "Cluster",
                "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [
                    {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}, **version}
                ],
            },
        }
    )


def test_a_crds_schema_for_v3_and_v2():
    schema = {
        "type": "object",
        "required": ["spec", "maybe"],
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "port": {"x-kubernetes-int-or-string": True},
                    "size": {"type": "integer", "default": 3},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "x-kubernetes-preserve-unknown-fields": True,
                    },
                    "pod": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": True,
                        "x-kubernetes-preserve-unknown-fields": True,
                    },
                },
            },
            "maybe": {"type": "string", "nullable": True},
        },
    }
    (cr,) = served(_crd(schema, selectableFields=[{"jsonPath": ".spec.size"}]))
    v3 = custom.kind_schema(cr, v2=False)
    spec3 = v3["properties"]["spec"]["properties"]
    assert spec3["port"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert spec3["size"]["default"] == 3
    assert v3["properties"]["maybe"] == {"type": "string", "nullable": True}
    assert set(spec3["pod"]["properties"]) == {"apiVersion", "kind", "metadata"}
    assert spec3["pod"]["required"] == ["kind", "apiVersion"]
    assert v3["x-kubernetes-selectable-fields"] == [{"fieldPath": "spec.size"}]
    assert list(v3)[:3] == ["description", "type", "required"] or list(v3)[:2] == ["type", "required"]
    v2 = custom.kind_schema(cr, v2=True)
    spec2 = v2["properties"]["spec"]["properties"]
    assert spec2["port"] == {"x-kubernetes-int-or-string": True}  # no anyOf in v2
    assert "default" not in spec2["size"]
    assert spec2["tags"] == {"x-kubernetes-preserve-unknown-fields": True}  # no items, so no type
    assert spec2["pod"] == {"x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}
    assert v2["properties"]["maybe"] == {}  # nullable: untyped
    assert v2["required"] == ["spec"]  # a nullable field is not required in v2
    assert v2["properties"]["metadata"]["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def test_a_crds_paths_come_from_the_template_with_its_names():
    (cr,) = served(_crd({"type": "object"}, group="gateway.networking.k8s.io", subresources={"status": {}}))
    doc = custom.v3_document([cr])
    assert sorted(doc["paths"]) == [
        "/apis/gateway.networking.k8s.io/v1/widgets",
        "/apis/gateway.networking.k8s.io/v1/widgets/{name}",
        "/apis/gateway.networking.k8s.io/v1/widgets/{name}/status",
    ]
    text = json.dumps(doc)
    assert "zq" not in text.lower()
    get = doc["paths"]["/apis/gateway.networking.k8s.io/v1/widgets/{name}"]["get"]
    assert get["operationId"] == "readGatewayNetworkingV1Widget"
    assert get["tags"] == ["gatewayNetworking_v1"]
    assert "io.k8s.api.autoscaling.v1.Scale" not in doc["components"]["schemas"]  # no scale subresource
    assert {"io.k8s.networking.gateway.v1.Widget", "io.k8s.networking.gateway.v1.WidgetList"} <= set(
        doc["components"]["schemas"]
    )
