"""kube-apiserver v1.37.2 judges ``pods/resize`` (in-place resize, GA since v1.35): the same pods and
the same resize requests to both servers; each answer's code, reason, message and causes agree, and
a resize that is accepted leaves the same spec (only resources changed, the generation bumped)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.live import Server
from tests.upstream import ControlPlane

PODS = "/api/v1/namespaces/default/pods"


def container(name: str, cpu: str, memory: str = "128Mi", limits: dict[str, str] | None = None) -> dict[str, Any]:
    res: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if limits is not None:
        res["limits"] = limits
    return {"name": name, "image": "pause", "resources": res}


def pod(name: str, *containers: dict[str, Any], inits: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if inits:
        spec["initContainers"] = inits
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def resized(base: dict[str, Any], change: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    change(out["spec"])
    return out


BURSTABLE = pod("burst", container("c", "100m"))
GUARANTEED = pod("guar", container("c", "1", "1Gi", {"cpu": "1", "memory": "1Gi"}))
SIDECAR = {**container("side", "100m"), "restartPolicy": "Always"}
WITH_INITS = pod("inits", container("c", "100m"), inits=[container("init", "100m"), SIDECAR])


def _set(path: list[Any], value: Any):
    def change(spec: dict[str, Any]) -> None:
        target: Any = spec
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _delete(path: list[Any]):
    def change(spec: dict[str, Any]) -> None:
        target: Any = spec
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return change


# (id, the pod, the resized pod sent with PUT)
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("more cpu", BURSTABLE, resized(BURSTABLE, _set(["containers", 0, "resources", "requests", "cpu"], "300m"))),
    ("image too", BURSTABLE, resized(BURSTABLE, _set(["containers", 0, "image"], "busybox"))),
    ("requests removed", BURSTABLE, resized(BURSTABLE, _delete(["containers", 0, "resources", "requests"]))),
    (
        "a container added",
        BURSTABLE,
        resized(BURSTABLE, lambda s: s["containers"].append(container("d", "100m"))),
    ),
    ("renamed", BURSTABLE, resized(BURSTABLE, _set(["containers", 0, "name"], "other"))),
    (
        "QoS class changes",
        GUARANTEED,
        resized(GUARANTEED, _set(["containers", 0, "resources", "limits", "cpu"], "2")),
    ),
    (
        "ephemeral storage",
        BURSTABLE,
        resized(BURSTABLE, _set(["containers", 0, "resources", "requests", "ephemeral-storage"], "1Gi")),
    ),
    (
        "a plain init container",
        WITH_INITS,
        resized(WITH_INITS, _set(["initContainers", 0, "resources", "requests", "cpu"], "200m")),
    ),
    ("a sidecar", WITH_INITS, resized(WITH_INITS, _set(["initContainers", 1, "resources", "requests", "cpu"], "200m"))),
    (
        "an init container restarting on resize",
        WITH_INITS,
        resized(
            WITH_INITS,
            lambda s: s["initContainers"][0].update(
                resources={"requests": {"cpu": "200m", "memory": "128Mi"}},
                resizePolicy=[{"resourceName": "cpu", "restartPolicy": "RestartContainer"}],
            ),
        ),
    ),
    ("an init container's image", WITH_INITS, resized(WITH_INITS, _set(["initContainers", 0, "image"], "busybox"))),
]


def answer(code: int, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or body.get("kind") != "Status":
        return {"code": code, "spec": {k: body["spec"].get(k) for k in ("containers", "initContainers")}}
    details = body.get("details") or {}
    return {
        "code": code,
        "reason": body.get("reason"),
        "message": body.get("message"),
        "causes": details.get("causes"),
    }


def session(server: Any) -> dict[str, Any]:
    out = {}
    for i, (case, base, new) in enumerate(CASES):
        name = f"p{i}"
        body = copy.deepcopy(base)
        body["metadata"] = {"name": name}
        code, created = server.request("POST", PODS, body)
        assert code == 201, created
        sent = copy.deepcopy(new)
        sent["metadata"] = {"name": name, "resourceVersion": created["metadata"]["resourceVersion"]}
        code, got = server.request("PUT", f"{PODS}/{name}/resize", sent)
        out[case] = answer(code, got)
        if code == 200:
            out[case]["generation"] = got["metadata"].get("generation")
    return out


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("resize")
    plane = ControlPlane(root / "upstream").start()
    ours = Server(root / "data", args=["--no-kubelet"]).start()  # pods stay unscheduled on both
    try:
        yield session(plane), session(ours)
    finally:
        ours.stop()
        plane.stop()


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_resize_answers_as_kube_apiserver(answers, case):
    theirs, mine = answers
    assert mine[case] == theirs[case]


def test_an_accepted_resize_changes_the_resources_alone(answers):
    theirs, _ = answers
    assert theirs["more cpu"]["code"] == 200 and theirs["more cpu"]["generation"] == 2
    assert theirs["more cpu"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "300m"
