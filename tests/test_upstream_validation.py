"""kube-apiserver v1.37.2 is the judge of the embedded API server's validation: every malformed
Deployment, ReplicaSet, StatefulSet, DaemonSet and Job of ``test_workload_validation``'s table, pods
in user namespaces of their own, and every pod of the oracle's random clusters are sent to both,
and the answers must agree in status code, reason, message and causes."""

from __future__ import annotations

import json
import random
import re
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest
from tests.live import Server
from tests.random_clusters import make_case
from tests.test_workload_validation import CASES, PATHS, manifest
from tests.upstream import ADMIN_TOKEN, ControlPlane


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    plane = ControlPlane(tmp_path_factory.mktemp("upstream-validation")).start()
    ours = Server(tmp_path_factory.mktemp("kubesched-validation") / "data").start()
    try:
        yield plane, ours
    finally:
        ours.stop()
        plane.stop()


def upstream_post(plane: ControlPlane, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # kube-apiserver's self-signed serving certificate
    req = urllib.request.Request(
        plane.server + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def answer(code: int, body: dict[str, Any]) -> dict[str, Any]:
    details = body.get("details") or {}
    return {
        "code": code,
        "reason": body.get("reason"),
        "message": body.get("message"),
        "causes": details.get("causes"),
    }


@pytest.mark.parametrize(("kind", "spec", "causes"), CASES, ids=[f"{c[0]}-{c[2][0][0]}" for c in CASES])
def test_kube_apiserver_and_kubesched_refuse_alike(servers, kind, spec, causes):
    plane, ours = servers
    name = f"judged-{kind.lower()}"
    obj = manifest(kind, name, **spec)
    theirs = answer(*upstream_post(plane, PATHS[kind], obj))
    mine = answer(*ours.request("POST", PATHS[kind], obj))
    assert mine == theirs


def _blank(text: str | None) -> str | None:
    """A message quoting a stored object, with what differs between two servers blanked."""
    if text is None:
        return None
    for key in ("uid", "resourceVersion", "creationTimestamp", "time"):
        text = re.sub(rf'(\\"{key}\\":\\")[^\\]*(\\")', r"\1X\2", text)
    return text


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        ("application/strategic-merge-patch+json", {"metadata": {"labelz": {"a": "b", "n": 1.5}}}),
        ("application/merge-patch+json", {"metadata": {"labelz": {"a": "<b>"}}, "data": {"k": "v2"}}),
    ],
    ids=["strategic", "merge"],
)
def test_a_strict_patch_with_unknown_fields_is_refused_alike(servers, content_type, patch):
    """patch.go quotes what it decoded: the patch as Go prints a map, or the patched object's JSON."""
    plane, ours = servers
    path = "/api/v1/namespaces/default/configmaps"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "strict"}, "data": {"k": "v"}}
    plane.request("POST", path, body)
    ours.request("POST", path, body)
    url = f"{path}/strict?fieldValidation=Strict"
    theirs = answer(*plane.request("PATCH", url, patch, content_type=content_type))
    mine = answer(*ours.request("PATCH", url, patch, content_type=content_type))
    assert theirs["code"] == 422 and "strict decoding error" in theirs["message"]
    blank = {**theirs, "message": _blank(theirs["message"]), "causes": None}
    assert {**mine, "message": _blank(mine["message"]), "causes": None} == blank
    assert [c["field"] for c in mine["causes"]] == [c["field"] for c in theirs["causes"]] == ["patch"]


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "x"}], **spec},
    }


@pytest.mark.parametrize(
    "obj",
    [
        pod("Bad_Name", priorityClassName="no-such-class"),  # Priority's 403 before the name's 422
        pod("Bad_Name", runtimeClassName="no-such-class"),  # RuntimeClass's 403 before it too
        pod("Bad_Name"),  # the name alone: the 422
        pod("ok-name", priorityClassName="no-such-class", priority=5),
    ],
    ids=["name-and-priority-class", "name-and-runtime-class", "name-alone", "priority-given"],
)
def test_the_mutating_plugins_answer_before_validation_as_kube_apiserver(servers, obj):
    """create.go runs the mutating admission plugins, then the registry validates the object:
    what a plugin refuses is refused for that, even when the object is invalid too."""
    plane, ours = servers
    path = "/api/v1/namespaces/default/pods"
    theirs = answer(*upstream_post(plane, path, obj))
    mine = answer(*ours.request("POST", path, obj))
    assert mine == theirs
    assert mine["code"] == (422 if obj["spec"].keys() == {"containers"} else 403)


