"""The embedded API server over real HTTPS: Status shapes and codes, resourceVersion semantics,
selectors, the four patch types, watch (replay, selector transitions, 410), subresources, the
official ``kubernetes`` client, and hostile requests that must get a 4xx and change nothing."""

from __future__ import annotations

import json
import threading

import pytest
from tests.live import Server

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p1", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]},
}
NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"zone": "a"}},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("api") / "data").start()
    yield s
    s.stop()


def pod(name: str, **labels: str) -> dict:
    return {**POD, "metadata": {"name": name, "labels": labels or {"app": "web"}}}


def test_unauthenticated_requests_get_401_status(server):
    code, body = server.request("GET", "/api/v1/pods", token="wrong")
    assert code == 401
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }
    assert server.request("GET", "/version", token="")[0] == 200


@pytest.mark.parametrize(
    ("path", "code", "reason", "message"),
    [
        ("/api/v1/namespaces/default/pods/nope", 404, "NotFound", 'pods "nope" not found'),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases/x",
            404,
            "NotFound",
            'leases.coordination.k8s.io "x" not found',
        ),
        ("/api/v1/widgets", 404, "NotFound", "the server could not find the requested resource"),
        ("/api/v1/pods?fieldSelector=spec.foo%3Dx", 400, "BadRequest", "field label not supported: spec.foo"),
        ("/api/v1/pods?labelSelector=a%20in%20()", 400, "BadRequest", None),
        ("/api/v1/pods?limit=abc", 400, "BadRequest", None),
    ],
)
def test_errors_are_status_bodies(server, path, code, reason, message):
    got, body = server.request("GET", path)
    assert (got, body["kind"], body["code"], body["reason"]) == (code, "Status", code, reason)
    if message:
        assert body["message"] == message


