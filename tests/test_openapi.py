"""The OpenAPI documents the embedded API server serves: every served kind has its schema with
its group-version-kind, every reference resolves, descriptions come from the Go types, and the
write operations advertise fieldValidation (so kubectl leaves validation to the server)."""

from __future__ import annotations

from typing import Any

from kubesched.apiserver.handlers import openapi
from kubesched.apiserver.resources import GATED, RESOURCES


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        out = [node["$ref"]] if "$ref" in node else []
        for v in node.values():
            out += _refs(v)
        return out
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_every_served_kind_has_a_complete_v3_document():
    root = openapi.v3_root(frozenset())["paths"]  # every gate on
    served = {(r.group, r.version) for r in RESOURCES if not r.virtual}
    assert {openapi._gv_path(*gv) for gv in served} <= set(root)
    # with the default gates, the gated group versions are not in the root
    assert {openapi._gv_path(*gv) for gv in GATED} & set(openapi.v3_root()["paths"]) == set()
    for r in RESOURCES:
        if r.virtual:
            continue
        doc = openapi.v3_document(r.group, r.version)
        assert doc is not None
        schemas = doc["components"]["schemas"]
        owners = [
            s
            for s in schemas.values()
            if {"group": r.group, "kind": r.kind, "version": r.version} in s.get("x-kubernetes-group-version-kind", [])
        ]
        assert len(owners) == 1, r.kind
        for ref in _refs(schemas):
            assert ref.removeprefix("#/components/schemas/") in schemas, ref
        ops = [op for path in doc["paths"].values() for op in path.values()]
        assert all(any(p["name"] == "fieldValidation" for p in op["parameters"]) for op in ops)


def test_descriptions_and_types():
    doc = openapi.v3_document("apps", "v1")
    assert doc is not None
    spec = doc["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]
    assert spec["replicas"]["type"] == "integer" and spec["replicas"]["description"].startswith(
        "Number of desired pods."
    )
    assert spec["template"]["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec"}]
    v2 = openapi.v2_document()["definitions"]
    assert v2["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}
    ]
