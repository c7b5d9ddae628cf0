"""What a tenant's requests are answered, judged against kube-apiserver v1.37.2 with the same
requests: TokenReview audiences (a token issued for one service is not valid for another, nor for
the API server, and the API server's own is not valid for another service)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.live import Server
from tests.upstream import ADMIN_TOKEN, ControlPlane

API = "https://kubernetes.default.svc.cluster.local"  # both servers' --api-audiences (their issuer)


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory):
    plane = ControlPlane(tmp_path_factory.mktemp("upstream-tenant")).start()
    server = Server(tmp_path_factory.mktemp("kubesched-tenant") / "data").start()
    try:
        for side in (plane, server):
            account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reviewed"}}
            assert side.request("POST", "/api/v1/namespaces/default/serviceaccounts", account)[0] == 201
        time.sleep(0.5)
        yield plane, server
    finally:
        server.stop()
        plane.stop()


def _review(side: Any, token: str, audiences: list[str]) -> dict[str, Any]:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
    body["spec"]["audiences"] = audiences
    code, out = side.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", body)
    status = out["status"]
    return {
        "code": code,
        "authenticated": status.get("authenticated", False),
        "audiences": status.get("audiences"),
        "error": status.get("error"),
        "service account": (status.get("user") or {}).get("username", "").startswith("system:serviceaccount:"),
    }


@pytest.mark.parametrize("issued_for", [[], ["vault"]], ids=["the API", "vault"])
@pytest.mark.parametrize("reviewed_for", [[], ["vault"], [API], ["vault", API]], ids=["none", "vault", "API", "both"])
def test_a_token_review_checks_the_audiences_asked(sides, issued_for: list[str], reviewed_for: list[str]) -> None:
    answers = []
    for side in sides:
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": issued_for}}
        code, issued = side.request("POST", "/api/v1/namespaces/default/serviceaccounts/reviewed/token", request)
        assert code == 201
        answers.append(_review(side, issued["status"]["token"], reviewed_for))
    theirs, ours = answers
    assert ours == theirs
    assert theirs["authenticated"] is bool(set(issued_for or [API]) & set(reviewed_for or [API]))


@pytest.mark.parametrize("reviewed_for", [[], ["vault"], [API]], ids=["none", "vault", "API"])
def test_a_static_token_is_valid_only_for_the_api(sides, reviewed_for: list[str]) -> None:
    plane, server = sides
    theirs = _review(plane, ADMIN_TOKEN, reviewed_for)
    ours = _review(server, server._config()[1], reviewed_for)
    assert ours == theirs
    assert theirs["authenticated"] is (reviewed_for != ["vault"])


def _service(name: str, kind: str = "NodePort", *ports: dict[str, Any]) -> dict[str, Any]:
    spec = {"type": kind, "selector": {"app": name}, "ports": list(ports) or [{"port": 80}]}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


SERVICES = "/api/v1/namespaces/default/services"
MERGE = {"content_type": "application/merge-patch+json"}
NODE_PORT_STEPS: list[tuple[str, str, Any, dict[str, Any]]] = [
    ("POST", "", _service("a", "NodePort", {"port": 80, "nodePort": 30080}), {}),
    ("POST", "", _service("b", "NodePort", {"port": 80, "nodePort": 30080}), {}),  # another tenant's port
    ("POST", "", _service("c", "NodePort", {"port": 80, "nodePort": 80}), {}),
    ("POST", "", _service("d", "NodePort", {"port": 80, "nodePort": 99999}), {}),
    (
        "POST",
        "",
        _service("e", "NodePort", {"port": 80, "nodePort": 30090}, {"port": 81, "name": "x", "nodePort": 30090}),
        {},
    ),
    ("POST", "", _service("f", "ClusterIP"), {}),
    ("PATCH", "/f", {"spec": {"type": "NodePort"}}, MERGE),  # allocated on the change of type
    ("PATCH", "/f", {"spec": {"type": "ClusterIP"}}, MERGE),  # and released
    ("POST", "", _service("g", "ClusterIP", {"port": 80, "nodePort": 30100}), {}),
    (
        "PATCH",
        "/a",
        {"spec": {"ports": [{"port": 80, "nodePort": 30081}]}},
        {"content_type": "application/strategic-merge-patch+json"},
    ),
    ("POST", "?dryRun=All", _service("h", "NodePort", {"port": 80, "nodePort": 30080}), {}),  # 30080 is free again
    ("POST", "", _service("h", "NodePort", {"port": 80, "nodePort": 30080}), {}),  # a dry run reserved nothing
    ("DELETE", "/h", None, {}),
    ("POST", "", _service("i", "LoadBalancer", {"port": 80, "nodePort": 30080}), {}),  # deleted: free
]


def test_node_ports_are_allocated_checked_and_released_as_kube_apiserver_does(sides) -> None:
    """Explicit node ports are in 30000-32767 and nobody else's (two tenants shared 30080, 80 and
    99999 were stored), a change to NodePort allocates them (a merge patch stored a NodePort
    Service without one) and a change back, a changed port, a deletion release them. The ports
    allocated are compared only as present or not: kube-apiserver picks them at random."""
    for method, sub, body, kw in NODE_PORT_STEPS:
        answers = []
        for side in sides:
            code, out = side.request(method, SERVICES + sub, body, **kw)
            if code >= 400:
                answers.append(
                    {"code": code, "message": out.get("message"), "causes": (out.get("details") or {}).get("causes")}
                )
            elif method == "DELETE":
                answers.append({"code": code})
            else:
                given = {(p["port"], p.get("nodePort")) for p in (body.get("spec") or {}).get("ports") or []}
                answers.append(
                    {
                        "code": code,
                        "type": out["spec"]["type"],
                        "node ports": [
                            p.get("nodePort") if (p["port"], p.get("nodePort")) in given else bool(p.get("nodePort"))
                            for p in out["spec"]["ports"]
                        ],
                    }
                )
        theirs, ours = answers
        assert ours == theirs, (method, sub, body)


def test_the_node_port_range_full_is_a_clear_refusal(tmp_path) -> None:
    """Every node port taken: the next NodePort Service is refused with why (a StopIteration
    answered 500 before). 2,768 Services, so kubesched alone."""
    server = Server(tmp_path / "data").start()
    try:
        ports = [{"port": 1000 + i, "name": f"p{i}", "nodePort": 30000 + i} for i in range(2768)]
        code, out = server.request("POST", SERVICES, _service("all", "NodePort", *ports))
        assert code == 201, out
        code, out = server.request("POST", SERVICES, _service("one-more"))
        assert code == 422
        assert out["details"]["causes"][0]["field"] == "spec.ports[0].nodePort"
        assert "range is full" in out["message"]
    finally:
        server.stop()


QUOTA_STEPS: list[tuple[str, str, Any, dict[str, Any]]] = [
    ("POST", "/services", _service("q", "ClusterIP"), {}),
    ("PATCH", "/services/q", {"spec": {"type": "NodePort"}}, MERGE),  # services.nodeports: 0
    (
        "POST",
        "/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "q"},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "i",
                        "resources": {
                            "requests": {"cpu": "500m", "memory": "100Mi"},
                            "limits": {"cpu": "500m", "memory": "100Mi"},
                        },
                    }
                ]
            },
        },
        {},
    ),
    (
        "PATCH",
        "/pods/q/resize",
        {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}}]}},
        {"content_type": "application/strategic-merge-patch+json"},
    ),  # requests.cpu: 1
    (
        "POST",
        "/persistentvolumeclaims",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "q"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "500Mi"}}},
        },
        {},
    ),
    ("PATCH", "/persistentvolumeclaims/q", {"spec": {"resources": {"requests": {"storage": "5Gi"}}}}, MERGE),
]


def test_quota_is_charged_on_updates_and_a_pending_claim_cannot_grow(sides) -> None:
    """A change of type to NodePort under ``services.nodeports: 0`` and a resize past
    ``requests.cpu`` are refused as kube-apiserver's ResourceQuota plugin refuses them (charged
    what they add); an unbound claim's storage request is immutable (it could be grown past
    ``requests.storage`` before). No controller manager runs beside kube-apiserver here, so the
    quota's status is written as its controller would write it first."""
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "quota"},
        "spec": {
            "hard": {
                "services.nodeports": "0",
                "requests.cpu": "1",
                "requests.memory": "1Gi",
                "requests.storage": "1Gi",
            }
        },
    }
    ns = "/api/v1/namespaces/quota"
    for side in sides:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "quota"}}
        assert side.request("POST", "/api/v1/namespaces", namespace)[0] == 201
        assert side.request("POST", ns + "/resourcequotas", quota)[0] == 201
        current = side.request("GET", ns + "/resourcequotas/q")[1]
        current["status"] = {"hard": current["spec"]["hard"], "used": dict.fromkeys(current["spec"]["hard"], "0")}
        assert side.request("PUT", ns + "/resourcequotas/q/status", current)[0] == 200
    for method, sub, body, kw in QUOTA_STEPS:
        answers = []
        for side in sides:
            code, out = side.request(method, ns + sub, body, **kw)
            message = str(out.get("message") or "").split("\n")[0] if code >= 400 else ""
            answers.append({"code": code, "message": message, "reason": out.get("reason") if code >= 400 else None})
        theirs, ours = answers
        assert ours == theirs, (method, sub)
        assert theirs["code"] == (422 if "claims/" in sub else 403 if method == "PATCH" else 201)