@pytest.mark.parametrize(
    "obj",
    [
        pod("userns-net", hostUsers=False, hostNetwork=True),
        pod("userns-pid", hostUsers=False, hostPID=True),
        pod("userns-ipc", hostUsers=False, hostIPC=True),
        pod("userns-alone", hostUsers=False),
        pod("hostnet-alone", hostNetwork=True),
    ],
    ids=["network", "pid", "ipc", "userns-alone", "hostnet-alone"],
)
def test_a_pod_in_its_own_user_namespace_shares_no_host_namespace(servers, obj):
    """``validateHostUsers`` (UserNamespacesHostNetworkSupport is alpha and off)."""
    plane, ours = servers
    path = "/api/v1/namespaces/default/pods"
    theirs = answer(*upstream_post(plane, path, obj))
    mine = answer(*ours.request("POST", path, obj))
    if theirs["code"] == 201:
        assert mine["code"] == 201
    else:
        assert mine == theirs
    assert theirs["code"] == (201 if obj["metadata"]["name"].endswith("alone") else 422)


def test_the_random_clusters_pods_are_accepted_or_refused_alike(servers):
    """Every pod the oracle's random clusters hold (``tests/random_clusters.py``: every field the
    scheduler reads), created on both servers: kube-apiserver's answer is kubesched's."""
    plane, ours = servers
    created: set[str] = set()
    for seed in range(40):
        for obj in make_case(random.Random(seed)):
            if obj["kind"] in ("PriorityClass", "RuntimeClass") and obj["metadata"]["name"] not in created:
                created.add(obj["metadata"]["name"])
                path = (
                    "/apis/scheduling.k8s.io/v1/priorityclasses"
                    if obj["kind"] == "PriorityClass"
                    else ("/apis/node.k8s.io/v1/runtimeclasses")
                )
                assert upstream_post(plane, path, obj)[0] == 201
                assert ours.request("POST", path, obj)[0] == 201
            if obj["kind"] != "Pod":
                continue
            obj = {**obj, "metadata": {**obj["metadata"], "name": f"c{seed}-{obj['metadata']['name']}"}}
            path = f"/api/v1/namespaces/{obj['metadata'].get('namespace') or 'default'}/pods"
            theirs = answer(*upstream_post(plane, path, obj))
            mine = answer(*ours.request("POST", path, obj))
            assert mine["code"] == theirs["code"], (seed, obj, theirs, mine)
            if theirs["code"] != 201:
                assert mine == theirs, (seed, obj)


def daemonset(name: str, generation: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if generation is not None:
        meta["annotations"] = {"deprecated.daemonset.template.generation": generation}
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": meta,
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template},
    }


def generations(code: int, body: dict[str, Any]) -> tuple[int, Any, Any]:
    """A DaemonSet write's answer: the template generation and generation stored, or the refusal."""
    if code >= 300:
        return code, body.get("reason"), body.get("message")
    meta = body["metadata"]
    return code, meta.get("annotations"), meta.get("generation")


def test_a_daemonsets_template_generation_is_kube_apiservers(servers):
    """apps/v1 keeps the DaemonSet's template generation in an annotation (conversion.go) that the
    strategy owns: at least 1 on create, kept on update unless the pod template changes, one more
    then, whatever the writer sends; a value that is not a number cannot be decoded (400). The
    DaemonSet controller labels pods with it and counts them updated by it."""
    plane, ours = servers
    path = "/apis/apps/v1/namespaces/default/daemonsets"
    for name, given in (("tg-none", None), ("tg-five", "5"), ("tg-zero", "0"), ("tg-neg", "-3"), ("tg-bad", "x")):
        theirs = generations(*plane.request("POST", path, daemonset(name, given)))
        assert generations(*ours.request("POST", path, daemonset(name, given))) == theirs, name
    assert theirs[0] == 400

    def update(server: Any, change: Any) -> tuple[int, Any, Any]:
        body = server.request("GET", f"{path}/tg-five")[1]
        change(body)
        return generations(*server.request("PUT", f"{path}/tg-five", body))

    def annotate(value: str | None) -> Any:
        def change(body: dict[str, Any]) -> None:
            body["metadata"]["annotations"] = (
                {} if value is None else {"deprecated.daemonset.template.generation": value}
            )

        return change

    def image(body: dict[str, Any]) -> None:
        body["spec"]["template"]["spec"]["containers"][0]["image"] = "y"

    def ready(body: dict[str, Any]) -> None:
        body["spec"]["minReadySeconds"] = 3

    steps = [annotate("9"), image, ready, annotate(None), annotate("y")]
    answers = [update(plane, step) for step in steps]
    assert [update(ours, step) for step in steps] == answers
    assert [a[1] for a in answers[:4]] == [{"deprecated.daemonset.template.generation": g} for g in "5666"]
