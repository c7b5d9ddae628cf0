"""Endpoints and EndpointSlices from their controllers under ``kubesched up``: a Service's ready
pods listed with their IPs, nodes and the resolved target ports (a named port per pod), the slice
owned by its Service and labelled as upstream's controller labels it, both following pods that come
and go, and both gone with the Service; ``kubectl get`` prints upstream's columns."""

from __future__ import annotations

import subprocess

import pytest

from helpers import make_pod
from live import Server, kubectl_binaries, temp_home, wait_for

BINARIES = kubectl_binaries()
KUBECTL = BINARIES.get("1.37") or next(iter(BINARIES.values()), None)
NS = "/api/v1/namespaces/default"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"


def web_pod(name: str) -> dict:
    pod = {"apiVersion": "v1", **make_pod(name, cpu="100m")}
    pod["metadata"].pop("uid")
    pod["metadata"]["labels"] = {"app": "web"}
    pod["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": 8080}]
    return pod


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    s = Server(tmp_path_factory.mktemp("endpoints") / "data", command="up", nodes=2).start()
    try:
        yield s
    finally:
        s.stop()


def slices(server: Server, service: str) -> list[dict]:
    items = server.request("GET", f"{SLICES}?labelSelector=kubernetes.io/service-name={service}")[1]["items"]
    return items


