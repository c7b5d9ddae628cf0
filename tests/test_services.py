"""Services as kube-apiserver's registry makes them, under ``kubesched apiserver``: the
``default/kubernetes`` Service pointing at the server, a cluster IP per Service from the range
(headless ones ``None``, a taken one refused), node ports for NodePort and LoadBalancer, both kept
when an update leaves them out, and ``kubectl get svc`` with upstream's columns."""

from __future__ import annotations

import subprocess

import pytest

from live import Server, kubectl_binaries, temp_home

BINARIES = kubectl_binaries()
KUBECTL = BINARIES.get("1.37") or next(iter(BINARIES.values()), None)
PATH = "/api/v1/namespaces/default/services"


def service(name: str, **spec: object) -> dict:
    body = {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}], **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    s = Server(tmp_path_factory.mktemp("services") / "data").start()
    try:
        yield s
    finally:
        s.stop()


def test_the_kubernetes_service(server: Server) -> None:
    code, svc = server.request("GET", f"{PATH}/kubernetes")
    assert code == 200
    assert svc["spec"]["clusterIP"] == "10.0.0.1"
    assert svc["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": server.port}]
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}


def test_cluster_ips_and_node_ports(server: Server) -> None:
    made = {}
    for name, extra in (("a", {}), ("b", {}), ("np", {"type": "NodePort"}), ("lb", {"type": "LoadBalancer"})):
        code, svc = server.request("POST", PATH, service(name, **extra))
        assert code == 201, svc
        made[name] = svc["spec"]
    ips = [spec["clusterIP"] for spec in made.values()]
    assert len(set(ips)) == 4 and "10.0.0.1" not in ips and all(ip.startswith("10.0.") for ip in ips)
    assert all(spec["clusterIPs"] == [spec["clusterIP"]] for spec in made.values())
    assert made["a"]["ports"] == [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]
    node_ports = [made[n]["ports"][0]["nodePort"] for n in ("np", "lb")]
    assert len(set(node_ports)) == 2 and all(30000 <= p <= 32767 for p in node_ports)
    # an update without the allocated values keeps them
    update = service("np", type="NodePort")
    update["metadata"]["resourceVersion"] = server.request("GET", f"{PATH}/np")[1]["metadata"]["resourceVersion"]
    code, kept = server.request("PUT", f"{PATH}/np", update)
    assert code == 200
    assert kept["spec"]["clusterIP"] == made["np"]["clusterIP"]
    assert kept["spec"]["ports"][0]["nodePort"] == made["np"]["ports"][0]["nodePort"]
    headless = server.request("POST", PATH, service("headless", clusterIP="None"))[1]
    assert headless["spec"]["clusterIPs"] == ["None"]
    code, status = server.request("POST", PATH, service("twin", clusterIP=made["a"]["clusterIP"]))
    assert code == 422
    ip = made["a"]["clusterIP"]
    assert status["message"] == (
        f'Service "twin" is invalid: spec.clusterIPs: Invalid value: "{ip}": failed to allocate IP {ip}: '
        "provided IP is already allocated"
    )


@pytest.mark.skipif(KUBECTL is None, reason="no kubectl (scripts/build_upstream.sh builds v1.37.2)")
def test_kubectl_get_svc(server: Server) -> None:
    env = {"HOME": temp_home(), "KUBECONFIG": str(server.kubeconfig), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [str(KUBECTL), "get", "svc", "kubernetes", "np", "-o", "wide"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines()]
    assert lines[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    assert lines[1][:5] == ["kubernetes", "ClusterIP", "10.0.0.1", "<none>", "443/TCP"] and lines[1][6] == "<none>"
    np = server.request("GET", f"{PATH}/np")[1]["spec"]
    assert lines[2][:5] == ["np", "NodePort", np["clusterIP"], "<none>", f"80:{np['ports'][0]['nodePort']}/TCP"]
    assert lines[2][6] == "app=np"
