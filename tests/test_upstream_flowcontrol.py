"""kube-apiserver v1.37.2 is the judge of API Priority and Fairness's configuration API
(flowcontrol.apiserver.k8s.io/v1): the bootstrap FlowSchemas and PriorityLevelConfigurations it
ensures at start are served alike (annotations, spec, the Dangling condition); an object's
defaults are the same; bad objects are refused with the same status and words; the Table
columns are the same; and a request is classified into the same FlowSchema (the response header
naming its UID), whoever sends it, impersonated by the admin."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest
from tests.live import Server
from tests.upstream import ADMIN_TOKEN, AS_KUBESCHED, ControlPlane

GROUP = "/apis/flowcontrol.apiserver.k8s.io/v1"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("flowcontrol")
    plane = ControlPlane(root / "upstream", args=AS_KUBESCHED).start()
    ours = Server(root / "data").start()
    try:
        wait_for_bootstrap(plane)
        yield plane, ours
    finally:
        ours.stop()
        plane.stop()


def wait_for_bootstrap(plane: ControlPlane) -> None:
    """kube-apiserver's ensurer runs once its informers synced: all eleven schemas, conditions written."""
    import time

    for _ in range(120):
        code, body = plane.request("GET", f"{GROUP}/flowschemas")
        items = body.get("items") or [] if code == 200 else []
        if len(items) >= 11 and all((o.get("status") or {}).get("conditions") for o in items):
            return
        time.sleep(0.5)
    raise AssertionError("kube-apiserver made no APF bootstrap configuration")


def send(server: Any, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None):
    """(code, body, response headers) from either server, as its admin."""
    if isinstance(server, ControlPlane):
        base, token = server.server, ADMIN_TOKEN
    else:
        base, token, _ = server._config()
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    if data is not None and "Content-Type" not in (headers or {}):
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"null"), resp.headers
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null"), err.headers


def configuration(server: Any, plural: str) -> dict[str, Any]:
    code, body, _ = send(server, "GET", f"{GROUP}/{plural}")
    assert code == 200, body
    out = {}
    for o in body["items"]:
        conditions = [
            {k: c.get(k) for k in ("type", "status", "reason", "message")}
            for c in (o.get("status") or {}).get("conditions") or []
        ]
        out[o["metadata"]["name"]] = {
            "annotations": o["metadata"].get("annotations"),
            "generation": o["metadata"].get("generation"),
            "spec": o["spec"],
            "conditions": conditions,
        }
    return out


@pytest.mark.parametrize("plural", ["flowschemas", "prioritylevelconfigurations"])
def test_the_bootstrap_configuration_is_upstreams(servers, plural: str) -> None:
    plane, ours = servers
    assert configuration(ours, plural) == configuration(plane, plural)


def fs(name: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": name, **meta},
        "spec": spec,
    }


def plc(name: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name, **meta},
        "spec": spec,
    }


ANYONE = [{"kind": "Group", "group": {"name": "system:authenticated"}}]
GET_X = [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]


def test_defaults_are_upstreams(servers) -> None:
    plane, ours = servers
    objects = [
        (
            "prioritylevelconfigurations",
            plc("defaulted-q", {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}),
        ),
        (
            "prioritylevelconfigurations",
            plc("defaulted-r", {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}),
        ),
        (
            "flowschemas",
            fs(
                "defaulted",
                {
                    "priorityLevelConfiguration": {"name": "defaulted-q"},
                    "rules": [{"subjects": ANYONE, "nonResourceRules": GET_X}],
                },
            ),
        ),
    ]
    for plural, obj in objects:
        answers = []
        for server in (plane, ours):
            code, body, _ = send(server, "POST", f"{GROUP}/{plural}", obj)
            assert code == 201, body
            answers.append((body["spec"], body["metadata"]["generation"], body.get("status")))
        assert answers[1] == answers[0], plural