def test_create_conflict_and_resource_versions(server):
    code, created = server.request("POST", "/api/v1/namespaces/default/pods", pod("rv1"))
    assert code == 201
    meta = created["metadata"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z") and meta["generation"] == 1
    assert created["status"] == {"phase": "Pending", "qosClass": "Burstable"}
    assert created["spec"]["schedulerName"] == "default-scheduler" and created["spec"]["priority"] == 0
    code, body = server.request("POST", "/api/v1/namespaces/default/pods", pod("rv1"))
    assert (code, body["reason"], body["message"]) == (409, "AlreadyExists", 'pods "rv1" already exists')
    stale = {**created, "metadata": {**meta, "labels": {"app": "x"}}}
    code, updated = server.request("PUT", "/api/v1/namespaces/default/pods/rv1", stale)
    assert code == 200 and int(updated["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    code, body = server.request("PUT", "/api/v1/namespaces/default/pods/rv1", stale)
    assert (code, body["reason"]) == (409, "Conflict")
    assert body["message"] == (
        'Operation cannot be fulfilled on pods "rv1": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    code, listed = server.request("GET", "/api/v1/namespaces/default/pods")
    assert int(listed["metadata"]["resourceVersion"]) >= int(updated["metadata"]["resourceVersion"])


def test_generate_name_namespace_lifecycle_and_validation(server):
    code, body = server.request(
        "POST", "/api/v1/namespaces/default/pods", {**POD, "metadata": {"generateName": "gen-"}}
    )
    assert code == 201 and body["metadata"]["name"].startswith("gen-") and len(body["metadata"]["name"]) == 9
    code, body = server.request("POST", "/api/v1/namespaces/nowhere/pods", pod("x"))
    assert (code, body["message"]) == (404, 'namespaces "nowhere" not found')
    code, body = server.request("POST", "/api/v1/namespaces/default/pods", pod("Bad_Name"))
    assert code == 422 and body["reason"] == "Invalid" and body["details"]["causes"][0]["field"] == "metadata.name"
    bad = {
        **POD,
        "metadata": {"name": "neg"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1.5.5"}}}]},
    }
    code, body = server.request("POST", "/api/v1/namespaces/default/pods", bad)
    assert code == 400  # resource.Quantity's UnmarshalJSON refuses it while the body is decoded
    assert body["message"].startswith('Pod in version "v1" cannot be handled as a Pod: unable to parse quantity')
    code, body = server.request(
        "POST", "/api/v1/namespaces/other/pods", {**POD, "metadata": {"name": "x", "namespace": "default"}}
    )
    assert code == 400


def test_selectors(server):
    for name, app in (("sel-a", "a"), ("sel-b", "b"), ("sel-c", "c")):
        server.request("POST", "/api/v1/namespaces/default/pods", pod(name, app=app, tier="t"))

    def names(query: str) -> list[str]:
        code, body = server.request("GET", "/api/v1/namespaces/default/pods?" + query)
        assert code == 200, body
        return sorted(i["metadata"]["name"] for i in body["items"] if i["metadata"]["name"].startswith("sel-"))

    assert names("labelSelector=app%3Da") == ["sel-a"]
    assert names("labelSelector=app%20in%20(a,b)") == ["sel-a", "sel-b"]
    assert names("labelSelector=app%20notin%20(a),tier") == ["sel-b", "sel-c"]
    assert names("labelSelector=app!%3Dc") == ["sel-a", "sel-b"]
    assert names("labelSelector=!tier") == []
    assert names("fieldSelector=metadata.name%3Dsel-b,metadata.name%3Dsel-b") == ["sel-b"]
    assert names("fieldSelector=status.phase!%3DRunning,spec.nodeName%3D") == ["sel-a", "sel-b", "sel-c"]


def test_patch_types(server):
    server.request("POST", "/api/v1/namespaces/default/pods", pod("pt"))
    base = "/api/v1/namespaces/default/pods/pt"
    code, body = server.request(
        "PATCH", base, {"metadata": {"labels": {"x": "1"}}}, content_type="application/merge-patch+json"
    )
    assert code == 200 and body["metadata"]["labels"] == {"app": "web", "x": "1"}
    code, body = server.request(
        "PATCH",
        base,
        [{"op": "replace", "path": "/metadata/labels/x", "value": "2"}],
        content_type="application/json-patch+json",
    )
    assert body["metadata"]["labels"]["x"] == "2"
    smp = {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}  # merged by name
    code, body = server.request("PATCH", base, smp, content_type="application/strategic-merge-patch+json")
    assert [(c["name"], c["image"]) for c in body["spec"]["containers"]] == [("c", "busybox:2")]
    cond = {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}
    server.request("PATCH", base + "/status", cond, content_type="application/strategic-merge-patch+json")
    cond["status"]["conditions"][0]["message"] = "again"
    code, body = server.request("PATCH", base + "/status", cond, content_type="application/strategic-merge-patch+json")
    assert [c["message"] for c in body["status"]["conditions"] if c["type"] == "PodScheduled"] == ["again"]
    code, body = server.request("PATCH", base, {"a": 1}, content_type="text/plain")
    assert (code, body["reason"]) == (415, "UnsupportedMediaType")
    code, body = server.request(
        "PATCH",
        base,
        {"metadata": {"resourceVersion": "1", "labels": {"y": "1"}}},
        content_type="application/merge-patch+json",
    )
    assert (code, body["reason"]) == (409, "Conflict")
    applied = json.dumps(pod("ssa")).encode()
    code, body = server.request(
        "PATCH",
        "/api/v1/namespaces/default/pods/ssa?fieldManager=t",
        applied,
        content_type="application/apply-patch+yaml",
    )
    assert code == 201 and body["metadata"]["name"] == "ssa"


DEFAULT_TOLERATIONS = [
    {"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    for k in ("not-ready", "unreachable")
]


@pytest.mark.parametrize(
    ("patch", "allowed"),
    [
        ({"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}, True),
        ({"spec": {"activeDeadlineSeconds": 60}}, True),
        # an addition to the two DefaultTolerationSeconds gave the pod (the list is replaced whole)
        ({"spec": {"tolerations": [*DEFAULT_TOLERATIONS, {"key": "k", "operator": "Exists"}]}}, True),
        ({"spec": {"tolerations": [{"key": "k", "operator": "Exists"}]}}, False),  # the defaults dropped
        ({"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}}, False),
        ({"spec": {"containers": [{"name": "side", "image": "busybox"}]}}, False),  # a new container
        ({"spec": {"restartPolicy": "Never"}}, False),
        ({"spec": {"nodeSelector": {"disk": "ssd"}}}, False),  # not gated
    ],
)
def test_pod_spec_is_immutable_but_for_upstreams_exceptions(server, patch, allowed):
    name = f"imm-{abs(hash(json.dumps(patch))) % 10**6}"
    server.request("POST", "/api/v1/namespaces/default/pods", pod(name))
    path = f"/api/v1/namespaces/default/pods/{name}"
    _, before = server.request("GET", path)
    code, body = server.request("PATCH", path, patch, content_type="application/strategic-merge-patch+json")
    if allowed:
        assert code == 200
        return
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"].startswith(
        f'Pod "{name}" is invalid: spec: Forbidden: pod updates may not change fields other than '
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
        "`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
        "(allow it to be set to 1 if it was previously negative)"
    )
    assert body["details"]["causes"][0]["reason"] == "FieldValueForbidden"
    assert server.request("GET", path)[1]["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_a_gated_pod_may_lose_gates_and_gain_node_selector_entries(server):
    gated = {**pod("gated-imm"), "spec": {**POD["spec"], "schedulingGates": [{"name": "a"}, {"name": "b"}]}}
    server.request("POST", "/api/v1/namespaces/default/pods", gated)
    path = "/api/v1/namespaces/default/pods/gated-imm"
    merge = "application/merge-patch+json"
    assert server.request("PATCH", path, {"spec": {"nodeSelector": {"disk": "ssd"}}}, content_type=merge)[0] == 200
    assert server.request("PATCH", path, {"spec": {"schedulingGates": [{"name": "b"}]}}, content_type=merge)[0] == 200
    code, _ = server.request("PATCH", path, {"spec": {"schedulingGates": [{"name": "c"}]}}, content_type=merge)
    assert code == 422  # a gate may be removed, never added
    assert server.request("PATCH", path, {"spec": {"schedulingGates": None}}, content_type=merge)[0] == 200
    code, _ = server.request("PATCH", path, {"spec": {"nodeSelector": {"disk": "hdd"}}}, content_type=merge)
    assert code == 422  # no longer gated


def test_binding_eviction_and_graceful_delete(server):
    server.request("POST", "/api/v1/nodes", NODE)
    server.request("POST", "/api/v1/namespaces/default/pods", pod("b1"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "b1"},
        "target": {"kind": "Node", "name": "n1"},
    }
    code, body = server.request("POST", "/api/v1/namespaces/default/pods/b1/binding", binding)
    assert (code, body) == (
        201,
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201},
    )
    code, body = server.request("POST", "/api/v1/namespaces/default/pods/b1/binding", binding)
    assert code == 409 and body["message"] == (
        'Operation cannot be fulfilled on pods/binding "b1": pod b1 is already assigned to node "n1"'
    )
    code, got = server.request("GET", "/api/v1/namespaces/default/pods/b1")
    assert got["spec"]["nodeName"] == "n1"
    # uid precondition on delete
    code, body = server.request("DELETE", "/api/v1/namespaces/default/pods/b1", {"preconditions": {"uid": "other"}})
    assert code == 409 and "Precondition failed: UID in precondition: other" in body["message"]
    code, body = server.request("DELETE", "/api/v1/namespaces/default/pods/b1", {"gracePeriodSeconds": 30})
    assert (
        code == 200 and body["metadata"]["deletionTimestamp"] and body["metadata"]["deletionGracePeriodSeconds"] == 30
    )
    code, body = server.request("DELETE", "/api/v1/namespaces/default/pods/b1", {"gracePeriodSeconds": 0})
    assert code == 200
    assert server.request("GET", "/api/v1/namespaces/default/pods/b1")[0] == 404
    # eviction of an unbound pod: no budget applies
    server.request("POST", "/api/v1/namespaces/default/pods", pod("ev1"))
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "ev1"}}
    assert server.request("POST", "/api/v1/namespaces/default/pods/ev1/eviction", eviction)[0] == 201
    assert server.request("GET", "/api/v1/namespaces/default/pods/ev1")[0] == 404


def test_watch_replays_from_resource_version_and_transitions(server):
    _, first = server.request("POST", "/api/v1/namespaces/default/pods", pod("w1", app="in"))
    rv = first["metadata"]["resourceVersion"]
    server.request(
        "PATCH",
        "/api/v1/namespaces/default/pods/w1",
        {"metadata": {"labels": {"app": "out"}}},
        content_type="application/merge-patch+json",
    )
    server.request("DELETE", "/api/v1/namespaces/default/pods/w1", {"gracePeriodSeconds": 0})
    _, raw = server.request(
        "GET",
        f"/api/v1/namespaces/default/pods?watch=True&resourceVersion={int(rv) - 1}&timeoutSeconds=1"
        "&labelSelector=app%3Din",
        raw=True,
    )
    events = [json.loads(line) for line in raw.splitlines() if line.strip()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "w1"), ("DELETED", "w1")]
    # resourceVersion=0: the objects stored now, as ADDED, then the changes
    server.request("POST", "/api/v1/namespaces/default/pods", pod("w2", app="in"))
    _code, raw = server.request(
        "GET",
        "/api/v1/namespaces/default/pods?watch=1&resourceVersion=0&timeoutSeconds=1&fieldSelector=metadata.name%3Dw2",
        raw=True,
    )
    events = [json.loads(line) for line in raw.splitlines() if line.strip()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "w2")]


def test_watchers_of_one_event_each_get_their_own_view_of_it(server):
    """An event is encoded once per view and shared: watchers with and without a selector, and
    of core/v1 and events.k8s.io/v1 Events, each still get the line their request asks for."""
    _, first = server.request("POST", "/api/v1/namespaces/default/pods", pod("views", app="in"))
    rv = first["metadata"]["resourceVersion"]
    paths = {
        "all": "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dviews",
        "selected": "/api/v1/namespaces/default/pods?labelSelector=app%3Din",
        "core": "/api/v1/namespaces/default/events",
        "events": "/apis/events.k8s.io/v1/namespaces/default/events",
    }
    got: dict[str, list[dict]] = {}

    def watch(name: str, path: str) -> None:
        sep = "&" if "?" in path else "?"
        _, raw = server.request("GET", f"{path}{sep}watch=1&resourceVersion={rv}&timeoutSeconds=2", raw=True)
        got[name] = [json.loads(line) for line in raw.splitlines() if line.strip()]

    threads = [threading.Thread(target=watch, args=item) for item in paths.items()]
    for t in threads:
        t.start()
    server.request(
        "PATCH",
        "/api/v1/namespaces/default/pods/views",
        {"metadata": {"labels": {"app": "out"}}},
        content_type="application/merge-patch+json",
    )
    ref = {"kind": "Pod", "namespace": "default", "name": "views"}
    event = {
        "metadata": {"name": "views.1"},
        "involvedObject": ref,
        "reason": "Seen",
        "message": "twice",
        "type": "Normal",
    }
    assert server.request("POST", "/api/v1/namespaces/default/events", event)[0] == 201
    for t in threads:
        t.join(10)
    assert [(e["type"], e["object"]["metadata"]["labels"]["app"]) for e in got["all"]] == [("MODIFIED", "out")]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got["selected"]] == [("DELETED", "views")]
    assert [(e["object"]["message"], e["object"]["involvedObject"]["name"]) for e in got["core"]] == [
        ("twice", "views")
    ]
    assert [(e["object"]["note"], e["object"]["regarding"]["name"]) for e in got["events"]] == [("twice", "views")]
    assert got["events"][0]["object"]["apiVersion"] == "events.k8s.io/v1"


def test_watch_from_compacted_revision_is_410_error_event(tmp_path):
    s = Server(tmp_path / "small", args=["--watch-history", "5"]).start()
    try:
        _, first = s.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c0"}})
        old = int(first["metadata"]["resourceVersion"])
        for i in range(1, 8):
            s.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": f"c{i}"}})
        code, raw = s.request("GET", f"/api/v1/configmaps?watch=true&resourceVersion={old}&timeoutSeconds=1", raw=True)
        lines = [json.loads(x) for x in raw.splitlines() if x.strip()]
        assert code == 200 and [e["type"] for e in lines] == ["ERROR"]
        assert (lines[0]["object"]["code"], lines[0]["object"]["reason"]) == (410, "Expired")
        assert lines[0]["object"]["message"].startswith(f"too old resource version: {old} (")
        # the last five revisions still replay
        code, raw = s.request(
            "GET", f"/api/v1/configmaps?watch=true&resourceVersion={old + 4}&timeoutSeconds=1", raw=True
        )
        names = [json.loads(x)["object"]["metadata"]["name"] for x in raw.splitlines() if x.strip()]
        assert names == ["c5", "c6", "c7"]
        code, body = s.request("GET", "/api/v1/configmaps?watch=true&resourceVersion=-5")
        assert (code, body["message"]) == (
            400,
            'resourceVersion: Invalid value: "-5": strconv.ParseUint: parsing "-5": invalid syntax',
        )
    finally:
        s.stop()


def test_table_responses(server):
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    _code, body = server.request("GET", "/api/v1/namespaces/default/pods", headers={"Accept": accept})
    assert body["kind"] == "Table"
    assert [c["name"] for c in body["columnDefinitions"]] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
        "IP",
        "Node",
        "Nominated Node",
        "Readiness Gates",
    ]
    assert all(r["object"]["kind"] == "PartialObjectMetadata" for r in body["rows"])


# a "billion laughs": nine levels of ten aliases, 10^9 values once expanded
BOMB = b"a: &a [x,x,x,x,x,x,x,x,x,x]\n" + b"".join(
    b"%s: &%s [%s]\n" % (c.encode(), c.encode(), b",".join([b"*" + p.encode()] * 10))
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("method", "path", "body", "ctype", "code"),
    [
        ("POST", "/api/v1/namespaces/default/pods", b"{not json", "application/json", 400),
        ("POST", "/api/v1/namespaces/default/pods", b"[1,2]", "application/json", 400),
        ("POST", "/api/v1/namespaces/default/pods", b"[" * 100_000 + b"]" * 100_000, "application/json", 400),
        ("POST", "/api/v1/namespaces/default/pods", b"a:\n" + b"  " * 5 + b"- " * 50_000, "application/yaml", 400),
        ("POST", "/api/v1/namespaces/default/pods", b"x" * (3 * 1024 * 1024 + 10), "application/json", 413),
        ("POST", "/api/v1/namespaces/default/pods", b"{}", "application/vnd.kubernetes.protobuf", 400),
        ("POST", "/api/v1/namespaces/default/pods", b"k8s\x00", "application/cbor", 415),
        (
            "POST",
            "/api/v1/namespaces/default/pods",
            bytes.fromhex("6b3873000a150a027631120f436f6d706f6e656e74537461747573"),  # a v1 ComponentStatus: not served
            "application/vnd.kubernetes.protobuf",
            415,
        ),
        (
            "POST",
            "/api/v1/namespaces/default/pods",
            bytes.fromhex("6b3873000a090a0276311203506f64"),  # a v1 Pod with no name
            "application/vnd.kubernetes.protobuf",
            422,
        ),
        (
            "POST",
            "/api/v1/namespaces/default/pods",
            b'{"kind":"Node","apiVersion":"v1","metadata":{"name":"q"}}',
            "application/json",
            400,
        ),
        ("PUT", "/api/v1/namespaces/default/pods/sel-a", b'{"metadata":{"name":"other"}}', "application/json", 400),
        (
            "PATCH",
            "/api/v1/namespaces/default/pods/sel-a",
            b'[{"op":"remove","path":"/nope"}]',
            "application/json-patch+json",
            422,
        ),
        ("PATCH", "/api/v1/namespaces/default/pods/sel-a", b'{"metadata":"x"}', "application/merge-patch+json", 400),
        ("DELETE", "/api/v1/namespaces/default/pods/sel-a", b'{"gracePeriodSeconds":"soon"}', "application/json", 400),
        ("POST", "/api/v1/namespaces/default/pods/sel-a/binding", b'{"target":{}}', "application/json", 422),
        ("POST", "/api/v1/namespaces/default/pods?dryRun=Maybe", b"{}", "application/json", 422),
        ("GET", "/api/v1/pods?continue=%%%", None, "application/json", 400),
        ("PATCH", "/api/v1/namespaces/default/pods/sel-a?fieldManager=k", BOMB, "application/apply-patch+yaml", 400),
        (
            "PATCH",
            "/api/v1/namespaces/default/pods/sel-a",
            b'{"spec":{"priority":"x"}}',
            "application/merge-patch+json",
            400,
        ),
        (
            "POST",
            "/api/v1/namespaces/default/pods",
            b'{"metadata":{"name":"deep","managedFields":[{"fieldsV1":' + b"[" * 300 + b"]" * 300 + b'}]},"spec":{}}',
            "application/json",
            400,
        ),
    ],
)
def test_hostile_requests_get_4xx_and_change_nothing(server, method, path, body, ctype, code):
    before = server.request("GET", "/api/v1/namespaces/default/pods")[1]
    got, status = server.request(method, path, body, content_type=ctype)
    assert got == code, status
    assert status["kind"] == "Status" and status["code"] == code and "Traceback" not in status["message"]
    after = server.request("GET", "/api/v1/namespaces/default/pods")[1]
    assert after["items"] == before["items"]
    assert server.request("GET", "/healthz", raw=True)[0] == 200


def test_concurrent_writers_lose_nothing_and_stale_updates_conflict(server):
    errors: list[object] = []

    def writer(i: int) -> None:
        for j in range(10):
            code, body = server.request(
                "POST",
                "/api/v1/namespaces/default/configmaps",
                {"metadata": {"name": f"cm-{i}-{j}"}, "data": {"v": "0"}},
            )
            if code != 201:
                errors.append(body)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    _code, body = server.request("GET", "/api/v1/namespaces/default/configmaps")
    names = [i["metadata"]["name"] for i in body["items"] if i["metadata"]["name"].startswith("cm-")]
    assert len(names) == len(set(names)) == 60
    rvs = [int(i["metadata"]["resourceVersion"]) for i in body["items"]]
    assert len(set(rvs)) == len(rvs)
    # the same read-modify-write from two clients: exactly one wins
    _, cm = server.request("GET", "/api/v1/namespaces/default/configmaps/cm-0-0")
    results = [
        server.request("PUT", "/api/v1/namespaces/default/configmaps/cm-0-0", {**cm, "data": {"v": str(k)}})[0]
        for k in (1, 2)
    ]
    assert results == [200, 409]


def test_official_kubernetes_client(server):
    kubernetes = pytest.importorskip("kubernetes")
    from kubernetes import client, config, watch

    api = client.CoreV1Api(config.new_client_from_config(config_file=str(server.kubeconfig)))
    api.create_namespaced_pod(
        "default",
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="oc1", labels={"app": "oc"}),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]),
        ),
    )
    pods = api.list_namespaced_pod("default", label_selector="app=oc")
    assert [p.metadata.name for p in pods.items] == ["oc1"]
    api.patch_namespaced_pod("oc1", "default", {"metadata": {"labels": {"x": "y"}}})
    nodes = api.list_node()  # every node carries the fields the client's models require
    assert "n1" in [n.metadata.name for n in nodes.items]
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name="oc1"), target=client.V1ObjectReference(kind="Node", name="n1")
    )
    api.create_namespaced_binding("default", body, _preload_content=False)
    assert api.read_namespaced_pod("oc1", "default").spec.node_name == "n1"
    seen = [
        (e["type"], e["object"].status.phase)
        for e in watch.Watch().stream(
            api.list_namespaced_pod,
            "default",
            label_selector="app=oc",
            resource_version=pods.metadata.resource_version,
            timeout_seconds=1,
        )
    ]
    # the label patch, the binding, the hollow kubelet starting the pod
    assert seen == [("MODIFIED", "Pending"), ("MODIFIED", "Pending"), ("MODIFIED", "Running")]
    api.create_namespaced_pod_eviction("oc1", "default", client.V1Eviction(metadata=client.V1ObjectMeta(name="oc1")))
    with pytest.raises(client.exceptions.ApiException) as err:
        api.create_namespaced_pod(
            "default",
            client.V1Pod(
                metadata=client.V1ObjectMeta(name="sel-a"),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]),
            ),
        )
    assert err.value.status == 409
    del kubernetes