def test_endpoints_and_slices_follow_the_pods(server: Server) -> None:
    for name in ("web-a", "web-b"):
        assert server.request("POST", f"{NS}/pods", web_pod(name))[0] == 201
    svc = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }
    code, made = server.request("POST", f"{NS}/services", svc)
    assert code == 201

    def addresses() -> list[tuple[str, str]]:
        ep = server.request("GET", f"{NS}/endpoints/web")[1]
        return sorted(
            (a["targetRef"]["name"], a.get("nodeName", ""))
            for s in ep.get("subsets") or []
            for a in s.get("addresses") or []
        )

    wait_for(lambda: len(addresses()) == 2, timeout=30)
    ep = server.request("GET", f"{NS}/endpoints/web")[1]
    assert ep["subsets"][0]["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    pods = {p["metadata"]["name"]: p for p in server.request("GET", f"{NS}/pods?labelSelector=app=web")[1]["items"]}
    assert sorted(a["ip"] for a in ep["subsets"][0]["addresses"]) == sorted(p["status"]["podIP"] for p in pods.values())
    wait_for(lambda: slices(server, "web") and len(slices(server, "web")[0].get("endpoints") or []) == 2, timeout=30)
    (slice_,) = slices(server, "web")
    assert slice_["metadata"]["name"].startswith("web-") and slice_["addressType"] == "IPv4"
    assert slice_["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
    assert slice_["metadata"]["ownerReferences"][0]["uid"] == made["metadata"]["uid"]
    assert slice_["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert all(e["conditions"] == {"ready": True, "serving": True, "terminating": False} for e in slice_["endpoints"])
    # a pod leaves: both follow
    assert server.request("DELETE", f"{NS}/pods/web-a")[0] == 200
    wait_for(lambda: [n for n, _ in addresses()] == ["web-b"], timeout=30)
    wait_for(lambda: [e["targetRef"]["name"] for e in slices(server, "web")[0]["endpoints"]] == ["web-b"], timeout=30)
    # the Service goes: so do its Endpoints and slices
    assert server.request("DELETE", f"{NS}/services/web")[0] == 200
    wait_for(lambda: server.request("GET", f"{NS}/endpoints/web")[0] == 404, timeout=30)
    wait_for(lambda: slices(server, "web") == [], timeout=30)


@pytest.mark.skipif(KUBECTL is None, reason="no kubectl (scripts/build_upstream.sh builds v1.37.2)")
def test_kubectl_columns(server: Server) -> None:
    assert server.request("POST", f"{NS}/pods", web_pod("web-c"))[0] == 201
    svc = {
        "metadata": {"name": "shown"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    assert server.request("POST", f"{NS}/services", svc)[0] == 201
    env = {"HOME": temp_home(), "KUBECONFIG": str(server.kubeconfig), "PATH": "/usr/bin:/bin"}

    def kubectl(*args: str) -> list[list[str]]:
        done = subprocess.run([str(KUBECTL), *args], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        return [line.split() for line in done.stdout.splitlines()]

    ip = wait_for(lambda: server.request("GET", f"{NS}/pods/web-c")[1].get("status", {}).get("podIP"))
    items = server.request("GET", f"{NS}/pods?labelSelector=app=web")[1]["items"]
    others = [p["status"]["podIP"] for p in items if not p["metadata"].get("deletionTimestamp")]
    assert ip in others
    listed = {f"{a}:8080" for a in others}  # web-b too, from the test before

    def endpoints_row() -> list[str]:
        rows = kubectl("get", "endpoints", "shown")
        return rows[1] if len(rows) > 1 else []

    wait_for(lambda: endpoints_row()[:1] == ["shown"] and set(endpoints_row()[1].split(",")) == listed, timeout=30)
    rows = kubectl("get", "endpointslices", "-l", "kubernetes.io/service-name=shown")
    assert rows[0] == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert rows[1][1:3] == ["IPv4", "8080"] and sorted(rows[1][3].split(",")) == sorted(others)


def test_a_malformed_service_is_logged_and_other_namespaces_go_on() -> None:
    """A pod whose named container port is not a number (a store written past validation) fails
    its namespace's sync, which is counted and retried; another namespace's Endpoints are made."""
    from kubesched.client.object_client import StoreObjects
    from kubesched.clock import VirtualClock
    from kubesched.cluster import admission
    from kubesched.cluster.store import Store
    from kubesched.controllers.manager import ControllerManager

    store = Store(VirtualClock())
    admission.install(store)
    ready = {"phase": "Running", "podIP": "10.1.0.1", "conditions": [{"type": "Ready", "status": "True"}]}
    for ns in ("bad", "good"):
        store.create("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        pod = web_pod(f"web-{ns}")
        pod["metadata"]["namespace"] = ns
        pod["spec"]["nodeName"] = "n0"
        if ns == "bad":
            pod["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": "eighty"}]
        created = store.create("Pod", pod)
        store.mutate("Pod", ns, created["metadata"]["name"], lambda o: {**o, "status": ready})
        svc = {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}
        store.create(
            "Service",
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns}, "spec": svc},
        )
    manager = ControllerManager(StoreObjects(store), ["endpoints-controller"])
    manager.sync()
    good = store.get("Endpoints", "good", "web")
    assert [a["targetRef"]["name"] for a in good["subsets"][0]["addresses"]] == ["web-good"]
    assert store.try_get("Endpoints", "bad", "web") is None
    state = manager.health.loops["endpoints-controller"]
    assert state.errors >= 1 and state.last_error.startswith("Namespace bad: ValueError")


def _address(i: int) -> dict:
    return {"ip": f"10.1.{i // 250}.{i % 250 + 1}", "targetRef": {"kind": "Pod", "name": f"p{i}"}}


@pytest.mark.parametrize(
    ("ready", "not_ready", "kept_ready", "kept_not_ready", "cut"),
    [
        ([500], [400], [500], [400], False),  # at capacity or under: as it is
        ([600], [600], [600], [400], True),  # not-ready addresses cut first
        ([300, 300], [300, 300], [300, 300], [200, 200], True),  # each subset its share
        ([900, 300], [100, 0], [750, 250], [0, 0], True),  # ready ones cut too, not-ready ones dropped
        ([1, 1000], [0, 0], [1, 999], [0, 0], True),  # shares rounded up, the last one gets what is left
    ],
)
def test_endpoints_hold_at_most_1000_addresses(ready, not_ready, kept_ready, kept_not_ready, cut) -> None:
    """``truncateEndpoints`` (endpoints_controller.go's table, the same proportions)."""
    from kubesched.controllers.endpoints import truncate

    subsets, i = [], 0
    for r, n in zip(ready, not_ready, strict=True):
        subset: dict = {"ports": [{"port": 80, "protocol": "TCP"}]}
        if r:
            subset["addresses"] = [_address(i + k) for k in range(r)]
        if n:
            subset["notReadyAddresses"] = [_address(i + r + k) for k in range(n)]
        i += r + n
        subsets.append(subset)
    assert truncate(subsets) is cut
    assert [len(s.get("addresses") or []) for s in subsets] == kept_ready
    assert [len(s.get("notReadyAddresses") or []) for s in subsets] == kept_not_ready


def test_a_service_of_1200_pods_has_truncated_endpoints_and_its_annotation() -> None:
    from kubesched.client.object_client import StoreObjects
    from kubesched.clock import VirtualClock
    from kubesched.cluster import admission
    from kubesched.cluster.store import Store
    from kubesched.controllers.manager import ControllerManager

    store = Store(VirtualClock())
    admission.install(store)
    for i in range(1200):
        pod = web_pod(f"web-{i}")
        pod["spec"]["nodeName"] = "n0"
        created = store.create("Pod", pod)
        status = {"phase": "Running", "podIP": _address(i)["ip"], "conditions": [{"type": "Ready", "status": "True"}]}
        store.mutate("Pod", "default", created["metadata"]["name"], lambda o, s=status: {**o, "status": s})
    svc = {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}
    store.create("Service", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": svc})
    manager = ControllerManager(StoreObjects(store), ["endpoints-controller"])
    manager.sync()
    endpoints = store.get("Endpoints", "default", "web")
    assert len(endpoints["subsets"][0]["addresses"]) == 1000
    assert endpoints["metadata"]["annotations"] == {"endpoints.kubernetes.io/over-capacity": "truncated"}
    for i in range(300):  # down to 900 pods: whole again, the annotation gone
        store.delete("Pod", "default", f"web-{i}", 0)
    manager.sync()
    endpoints = store.get("Endpoints", "default", "web")
    assert len(endpoints["subsets"][0]["addresses"]) == 900
    assert not endpoints["metadata"].get("annotations")
