"""kube-apiserver v1.37.2 judges CustomResourceDefinitions: the same CRD and custom resources are
sent to it and to ``kubesched apiserver``, and each answer must agree: a refused CRD's message and
causes, a custom resource pruned (with the same warnings), defaulted and stored alike, each
refusal's code, reason, message and causes (several causes compared as sets: kube-openapi walks Go
maps in random order), the status and scale subresources, printer columns in a Table, discovery,
the OpenAPI schema ``kubectl explain`` reads, and a CRD's deletion taking its objects along."""

from __future__ import annotations

import copy
import json
import ssl
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from tests.live import Server
from tests.upstream import ADMIN_TOKEN, ControlPlane

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "crontabs.stable.example.com"},
    "spec": {
        "group": "stable.example.com",
        "scope": "Namespaced",
        "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.labelSelector",
                    },
                },
                "additionalPrinterColumns": [
                    {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec", "description": "the schedule"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Image", "type": "string", "priority": 1, "jsonPath": ".spec.image"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "description": "A CronTab runs an image on a schedule.",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["cronSpec"],
                                "properties": {
                                    "cronSpec": {
                                        "type": "string",
                                        "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$",
                                    },
                                    "image": {"type": "string", "maxLength": 20, "minLength": 1},
                                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                                    "policy": {"type": "string", "enum": ["Allow", "Forbid"], "default": "Allow"},
                                    "ratio": {"type": "number", "exclusiveMaximum": True, "maximum": 1},
                                    "port": {"x-kubernetes-int-or-string": True},
                                    "tags": {
                                        "type": "array",
                                        "maxItems": 2,
                                        "items": {"type": "string"},
                                        "x-kubernetes-list-type": "set",
                                    },
                                    "nums": {
                                        "type": "array",
                                        "items": {"type": "integer"},
                                        "x-kubernetes-list-type": "set",
                                    },
                                    "ports": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name", "protocol"],
                                        "items": {
                                            "type": "object",
                                            "required": ["name"],
                                            "properties": {
                                                "name": {"type": "string"},
                                                "protocol": {"type": "string", "default": "TCP"},
                                                "port": {"type": "integer"},
                                            },
                                        },
                                    },
                                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                    "flag": {"type": "boolean"},
                                    "when": {"type": "string", "format": "date-time"},
                                    "note": {"type": "string", "nullable": True},
                                    "items": {
                                        "type": "array",
                                        "minItems": 1,
                                        "items": {
                                            "type": "object",
                                            "required": ["n"],
                                            "properties": {"n": {"type": "integer", "minimum": 0}},
                                        },
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "replicas": {"type": "integer"},
                                    "labelSelector": {"type": "string"},
                                    "phase": {"type": "string"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}
BASE = "/apis/stable.example.com/v1/namespaces/default/crontabs"


def crontab(name: str, spec: Any, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": name}, "spec": spec, **extra}


class Upstream:
    """kube-apiserver over HTTPS, keeping each answer's Warning headers."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.ctx = ssl.create_default_context()
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE  # its self-signed serving certificate
        self.warnings: list[str] = []

    def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json", accept: str = ""
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": content_type}
        if accept:
            headers["Accept"] = accept
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.plane.server + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as resp:
                self.warnings = resp.headers.get_all("Warning") or []
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            self.warnings = err.headers.get_all("Warning") or []
            payload = err.read()
            try:
                return err.code, json.loads(payload or b"null")
            except ValueError:  # its mux's "404 page not found" for a path nothing serves
                return err.code, {"text": payload.decode()}


class Ours:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.warnings: list[str] = []

    def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json", accept: str = ""
    ) -> tuple[int, Any]:
        headers = {"Accept": accept} if accept else None
        code, out = self.server.request(method, path, body, content_type=content_type, headers=headers)
        self.warnings = self.server.last_headers.get_all("Warning") or []
        return code, out


def established(server: Any) -> bool:
    code, crd = server.request(
        "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD['metadata']['name']}"
    )
    conditions = (crd.get("status") or {}).get("conditions") or [] if code == 200 else []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    plane = ControlPlane(tmp_path_factory.mktemp("upstream-crd")).start()
    server = Server(tmp_path_factory.mktemp("kubesched-crd") / "data").start()
    theirs, ours = Upstream(plane), Ours(server)
    try:
        for side in (theirs, ours):
            code, _ = side.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
            assert code == 201
            deadline = time.monotonic() + 30
            while not established(side):
                assert time.monotonic() < deadline, "the CRD was never Established"
                time.sleep(0.2)
            time.sleep(0.5 if side is theirs else 0)  # its handler serves the resource moments after
        yield theirs, ours
    finally:
        server.stop()
        plane.stop()


def verdict(code: int, body: Any, warnings: list[str]) -> dict[str, Any]:
    """What must agree: a refusal's Status (causes as a set), else the stored spec and status."""
    if code >= 400:
        causes = (body.get("details") or {}).get("causes") or []
        return {
            "code": code,
            "reason": body.get("reason"),
            "message": body["message"] if len(causes) <= 1 else sorted(f"{c['field']}: {c['message']}" for c in causes),
            "causes": sorted(json.dumps(c, sort_keys=True) for c in causes),
            "details": {k: v for k, v in (body.get("details") or {}).items() if k != "causes"},
            "warnings": warnings,
        }
    return {"code": code, "spec": body.get("spec"), "status": body.get("status"), "warnings": warnings}


def both(servers: tuple[Any, Any], method: str, path: str, body: Any = None, **kw: Any) -> tuple[dict, dict]:
    theirs, ours = servers
    expected = verdict(*theirs.request(method, path, copy.deepcopy(body), **kw), theirs.warnings)
    got = verdict(*ours.request(method, path, copy.deepcopy(body), **kw), ours.warnings)
    return expected, got


CREATES = [
    (
        "pruned and defaulted",
        "",
        crontab(
            "ok",
            {"cronSpec": "* * * * */5", "image": "x", "extra": 1, "free": {"a": {"b": 1}}},
            status={"phase": "x"},
            junk=1,
        ),
    ),
    ("strict", "?fieldValidation=Strict", crontab("strict", {"cronSpec": "* * * * *", "extra": 1}, junk=1)),
    (
        "every check",
        "",
        crontab(
            "bad",
            {
                "cronSpec": "nope",
                "image": "abcdefghijklmnopqrstuvwxyz",
                "replicas": 0,
                "policy": "Maybe",
                "ratio": 1,
                "port": True,
                "tags": ["a", "b", "c"],
                "labels": {"a": 1},
                "flag": "yes",
                "when": "yesterday",
                "note": None,
            },
        ),
    ),
    ("required and types", "", crontab("req", {"image": "", "tags": [1], "items": [{"n": -1}, {}, {"n": 1, "m": 2}]})),
    (
        "too few items",
        "",
        crontab("few", {"cronSpec": "* * * * *", "items": [], "note": None, "flag": None, "port": "http"}),
    ),
    ("above maximum", "", crontab("max", {"cronSpec": "* * * * *", "replicas": 11})),
    (
        "repeated in a set or a map list",
        "",
        crontab(
            "dups",
            {
                "cronSpec": "* * * * *",
                "tags": ["a", "a"],
                "nums": [1, 2, 1, 1],
                "ports": [{"name": "x", "port": 1}, {"name": "x", "protocol": "TCP"}, {"name": "x", "protocol": "UDP"}],
            },
        ),
    ),
    ("spec of the wrong type", "", crontab("ts", "x")),
    ("bad name", "", crontab("Bad_Name", {"cronSpec": "* * * * *"})),
    ("other kind", "", {**crontab("wk", {"cronSpec": "* * * * *"}), "kind": "Other"}),
    (
        "fine",
        "",
        crontab("fine", {"cronSpec": "1 2 * * *", "port": 8080, "ratio": 0.5, "when": "2026-11-27T10:00:00Z"}),
    ),
]


@pytest.mark.parametrize("name,query,body", CREATES, ids=[c[0] for c in CREATES])
def test_custom_resources_are_admitted_and_refused_alike(servers, name: str, query: str, body: dict) -> None:
    expected, got = both(servers, "POST", BASE + query, body)
    assert got == expected


BAD_CRDS = [
    ("name mismatch", lambda c: c["metadata"].update(name="wrong.stable.example.com")),
    ("no schema", lambda c: c["spec"]["versions"][0].pop("schema")),
    ("no storage version", lambda c: c["spec"]["versions"][0].update(storage=False)),
    (
        "a property without a type",
        lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].pop("type"),
    ),
    ("group without a dot", lambda c: (c["spec"].update(group="stable"), c["metadata"].update(name="crontabs.stable"))),
    ("unknown scope", lambda c: c["spec"].update(scope="Global")),
    ("no kind", lambda c: c["spec"]["names"].pop("kind")),
    ("root not an object", lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"].update(type="string")),
    (
        "a default its schema refuses",
        lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
            "replicas"
        ].update(default=50),
    ),
    ("no versions", lambda c: c["spec"].update(versions=[])),
]


@pytest.mark.parametrize("name,change", BAD_CRDS, ids=[c[0] for c in BAD_CRDS])
def test_invalid_definitions_are_refused_alike(servers, name: str, change: Any) -> None:
    crd = copy.deepcopy(CRD)
    crd["metadata"]["name"] = "others.stable.example.com"
    crd["spec"]["names"] = {"plural": "others", "kind": "Other"}
    change(crd)
    expected, got = both(servers, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All", crd)
    assert expected["code"] == 422
    assert got == expected


def test_status_scale_patches_and_tables_agree(servers) -> None:
    theirs, ours = servers
    for side in (theirs, ours):
        assert side.request("POST", BASE, crontab("sub", {"cronSpec": "* * * * *", "image": "img"}))[0] == 201
    steps: list[tuple[str, str, Any, dict[str, Any]]] = [
        ("GET", "/sub/scale", None, {}),
        (
            "PUT",
            "/sub/scale",
            {
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": "sub", "namespace": "default"},
                "spec": {"replicas": 5},
            },
            {},
        ),
        (
            "PUT",
            "/sub/scale",
            {
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": "sub", "namespace": "default"},
                "spec": {"replicas": 50},
            },
            {},
        ),
        ("PATCH", "/sub", {"spec": {"replicas": -1}}, {"content_type": "application/merge-patch+json"}),
        ("PATCH", "/sub", {"spec": {"replicas": 2}}, {"content_type": "application/strategic-merge-patch+json"}),
        (
            "PATCH",
            "/sub/status",
            {"status": {"phase": "Running", "replicas": 2, "labelSelector": "app=x"}},
            {"content_type": "application/merge-patch+json"},
        ),
        (
            "PATCH",
            "/sub",
            {"spec": {"image": "other"}, "status": {"phase": "Ignored"}},
            {"content_type": "application/merge-patch+json"},
        ),
        ("GET", "/sub/scale", None, {}),
        ("PUT", "/sub", crontab("sub", {"cronSpec": "1 * * * *"}), {}),
        ("GET", "/nope", None, {}),
    ]
    for method, sub, body, kw in steps:
        expected = theirs.request(method, BASE + sub, copy.deepcopy(body), **kw)
        got = ours.request(method, BASE + sub, copy.deepcopy(body), **kw)
        if expected[1].get("kind") == "Scale":
            for scale in (expected[1], got[1]):
                scale["metadata"] = {k: scale["metadata"].get(k) for k in ("name", "namespace")}
        assert verdict(*got, []) == verdict(*expected, []), (method, sub)
        if expected[1].get("kind") == "Scale":
            assert got[1] == expected[1], (method, sub)
    table = "application/json;as=Table;v=v1;g=meta.k8s.io"
    expected = theirs.request("GET", BASE + "?labelSelector=", accept=table)[1]
    got = ours.request("GET", BASE + "?labelSelector=", accept=table)[1]
    assert [c["name"] for c in got["columnDefinitions"]] == [c["name"] for c in expected["columnDefinitions"]]
    assert [(c["type"], c["priority"]) for c in got["columnDefinitions"]] == [
        (c["type"], c["priority"]) for c in expected["columnDefinitions"]
    ]
    assert [c["description"] for c in got["columnDefinitions"][1:]] == [
        c["description"] for c in expected["columnDefinitions"][1:]
    ]
    rows = lambda t: sorted(r["cells"][:3] + r["cells"][4:] for r in t["rows"])  # noqa: E731 (Age: the clocks differ)
    assert rows(got) == rows(expected)


def test_discovery_and_openapi_agree(servers) -> None:
    theirs, ours = servers
    for path in ("/apis/stable.example.com", "/apis/stable.example.com/v1"):
        code, expected = theirs.request("GET", path)
        assert ours.request("GET", path) == (code, expected)  # storageVersionHash included
    expected = theirs.request("GET", "/openapi/v3/apis/stable.example.com/v1")[1]["components"]["schemas"]
    got = ours.request("GET", "/openapi/v3/apis/stable.example.com/v1")[1]["components"]["schemas"]
    name = "com.example.stable.v1.CronTab"
    assert got[name]["properties"]["spec"] == expected[name]["properties"]["spec"]
    assert got[name]["x-kubernetes-group-version-kind"] == expected[name]["x-kubernetes-group-version-kind"]
    assert sorted(got[name]["properties"]) == sorted(expected[name]["properties"])


def test_deleting_the_definition_deletes_its_objects(servers) -> None:
    theirs, ours = servers
    for side in (theirs, ours):
        crd = copy.deepcopy(CRD)
        crd["metadata"]["name"] = "gones.stable.example.com"
        crd["spec"]["names"] = {"plural": "gones", "kind": "Gone"}
        assert side.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)[0] == 201
        deadline = time.monotonic() + 30
        path = "/apis/stable.example.com/v1/namespaces/default/gones"
        while side.request("POST", path, {**crontab("g", {"cronSpec": "* * * * *"}), "kind": "Gone"})[0] != 201:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        code, body = side.request(
            "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gones.stable.example.com"
        )
        assert code == 200 and body["kind"] == "CustomResourceDefinition"
        deadline = time.monotonic() + 30
        while (
            side.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gones.stable.example.com")[0]
            != 404
        ):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert side.request("GET", path)[0] == 404


RULES = copy.deepcopy(CRD)
RULES["metadata"]["name"] = "rules.stable.example.com"
RULES["spec"]["names"] = {"plural": "rules", "kind": "Rule"}
_rules_schema = RULES["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
_rules_schema["x-kubernetes-validations"] = [{"rule": "self.metadata.name != 'forbidden'", "message": "not that name"}]
_rules_schema["properties"]["spec"]["x-kubernetes-validations"] = [
    {"rule": "self.replicas <= 5", "message": "replicas must be at most 5"},
    {"rule": "!has(self.image) || self.image.startsWith('my')"},
    {
        "rule": "self.cronSpec != 'x'",
        "messageExpression": "'cronSpec is ' + self.cronSpec",
        "fieldPath": ".cronSpec",
        "reason": "FieldValueForbidden",
    },
    {"rule": "self.replicas >= oldSelf.replicas", "message": "replicas may not shrink"},
]
_rules_schema["properties"]["spec"]["properties"]["tags"]["x-kubernetes-validations"] = [
    {"rule": "self.all(t, t.size() < 4)", "message": "short tags"}
]
RULES_PATH = "/apis/stable.example.com/v1/namespaces/default/rules"


def rule_object(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "stable.example.com/v1", "kind": "Rule", "metadata": {"name": name}, "spec": spec}


def test_validation_rules_in_cel_are_enforced_alike(servers) -> None:
    """``x-kubernetes-validations``: a failing rule's message (its message, messageExpression or
    ``failed rule: ...``), fieldPath and reason; rules on the root, an object and a list; a
    transition rule on an update; a CRD whose rule does not compile."""
    theirs, ours = servers
    for side in (theirs, ours):
        assert side.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", RULES)[0] == 201
        deadline = time.monotonic() + 30
        while side.request("GET", RULES_PATH)[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
    steps: list[tuple[str, str, Any, dict[str, Any]]] = [
        (
            "POST",
            "",
            rule_object("ok", {"cronSpec": "* * * * *", "replicas": 3, "image": "mything", "tags": ["a"]}),
            {},
        ),
        (
            "POST",
            "",
            rule_object("forbidden", {"cronSpec": "* * * * *", "replicas": 7, "image": "other", "tags": ["abcd", "a"]}),
            {},
        ),
        ("POST", "", rule_object("pr", {"cronSpec": "x", "replicas": 2}), {}),
        ("PATCH", "/ok", {"spec": {"replicas": 2}}, {"content_type": "application/merge-patch+json"}),
        ("PATCH", "/ok", {"spec": {"replicas": 4}}, {"content_type": "application/merge-patch+json"}),
    ]
    for method, sub, body, kw in steps:
        expected, got = both(servers, method, RULES_PATH + sub, body, **kw)
        assert got == expected, (method, sub, body)
    bad = copy.deepcopy(RULES)
    bad["metadata"]["name"] = "bads.stable.example.com"
    bad["spec"]["names"] = {"plural": "bads", "kind": "Bad"}
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.replicas <=", "message": "m"}
    ]
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All"
    expected, got = theirs.request("POST", path, copy.deepcopy(bad)), ours.request("POST", path, copy.deepcopy(bad))
    assert got[0] == expected[0] == 422
    (want,), (have,) = expected[1]["details"]["causes"], got[1]["details"]["causes"]
    assert (have["field"], have["reason"]) == (want["field"], want["reason"])
    assert have["message"] == want["message"]  # cel-go's words, place and caret for a missing operand