def test_field_validation_strict_warn_ignore(server):
    """kubectl sends fieldValidation=Strict: an unknown field is a 400 naming it; the default (Warn)
    stores the object without it and says so in a Warning header; Ignore just drops it."""
    typo = {**pod("fv"), "spec": {"containers": [{"name": "c", "image": "nginx", "imagee": "x"}], "nodeSelectr": {}}}
    base = "/api/v1/namespaces/default/pods"
    code, body = server.request("POST", base + "?fieldValidation=Strict", typo)
    assert (code, body["reason"], body["message"]) == (
        400,
        "BadRequest",
        'Pod in version "v1" cannot be handled as a Pod: '
        'strict decoding error: unknown field "spec.containers[0].imagee", unknown field "spec.nodeSelectr"',
    )  # kube-apiserver v1.37.2's words
    assert server.request("GET", base + "/fv")[0] == 404
    code, body = server.request("POST", base, typo)
    assert code == 201
    assert server.last_headers.get_all("Warning") == [
        '299 - "unknown field \\"spec.containers[0].imagee\\""',
        '299 - "unknown field \\"spec.nodeSelectr\\""',
    ]
    assert "imagee" not in body["spec"]["containers"][0] and "nodeSelectr" not in body["spec"]
    ignored = {**typo, "metadata": {"name": "fv2"}}
    code, body = server.request("POST", base + "?fieldValidation=Ignore", ignored)
    assert code == 201 and server.last_headers.get_all("Warning") is None and "nodeSelectr" not in body["spec"]
    code, body = server.request(
        "PATCH",
        base + "/fv?fieldValidation=Strict",
        {"metadata": {"labelz": {"a": "b"}}},
        content_type="application/merge-patch+json",
    )
    # patch.go's 422, quoting the patched object (kube-apiserver v1.37.2 agrees: test_upstream_validation)
    assert (code, body["reason"]) == (422, "Invalid") and body["details"]["causes"][0]["field"] == "patch"
    assert body["message"].endswith('": strict decoding error: unknown field "metadata.labelz"')
    code, body = server.request("POST", base + "?fieldValidation=Loud", typo)
    assert (code, body["message"]) == (400, 'fieldValidation must be one of Ignore, Warn or Strict, not "Loud"')


