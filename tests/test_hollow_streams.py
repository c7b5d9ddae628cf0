"""``kubectl exec``, ``attach`` and ``port-forward`` against ``kubesched up``: kube-apiserver's checks
first (the container, a host assigned), then a 400 that says a hollow node runs no process and
opens no port, where a missing subresource would give kubectl a 404 it cannot explain."""

from __future__ import annotations

import subprocess

import pytest

from helpers import make_pod
from live import Server, kubectl_binaries, temp_home, wait_for

BINARIES = kubectl_binaries()
KUBECTL = BINARIES.get("1.37") or next(iter(BINARIES.values()), None)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    s = Server(tmp_path_factory.mktemp("streams") / "data", command="up", nodes=1).start()
    try:
        for name, spec in (("web", {}), ("stuck", {"nodeSelector": {"disk": "none"}})):
            body = {"apiVersion": "v1", **make_pod(name, cpu="100m", spec=spec)}
            body["metadata"].pop("uid")
            assert s.request("POST", "/api/v1/namespaces/default/pods", body)[0] == 201
        wait_for(lambda: s.request("GET", "/api/v1/namespaces/default/pods/web")[1]["spec"].get("nodeName"))
        yield s
    finally:
        s.stop()


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            "web/exec?command=ls&container=c&stdout=true",
            'container "c" in pod "web" is a hollow container of kubesched on node node-0: it runs no process, '
            "so there is nothing to exec in",
        ),
        (
            "web/attach?container=c&stdout=true",
            'container "c" in pod "web" is a hollow container of kubesched on node node-0: it runs no process, '
            "so there is nothing to attach to",
        ),
        (
            "web/portforward?ports=80",
            'pod "web" runs on the hollow node node-0 of kubesched: it listens on no port, so there is nothing '
            "to forward to",
        ),
        ("web/exec?command=ls&container=sidecar", "container sidecar is not valid for pod web"),
        ("stuck/exec?command=ls", "pod stuck does not have a host assigned"),
        ("stuck/portforward?ports=80", "pod stuck does not have a host assigned"),
    ],
)
def test_the_answer_names_why(server: Server, path: str, message: str) -> None:
    code, status = server.request("POST", f"/api/v1/namespaces/default/pods/{path}")
    assert (code, status["reason"], status["message"]) == (400, "BadRequest", message)


def test_discovery_lists_the_subresources(server: Server) -> None:
    names = {r["name"] for r in server.request("GET", "/api/v1")[1]["resources"]}
    assert {"pods/exec", "pods/attach", "pods/portforward"} <= names


@pytest.mark.skipif(KUBECTL is None, reason="no kubectl (scripts/build_upstream.sh builds v1.37.2)")
def test_kubectl_prints_it(server: Server) -> None:
    env = {"HOME": temp_home(), "KUBECONFIG": str(server.kubeconfig), "PATH": "/usr/bin:/bin"}
    for args, tail in (
        (["exec", "web", "--", "ls"], "so there is nothing to exec in"),
        (["port-forward", "pod/web", "8080:80"], "so there is nothing to forward to"),
    ):
        done = subprocess.run([str(KUBECTL), *args], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 1
        assert done.stderr.strip().endswith(tail), done.stderr