BAD_FLOW_SCHEMAS = [
    fs(
        "many-wrongs",
        {
            "matchingPrecedence": 1,
            "priorityLevelConfiguration": {"name": ""},
            "distinguisherMethod": {"type": "ByFoo"},
            "rules": [
                {
                    "subjects": [{"kind": "Robot"}],
                    "resourceRules": [
                        {"verbs": ["get", "fly"], "apiGroups": ["*", "apps"], "resources": [], "namespaces": ["Bad_NS"]}
                    ],
                }
            ],
        },
    ),
    fs("too-late", {"matchingPrecedence": 10001, "priorityLevelConfiguration": {"name": "global-default"}}),
    fs("no-subjects", {"priorityLevelConfiguration": {"name": "x"}, "rules": [{"nonResourceRules": GET_X}]}),
    fs("no-rules", {"priorityLevelConfiguration": {"name": "x"}, "rules": [{"subjects": ANYONE}]}),
    fs(
        "subjects",
        {
            "priorityLevelConfiguration": {"name": "x"},
            "rules": [
                {
                    "subjects": [
                        {"kind": "ServiceAccount", "serviceAccount": {"name": "", "namespace": ""}},
                        {"kind": "User", "user": {"name": "u"}, "group": {"name": "g"}},
                        {"kind": "Group"},
                        {"kind": "ServiceAccount", "serviceAccount": {"name": "Bad!", "namespace": "ns"}},
                    ],
                    "nonResourceRules": GET_X,
                }
            ],
        },
    ),
    fs(
        "urls",
        {
            "priorityLevelConfiguration": {"name": "x"},
            "rules": [
                {
                    "subjects": ANYONE,
                    "nonResourceRules": [
                        {"verbs": ["*", "get"], "nonResourceURLs": ["x", "/a b", "/a//b", "/a*b", "", "/ok/*"]},
                        {"verbs": [], "nonResourceURLs": ["*", "/x"]},
                    ],
                    "resourceRules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["pods", "*"]}],
                }
            ],
        },
    ),
]
BAD_LEVELS = [
    plc("exempt-not", {"type": "Exempt", "exempt": {"nominalConcurrencyShares": -1, "lendablePercent": 101}}),
    plc("bogus", {"type": "Bogus"}),
    plc("no-limited", {"type": "Limited", "exempt": {}}),
    plc("no-type", {}),
    plc(
        "queues",
        {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": -1,
                "lendablePercent": -1,
                "borrowingLimitPercent": -2,
                "limitResponse": {"type": "Queue", "queuing": {"queues": 4, "handSize": 5, "queueLengthLimit": -1}},
            },
        },
    ),
    plc(
        "entropy",
        {
            "type": "Limited",
            "limited": {"limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 10}}},
        },
    ),
    plc("reject-queuing", {"type": "Limited", "limited": {"limitResponse": {"type": "Reject", "queuing": {}}}}),
    plc("no-response", {"type": "Limited", "limited": {"limitResponse": {}}}),
    plc("odd-response", {"type": "Limited", "limited": {"limitResponse": {"type": "Later"}}}),
    plc(
        "preserve",
        {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}},
        annotations={"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""},
    ),
]


@pytest.mark.parametrize(
    ("plural", "obj"),
    [("flowschemas", o) for o in BAD_FLOW_SCHEMAS] + [("prioritylevelconfigurations", o) for o in BAD_LEVELS],
    ids=lambda x: x["metadata"]["name"] if isinstance(x, dict) else x,
)
def test_bad_objects_are_refused_in_upstreams_words(servers, plural: str, obj: dict[str, Any]) -> None:
    plane, ours = servers
    theirs = send(plane, "POST", f"{GROUP}/{plural}", obj)
    mine = send(ours, "POST", f"{GROUP}/{plural}", obj)
    assert theirs[0] == 422, theirs[1]
    assert (mine[0], mine[1]["message"]) == (theirs[0], theirs[1]["message"])
    assert mine[1]["details"]["causes"] == theirs[1]["details"]["causes"]