@pytest.mark.parametrize(
    ("spec", "code", "message", "field"),
    [
        (
            {"priority": "high", "containers": [{"name": "c", "image": "i"}]},
            400,
            'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field '
            "PodSpec.spec.priority of type int32",
            None,
        ),
        (
            {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "-1"}}}]},
            422,
            'Pod "v" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value: "-1": '
            "must be greater than or equal to 0",
            "spec.containers[0].resources.requests[cpu]",
        ),
        (
            {
                "containers": [
                    {"name": "c", "image": "i", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}
                ]
            },
            422,
            'Pod "v" is invalid: spec.containers[0].resources.requests: Invalid value: "2": '
            "must be less than or equal to cpu limit of 1",
            "spec.containers[0].resources.requests",
        ),
        (
            {
                "containers": [
                    {"name": "c", "image": "i", "resources": {"requests": {"cpu": "99999999999999999999999"}}}
                ]
            },
            422,
            'Pod "v" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value: "99999999999999999999999": '
            "must be no more than 9007199254740992m (kubesched counts resources in 64-bit integers)",
            "spec.containers[0].resources.requests[cpu]",
        ),
    ],
    ids=["wrong-type", "negative", "above-limit", "too-large"],
)
def test_validation_is_the_loaders(server, spec, code, message, field):
    """The API server decodes and validates with the same layer as ``simulate``'s loader."""
    got, body = server.request(
        "POST", "/api/v1/namespaces/default/pods", {**POD, "metadata": {"name": "v"}, "spec": spec}
    )
    assert (got, body["message"]) == (code, message)
    if field is not None:
        assert body["details"]["causes"][0]["field"] == field
    assert server.request("GET", "/api/v1/namespaces/default/pods/v")[0] == 404