def test_a_deleted_crd_waits_for_its_custom_resources_finalizers(sides) -> None:
    """Deleting a CRD whose custom resource holds a finalizer leaves the CRD Terminating (no new
    custom resources, no CRD of that name) until the finalizer is removed; before, the CRD went at
    once and the held object came back when the CRD was recreated."""
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "holds.tenant.example.com"},
        "spec": {
            "group": "tenant.example.com",
            "scope": "Namespaced",
            "names": {"plural": "holds", "kind": "Hold"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }
    path = "/apis/tenant.example.com/v1/namespaces/default/holds"

    def hold(name: str, finalizers: list[str] | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, **({"finalizers": finalizers} if finalizers else {})}
        return {"apiVersion": "tenant.example.com/v1", "kind": "Hold", "metadata": meta, "spec": {}}

    def state(side: Any) -> dict[str, Any]:
        code, got = side.request("GET", f"{crds}/{crd['metadata']['name']}")
        conditions = (
            {
                c["type"]: (c["status"], c.get("reason"), c.get("message"))
                for c in (got.get("status") or {}).get("conditions") or []
            }
            if code == 200
            else {}
        )
        items = side.request("GET", path)[1].get("items", []) if code == 200 else []
        return {
            "crd": code,
            "terminating": conditions.get("Terminating"),
            "finalizers": (got.get("metadata") or {}).get("finalizers") if code == 200 else None,
            "holds": sorted((i["metadata"]["name"], bool(i["metadata"].get("deletionTimestamp"))) for i in items),
        }

    for side in sides:
        assert side.request("POST", crds, crd)[0] == 201
        deadline = time.monotonic() + 30
        while side.request("GET", path)[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(0.5)
        assert side.request("POST", path, hold("held", ["tenant.example.com/hold"]))[0] == 201
        assert side.request("POST", path, hold("free"))[0] == 201
        assert side.request("DELETE", f"{crds}/{crd['metadata']['name']}")[0] == 200
    time.sleep(2)  # kube-apiserver's finalizer runs a moment after the delete
    theirs, ours = (state(side) for side in sides)
    assert ours == theirs
    assert theirs["terminating"][0] == "True" and theirs["holds"] == [("held", True)]
    refusals = []
    for side in sides:
        created = side.request("POST", path, hold("late"))
        recreated = side.request("POST", crds, crd)
        refusals.append([(code, body.get("message")) for code, body in (created, recreated)])
    assert refusals[1] == refusals[0]
    assert [code for code, _ in refusals[0]] == [403, 409]
    for side in sides:
        released = side.request(
            "PATCH", path + "/held", {"metadata": {"finalizers": None}}, content_type=MERGE["content_type"]
        )
        assert released[0] == 200
    for side in sides:  # both poll every 5 s for the remaining custom resources
        deadline = time.monotonic() + 30
        while side.request("GET", f"{crds}/{crd['metadata']['name']}")[0] != 404:
            assert time.monotonic() < deadline, "the CRD never went"
            time.sleep(0.5)
        assert side.request("POST", crds, crd)[0] == 201
    time.sleep(2)
    assert [state(side)["holds"] for side in sides] == [[], []]


def _hpa(name: str, low: int | None, high: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}
    spec["maxReplicas"] = high
    if low is not None:
        spec["minReplicas"] = low
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name}, "spec": spec}


