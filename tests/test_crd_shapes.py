"""A CRD whose schema's keywords hold values of the wrong JSON type (which kube-apiserver cannot
decode) is refused with one 422 naming the keyword, never a 500 or a traceback, and nothing is
stored; a custom resource of a well-formed CRD is then served as usual."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.live import Server
from tests.test_upstream_crd import CRD

from kubesched.api.errors import Invalid
from kubesched.testing import Cluster

ROOT = "spec.versions[0].schema.openAPIV3Schema"
SPEC = f"{ROOT}.properties[spec]"


def schema(crd: dict[str, Any]) -> dict[str, Any]:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


CASES = [
    ("properties a list", lambda s: s.update(properties=[1]), f"{ROOT}.properties", "must be a map of schemas"),
    ("a property a number", lambda s: s["properties"].update(spec=5), SPEC, "must be a schema (an object)"),
    (
        "enum a number",
        lambda s: s["properties"]["spec"]["properties"]["policy"].update(enum=3),
        f"{SPEC}.properties[policy].enum",
        "must be an array",
    ),
    (
        "required a string",
        lambda s: s["properties"]["spec"].update(required="cronSpec"),
        f"{SPEC}.required",
        "must be an array",
    ),
    (
        "maximum a string",
        lambda s: s["properties"]["spec"]["properties"]["replicas"].update(maximum="10"),
        f"{SPEC}.properties[replicas].maximum",
        "must be a number",
    ),
    ("type a number", lambda s: s["properties"]["spec"].update(type=5), f"{SPEC}.type", "must be a string"),
    (
        "items a list",
        lambda s: s["properties"]["spec"]["properties"]["tags"].update(items=[{"type": "string"}]),
        f"{SPEC}.properties[tags].items",
        "must be a schema (an object)",
    ),
    (
        "validations an object",
        lambda s: s.update({"x-kubernetes-validations": {"rule": "true"}}),
        f"{ROOT}.x-kubernetes-validations",
        "must be an array",
    ),
]


@pytest.mark.parametrize(("name", "change", "field", "message"), CASES, ids=[c[0] for c in CASES])
def test_a_malformed_schema_is_refused_naming_the_keyword(name: str, change: Any, field: str, message: str) -> None:
    crd = copy.deepcopy(CRD)
    change(schema(crd))
    c = Cluster()
    with pytest.raises(Invalid) as refused:
        c.create(crd)
    (cause,) = refused.value.details["causes"]
    assert cause["field"] == field and cause["message"].endswith(message)
    assert c.store.list("CustomResourceDefinition")[0] == []


def test_over_http_it_is_a_422_and_the_server_goes_on(tmp_path) -> None:
    server = Server(tmp_path / "data").start()
    try:
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        bad = copy.deepcopy(CRD)
        schema(bad)["properties"] = [1]
        code, body = server.request("POST", path, bad)
        assert code == 422 and body["details"]["causes"][0]["field"] == f"{ROOT}.properties"
        assert server.request("POST", path, CRD)[0] == 201
        cr = {
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {"name": "c"},
            "spec": {"cronSpec": "* * * * *"},
        }
        assert server.request("POST", "/apis/stable.example.com/v1/namespaces/default/crontabs", cr)[0] == 201
    finally:
        server.stop()