def test_finalizers_hold_a_deleted_object_until_they_are_removed(server):
    """kube-apiserver's deletion with finalizers: DELETE sets deletionTimestamp and keeps the
    object; the write that removes the last finalizer removes it."""
    base = "/api/v1/namespaces/default/configmaps"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    assert server.request("POST", base, cm)[0] == 201
    code, body = server.request("DELETE", base + "/held")
    assert (
        code == 200 and body["metadata"]["deletionTimestamp"] and body["metadata"]["finalizers"] == ["example.com/hold"]
    )
    code, body = server.request("GET", base + "/held")
    assert code == 200 and body["metadata"]["deletionGracePeriodSeconds"] == 0
    code, _ = server.request(
        "PATCH", base + "/held", {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json"
    )
    assert code == 200
    assert server.request("GET", base + "/held")[0] == 404


def test_put_replaces_labels_and_annotations(server):
    """An update replaces the object's metadata: labels and annotations it leaves out are gone,
    while uid, creationTimestamp and generation stay the server's (``rest.BeforeUpdate``)."""
    base = "/api/v1/namespaces/default/configmaps"
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "relabel", "labels": {"a": "1", "b": "2"}, "annotations": {"note": "x"}},
        "data": {"k": "v"},
    }
    code, created = server.request("POST", base, cm)
    assert code == 201
    replaced = {
        **created,
        "metadata": {
            "name": "relabel",
            "resourceVersion": created["metadata"]["resourceVersion"],
            "labels": {"b": "3"},
            "creationTimestamp": "2000-01-01T00:00:00Z",  # ignored, as BeforeUpdate ignores it
        },
    }
    forged = {**replaced, "metadata": {**replaced["metadata"], "uid": "forged"}}
    code, body = server.request("PUT", base + "/relabel", forged)
    assert (code, body["reason"]) == (422, "Invalid")
    assert (
        body["message"] == 'ConfigMap "relabel" is invalid: metadata.uid: Invalid value: "forged": field is immutable'
    )
    code, updated = server.request("PUT", base + "/relabel", replaced)
    assert code == 200, updated
    meta = updated["metadata"]
    assert meta["labels"] == {"b": "3"} and "annotations" not in meta
    assert meta["uid"] == created["metadata"]["uid"]
    assert meta["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    code, got = server.request("GET", base + "/relabel")
    assert got["metadata"]["labels"] == {"b": "3"} and "annotations" not in got["metadata"]


def test_device_taint_rules_are_served(server):
    """resource.k8s.io/v1 DeviceTaintRule (GA in v1.37): cluster-scoped, with a status subresource,
    in discovery; an unknown field is refused by name."""
    base = "/apis/resource.k8s.io/v1/devicetaintrules"
    rule = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "bad-gpus"},
        "spec": {
            "deviceSelector": {"driver": "gpu.example.com", "pool": "n1"},
            "taint": {"key": "example.com/unhealthy", "value": "true", "effect": "NoSchedule"},
        },
    }
    code, created = server.request("POST", base, rule)
    assert code == 201, created
    assert created["spec"]["deviceSelector"] == {"driver": "gpu.example.com", "pool": "n1"}
    code, listed = server.request("GET", base)
    assert code == 200 and [r["metadata"]["name"] for r in listed["items"]] == ["bad-gpus"]
    code, group = server.request("GET", "/apis/resource.k8s.io/v1")
    served = {r["name"]: r for r in group["resources"]}
    assert served["devicetaintrules"]["namespaced"] is False and "devicetaintrules/status" in served
    bad = {**rule, "metadata": {"name": "typo"}, "spec": {**rule["spec"], "deviceSelecter": {}}}
    code, status = server.request("POST", f"{base}?fieldValidation=Strict", bad)
    assert code == 400 and 'unknown field "spec.deviceSelecter"' in status["message"]


