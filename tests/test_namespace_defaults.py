"""What kube-controller-manager gives every namespace, under ``kubesched apiserver``: the
``default`` ServiceAccount (the service account controller; put back when deleted, so ``kubectl
create token default`` works at once) and the ``kube-root-ca.crt`` ConfigMap holding the API
server's CA (the root CA publisher; its data restored when changed)."""

from __future__ import annotations

import pytest

from live import Server, wait_for

DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
    "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of "
    "Kubernetes clusters."
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    s = Server(tmp_path_factory.mktemp("nsdefaults") / "data").start()
    try:
        yield s
    finally:
        s.stop()


def test_every_namespace_gets_its_account_and_the_ca(server: Server) -> None:
    ca = (server.data_dir / "ca.crt").read_text()
    for ns in ("default", "kube-system"):  # there at start
        wait_for(lambda ns=ns: server.request("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")[0] == 200)
    assert server.request("POST", "/api/v1/namespaces", {"metadata": {"name": "fresh"}})[0] == 201
    wait_for(lambda: server.request("GET", "/api/v1/namespaces/fresh/serviceaccounts/default")[0] == 200)
    cm = wait_for(lambda: server.request("GET", "/api/v1/namespaces/fresh/configmaps/kube-root-ca.crt")[1].get("data"))
    assert cm == {"ca.crt": ca}
    got = server.request("GET", "/api/v1/namespaces/fresh/configmaps/kube-root-ca.crt")[1]
    assert got["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}


def test_they_come_back(server: Server) -> None:
    ca = (server.data_dir / "ca.crt").read_text()
    assert server.request("POST", "/api/v1/namespaces", {"metadata": {"name": "again"}})[0] == 201
    wait_for(lambda: server.request("GET", "/api/v1/namespaces/again/serviceaccounts/default")[0] == 200)
    assert server.request("DELETE", "/api/v1/namespaces/again/serviceaccounts/default")[0] == 200
    wait_for(lambda: server.request("GET", "/api/v1/namespaces/again/serviceaccounts/default")[0] == 200)
    path = "/api/v1/namespaces/again/configmaps/kube-root-ca.crt"
    wait_for(lambda: server.request("GET", path)[0] == 200)
    patch = {"data": {"ca.crt": "tampered"}}
    assert server.request("PATCH", path, patch, content_type="application/merge-patch+json")[0] == 200
    wait_for(lambda: server.request("GET", path)[1]["data"] == {"ca.crt": ca})
    token = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    code, issued = server.request("POST", "/api/v1/namespaces/again/serviceaccounts/default/token", token)
    assert code == 201 and issued["status"]["token"]
