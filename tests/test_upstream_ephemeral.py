"""kube-apiserver v1.37.2 judges ``pods/ephemeralcontainers`` (what ``kubectl debug`` writes): the
same pod and the same strategic-merge patches to both servers, in order; each answer's code,
reason, message and causes agree, and an accepted one leaves the same spec (only the ephemeral
containers changed, defaulted as kube-apiserver defaults them, the generation bumped). And
``kubectl debug`` itself adds a debug container to a pod of ``kubesched up``."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from tests.live import Server, temp_home, wait_for
from tests.upstream import ControlPlane

PODS = "/api/v1/namespaces/default/pods"
SMP = "application/strategic-merge-patch+json"
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web"},
    "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
}


def debugger(name: str, **extra: Any) -> dict[str, Any]:
    return {"spec": {"ephemeralContainers": [{"name": name, "image": "busybox", "stdin": True, "tty": True, **extra}]}}


# (id, the patch), applied one after the other to the same pod
STEPS: list[tuple[str, dict[str, Any]]] = [
    ("a debug container", debugger("debug", targetContainerName="app")),
    ("the same name as the app", debugger("app")),
    ("ports", debugger("d2", ports=[{"containerPort": 80}])),
    (
        "resources and probes",
        debugger("d3", resources={"requests": {"cpu": "1"}}, readinessProbe={"exec": {"command": ["true"]}}),
    ),
    ("an unknown target", debugger("d4", targetContainerName="nope")),
    ("a subPath mount", debugger("d5", volumeMounts=[{"name": "v", "mountPath": "/x", "subPath": "y"}])),
    ("no image", {"spec": {"ephemeralContainers": [{"name": "d6"}]}}),
    ("a second one", debugger("debug2")),
    (
        "the first one removed",
        {
            "spec": {
                "$setElementOrder/ephemeralContainers": [{"name": "debug2"}],
                "ephemeralContainers": [{"name": "debug", "$patch": "delete"}],
            }
        },
    ),
]


def session(server: Any) -> list[Any]:
    assert server.request("POST", PODS, POD)[0] == 201
    out = []
    for _case, patch in STEPS:
        code, body = server.request("PATCH", f"{PODS}/web/ephemeralcontainers", patch, content_type=SMP)
        if code == 200:
            spec = body["spec"]
            out.append((code, body["metadata"].get("generation"), spec.get("ephemeralContainers"), spec["containers"]))
        else:
            causes = sorted(
                (c.get("field"), c.get("reason"), c.get("message"))
                for c in (body.get("details") or {}).get("causes") or []
            )
            out.append((code, body.get("reason"), body.get("message"), causes))
    code, body = server.request("GET", f"{PODS}/web/ephemeralcontainers")
    out.append((code, body.get("kind"), [c["name"] for c in body["spec"].get("ephemeralContainers") or []]))
    return out


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("ephemeral")
    plane = ControlPlane(root / "upstream").start()
    ours = Server(root / "data", command="up", nodes=1).start()  # a hollow node runs the pods
    try:
        yield session(plane), session(ours), ours, plane.bin
    finally:
        ours.stop()
        plane.stop()


@pytest.mark.parametrize("i", range(len(STEPS) + 1), ids=[s[0] for s in STEPS] + ["read back"])
def test_ephemeral_containers_are_answered_as_kube_apiserver_answers(answers, i):
    theirs, mine = answers[0], answers[1]
    assert mine[i] == theirs[i]


def test_the_table_accepts_and_refuses(answers):
    theirs = answers[0]
    assert [a[0] for a in theirs[:-1]] == [200, 422, 422, 422, 422, 422, 422, 200, 422]


def test_kubectl_debug_adds_a_debug_container(answers):
    """kubectl v1.37.2's ``debug`` (without attaching) against ``kubesched up``: the ephemeral
    container is added as it asked, and the hollow kubelet starts it."""
    plane_bin, ours = answers[3], answers[2]
    ours.request("POST", PODS, {**POD, "metadata": {"name": "debugged"}})
    done = subprocess.run(
        [
            str(plane_bin / "kubectl"),
            "--kubeconfig",
            str(ours.kubeconfig),
            "debug",
            "debugged",
            "-c",
            "dbg",
            "--image=busybox",
            "--target=app",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"HOME": temp_home(), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    _, pod = ours.request("GET", f"{PODS}/debugged")
    (ec,) = pod["spec"]["ephemeralContainers"]
    assert (ec["name"], ec["image"], ec["targetContainerName"]) == ("dbg", "busybox", "app")

    def started() -> Any:
        statuses = ours.request("GET", f"{PODS}/debugged")[1]["status"].get("ephemeralContainerStatuses") or []
        return [(s["name"], list(s["state"])) for s in statuses] or None

    assert wait_for(started) == [("dbg", ["running"])]