def _cron(name: str, schedule: str) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
    spec = {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": pod}}}}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name}, "spec": spec}


def _job(name: str) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {"template": {"spec": pod}}}


def _crd(group: str, kind: str = "string", approval: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"things.{group}"}
    if approval is not None:
        meta["annotations"] = {"api-approved.kubernetes.io": approval}
    schema = {"type": "object", "properties": {"x": {"type": kind}}}
    spec = {
        "group": group,
        "scope": "Namespaced",
        "names": {"plural": "things", "kind": "Thing"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
    }
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": meta, "spec": spec}


HPAS, CRONJOBS, JOBS = (
    "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
    "/apis/batch/v1/namespaces/default/cronjobs",
    "/apis/batch/v1/namespaces/default/jobs",
)
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
VALIDATION = [
    ("HPA min above max", HPAS, _hpa("a", 5, 2)),  # max 0 scaled a Deployment to 0
    ("HPA max 0", HPAS, _hpa("b", None, 0)),
    ("HPA min 0 without an object metric", HPAS, _hpa("c", 0, 3)),
    ("HPA min -1", HPAS, _hpa("d", -1, 3)),
    ("cron with six fields", CRONJOBS, _cron("e", "0 0 * * * *")),
    ("cron with a huge step", CRONJOBS, _cron("f", "*/99999999999 * * * *")),
    ("cron on February 30", CRONJOBS, _cron("g", "0 0 30 2 *")),  # accepted upstream: it never fires
    ("cron on day 32", CRONJOBS, _cron("g2", "0 0 32 2 *")),
    ("cron named 53 characters", CRONJOBS, _cron("c" * 53, "* * * * *")),
    ("cron named 52 characters", CRONJOBS, _cron("c" * 52, "* * * * *")),
    ("cron with TZ", CRONJOBS, _cron("h", "TZ=UTC * * * * *")),
    ("cron @hourly", CRONJOBS, _cron("i", "@hourly")),
    ("job named 64 characters", JOBS, _job("j" * 64)),
    ("job named 63 characters", JOBS, _job("j" * 63)),
    ("CRD property of type bogus", CRD_PATH, _crd("bogus.example.com", "bogus")),
    ("CRD in k8s.io without approval", CRD_PATH, _crd("things.k8s.io")),
    (
        "CRD in k8s.io approved",
        CRD_PATH,
        _crd("things2.k8s.io", approval="https://github.com/kubernetes/kubernetes/pull/1"),
    ),
    ("CRD in k8s.io unapproved", CRD_PATH, _crd("things3.k8s.io", approval="unapproved, experimental-only")),
    ("CRD in k8s.io with a bad approval", CRD_PATH, _crd("things4.k8s.io", approval="yes")),
    ("CRD in kubernetes.io without approval", CRD_PATH, _crd("x.kubernetes.io")),
]


@pytest.mark.parametrize(("path", "body"), [c[1:] for c in VALIDATION], ids=[c[0] for c in VALIDATION])
def test_workload_autoscaler_and_crd_validation_answers_as_kube_apiserver(
    sides, path: str, body: dict[str, Any]
) -> None:
    answers = []
    for side in sides:
        code, out = side.request("POST", path + "?dryRun=All", body)
        answers.append((code, out.get("message") if code >= 400 else None))
    theirs, ours = answers
    assert ours == theirs


def _claim(name: str, selectors: list[dict[str, Any]]) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "selectors": selectors}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [request]}},
    }