def test_the_mandatory_objects_keep_their_spec(servers) -> None:
    """The fixed spec's refusal shows the internal Go value as encoding/json writes it."""
    plane, ours = servers
    for plural, name, edit in (
        ("flowschemas", "catch-all", lambda s: {**s, "matchingPrecedence": 9999}),
        (
            "prioritylevelconfigurations",
            "catch-all",
            lambda s: {**s, "limited": {**s["limited"], "nominalConcurrencyShares": 6}},
        ),
        ("prioritylevelconfigurations", "exempt", lambda s: {**s, "type": "Limited"}),
    ):
        answers = []
        for server in (plane, ours):
            code, current, _ = send(server, "GET", f"{GROUP}/{plural}/{name}")
            assert code == 200
            code, body, _ = send(server, "PUT", f"{GROUP}/{plural}/{name}", {**current, "spec": edit(current["spec"])})
            answers.append((code, body["message"], body["details"]["causes"]))
        assert answers[1] == answers[0], (plural, name)
    # the exempt level's own shares may change (everything but spec.exempt is fixed)
    for server in (plane, ours):
        code, current, _ = send(server, "GET", f"{GROUP}/prioritylevelconfigurations/exempt")
        spec = {**current["spec"], "exempt": {"nominalConcurrencyShares": 3, "lendablePercent": 0}}
        code, body, _ = send(server, "PUT", f"{GROUP}/prioritylevelconfigurations/exempt", {**current, "spec": spec})
        assert code == 200, body
        send(server, "PUT", f"{GROUP}/prioritylevelconfigurations/exempt", {**body, "spec": current["spec"]})


@pytest.mark.parametrize("plural", ["flowschemas", "prioritylevelconfigurations"])
def test_the_table_is_upstreams(servers, plural: str) -> None:
    plane, ours = servers
    tables = []
    for server in (plane, ours):
        code, body, _ = send(server, "GET", f"{GROUP}/{plural}", headers={"Accept": TABLE})
        assert code == 200
        names = [c["name"] for c in body["columnDefinitions"]]
        age = names.index("Age")
        rows = [[cell for i, cell in enumerate(r["cells"]) if i != age] for r in body["rows"]]
        bootstrap = {o for o in configuration(plane, plural)} - {"defaulted", "defaulted-q", "defaulted-r"}
        tables.append((names, [r for r in rows if r[0] in bootstrap]))
    assert tables[1] == tables[0]


# (impersonated user, groups, method, path): which schema classifies the request
REQUESTS = [
    ("alice", None, "GET", "/api/v1/namespaces/default/pods"),
    ("alice", None, "GET", "/version"),
    ("alice", "system:masters", "GET", "/api/v1/pods"),
    ("system:kube-scheduler", None, "POST", "/api/v1/namespaces/default/pods/p/binding"),
    ("system:kube-scheduler", None, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"),
    (
        "system:kube-scheduler",
        None,
        "PATCH",
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler",
    ),
    ("system:kube-controller-manager", None, "GET", "/apis/apps/v1/deployments"),
    ("system:serviceaccount:kube-system:job-controller", None, "GET", "/apis/batch/v1/jobs"),
    ("system:serviceaccount:team:bot", None, "DELETE", "/api/v1/namespaces/team/pods/x"),
    ("system:node:n1", "system:nodes", "PATCH", "/api/v1/nodes/n1/status"),
    ("system:node:n1", "system:nodes", "GET", "/api/v1/pods"),
    ("system:node:n1", "system:nodes", "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1"),
    ("system:anonymous", "system:unauthenticated", "GET", "/api"),
    # watches are classified too (the stream's headers name its schema); a refused one as well
    ("system:kube-scheduler", None, "GET", "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1"),
    ("alice", None, "GET", "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1"),
]


def schema_names(server: Any) -> dict[str, str]:
    _, body, _ = send(server, "GET", f"{GROUP}/flowschemas")
    return {o["metadata"]["uid"]: o["metadata"]["name"] for o in body["items"]}


def test_requests_are_classified_as_upstream_classifies_them(servers) -> None:
    plane, ours = servers
    names = {id(s): schema_names(s) for s in (plane, ours)}
    for user, group, method, path in REQUESTS:
        matched = []
        for server in (plane, ours):
            headers = {"Impersonate-User": user}
            if group:
                headers["Impersonate-Group"] = group
            body = {} if method in ("POST", "PUT", "PATCH") else None
            if method == "PATCH":
                headers["Content-Type"] = "application/merge-patch+json"
            _, _, got = send(server, method, path, body, headers)
            uid = got.get("X-Kubernetes-PF-FlowSchema-UID")
            matched.append(names[id(server)].get(uid, uid))
        assert matched[1] == matched[0], (user, group, method, path)