def test_a_long_list_is_streamed_as_the_same_document_its_pages_make(server):
    """A page of more than ``LIST_SLICE`` (500) items goes out as it is encoded (chunked, the loop let
    go between slices, as kube-apiserver streams a collection): one ConfigMapList, in name order, whose
    items are those its pages of 500 give (two: 500 and 101)."""
    ns = "streamed"
    assert server.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    for i in range(601):
        cm = {"metadata": {"name": f"cm-{i:04d}", "labels": {"odd": str(i % 2)}}, "data": {"k": "v" * 64}}
        assert server.request("POST", f"/api/v1/namespaces/{ns}/configmaps", cm)[0] == 201
    base = f"/api/v1/namespaces/{ns}/configmaps?labelSelector=odd"  # not the namespace's kube-root-ca.crt
    code, whole = server.request("GET", base)
    assert code == 200 and server.last_headers.get("Transfer-Encoding") == "chunked"
    assert (whole["kind"], whole["apiVersion"]) == ("ConfigMapList", "v1")
    assert [o["metadata"]["name"] for o in whole["items"]] == [f"cm-{i:04d}" for i in range(601)]
    items, cont, versions = [], "", set()
    while True:  # pages of 500: each in one piece
        code, page = server.request("GET", f"{base}&limit=500" + (f"&continue={cont}" if cont else ""))
        assert code == 200 and server.last_headers.get("Content-Length") is not None
        items += page["items"]
        versions.add(page["metadata"]["resourceVersion"])
        cont = page["metadata"].get("continue", "")
        if not cont:
            break
    assert items == whole["items"] and len(versions) == 1
    # a selector is applied across the slices alike
    code, odd = server.request("GET", f"/api/v1/namespaces/{ns}/configmaps?labelSelector=odd%3D1")
    assert [o["metadata"]["name"] for o in odd["items"]] == [f"cm-{i:04d}" for i in range(1, 601, 2)]