def _driver_is(length: int) -> dict[str, Any]:
    """A selector whose expression is ``length`` bytes long."""
    head = 'device.driver == "'
    return {"cel": {"expression": head + "x" * (length - len(head) - 1) + '"'}}


def _cel(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


NEST3 = "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, a != b)))"
NEST4 = "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, device.attributes.all(d, a != b))))"
SELECTOR_CASES = [
    ("10 KiB exactly", _claim("at-limit", [_driver_is(10 * 1024)])),
    ("an attribute", _claim("attr", [_cel('device.attributes["gpu.example.com"].model == "a100"')])),
    ("a capacity", _claim("cap", [_cel('device.capacity["gpu.example.com"].memory.compareTo(quantity("1Gi")) >= 0')])),
    ("three nested loops", _claim("nest-three", [_cel(NEST3)])),
    ("four nested loops", _claim("nest-four", [_cel(NEST4)])),
    ("an inner map's loop", _claim("inner", [_cel("device.attributes.all(d, device.attributes[d].all(k, k != d))")])),
    (
        "string work in loops",
        _claim("strings", [_cel("device.attributes.all(a, device.attributes.all(b, a.startsWith(b)))")]),
    ),
    ("a byte over", _claim("over", [_driver_is(10 * 1024 + 1)])),
    ("no cel", _claim("no-cel", [{}])),
    ("two over", _claim("two-over", [_driver_is(20_000), _driver_is(10 * 1024 + 1)])),
    # what cel-go's checker refuses when the claim is written, word for word
    ("an undefined field", _claim("undefined", [_cel("device.foo == 1")])),
    ("no overload", _claim("overload", [_cel("device.driver == 1")])),
    ("an undeclared name", _claim("undeclared", [_cel("device.driver == 'x' || bar(1)")])),
    ("a string result", _claim("not-bool", [_cel("device.driver")])),
    ("a map result", _claim("map-result", [_cel("device.attributes")])),
    ("a quantity compared", _claim("quantity", [_cel("device.capacity['a'].b == 1")])),
    ("a domain compared", _claim("domain", [_cel("device.attributes.exists(d, d == 1)")])),
    ("a member overload", _claim("member", [_cel("device.driver.startsWith(1)")])),
    ("an attribute's unknown type", _claim("unknown", [_cel("device.attributes['a'].b")])),
    ("two refused", _claim("two-refused", [_cel("device.foo"), _driver_is(10 * 1024 + 1)])),
    ("a syntax error", _claim("syntax", [_cel("device.driver ==")])),
]


@pytest.mark.parametrize(("case", "claim"), SELECTOR_CASES, ids=[c[0] for c in SELECTOR_CASES])
def test_a_claims_device_selectors_are_bounded_as_kube_apiserver_bounds_them(sides, case, claim) -> None:
    """A tenant's ResourceClaim is compiled and evaluated by the scheduler for every device it
    looks at: its selectors' expressions are at most 10 KiB (``CELSelectorExpressionMaxLength``),
    costed, and type-checked as cel-go checks them (a bool or an attribute's unknown type)."""
    answers = []
    for side in sides:
        code, body = side.request("POST", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims", claim)
        causes = sorted(
            (c.get("field"), c.get("reason"), c.get("message")) for c in (body.get("details") or {}).get("causes") or []
        )
        answers.append((code, body.get("reason"), body.get("message"), causes))
    theirs, ours = answers
    assert ours == theirs
    refused = {"a byte over", "no cel", "two over", "four nested loops", "an undefined field", "no overload"}
    refused |= {"an undeclared name", "a string result", "a map result", "a quantity compared", "a domain compared"}
    refused |= {"a member overload", "two refused", "a syntax error"}
    assert theirs[0] == (422 if case in refused else 201)
