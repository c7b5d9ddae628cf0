"""Chaos against a running ``kubesched up`` (issue: nothing a tenant sends and no routine race
stops the cluster): seeded rounds of random malformed and valid workload objects, namespaces
deleted while their pods are scheduled, running Jobs deleted, hollow nodes stopped and started,
and a hostile tenant (its own user, bound to one namespace) sending values that backtrack in a
CRD pattern, costly CEL rules, quantities of huge exponents and a flood of concurrent requests.
After every round a canary Deployment converges and a canary pod is bound, no answer was a 5xx,
``/readyz`` passes and no loop is stuck. Bounded: a fixed number of rounds, each waiting at most
45 s for its canaries."""

from __future__ import annotations

import copy
import json
import random
import threading
import time
from typing import Any

from tests.live import Server

SEED = 20261126
ROUNDS = 8
TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "pause"}]}}
PATHS = {
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "DaemonSet": "/apis/apps/v1/namespaces/{ns}/daemonsets",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
    "Pod": "/api/v1/namespaces/{ns}/pods",
}


def workload(kind: str, name: str, app: str) -> dict[str, Any]:
    template = copy.deepcopy(TEMPLATE)
    template["metadata"]["labels"] = {"app": app}
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": app}}, "template": template}
    if kind in ("Deployment", "StatefulSet"):
        spec["replicas"] = 2
    if kind == "StatefulSet":
        spec["serviceName"] = name
    if kind == "Job":
        spec = {"completions": 2, "parallelism": 2, "template": {**template, "spec": {**template["spec"]}}}
        spec["template"]["spec"]["restartPolicy"] = "Never"
    group = "batch/v1" if kind == "Job" else "apps/v1"
    return {"apiVersion": group, "kind": kind, "metadata": {"name": name}, "spec": spec}


# each turns a valid object of its kind into one the API refuses (or, for a type error, cannot decode)
COMMON = [
    lambda o: o["spec"]["template"]["spec"].update(containers=[]),
    lambda o: o["spec"]["template"]["spec"]["containers"][0].update(resources={"requests": {"cpu": "lots"}}),
    lambda o: o["metadata"].update(name="Not_A_Name"),
    lambda o: o.update(spec="a string"),
    lambda o: o["spec"].update(template=None),
]
BREAKAGES = {
    "Deployment": [
        lambda o: o["spec"].update(replicas=-1),
        lambda o: o["spec"].update(replicas="many"),
        lambda o: o["spec"].update(selector={}),
        lambda o: o["spec"].update(selector={"matchLabels": {"app": "nope"}}),
        lambda o: o["spec"].update(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "abc"}}),
        lambda o: o["spec"].update(strategy={"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
        lambda o: o["spec"]["template"]["spec"].update(restartPolicy="Never"),
    ],
    "StatefulSet": [
        lambda o: o["spec"].update(replicas=-1),
        lambda o: o["spec"].update(selector={}),
        lambda o: o["spec"].update(updateStrategy={"type": "Sometimes"}),
        lambda o: o["spec"].update(podManagementPolicy="Random"),
    ],
    "DaemonSet": [
        lambda o: o["spec"].update(selector={"matchExpressions": [{"key": "app", "operator": "Near"}]}),
        lambda o: o["spec"].update(updateStrategy={"type": "Sometimes"}),
        lambda o: o["spec"].update(
            updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "abc"}}
        ),
    ],
    "Job": [
        lambda o: o["spec"].update(parallelism=-3),
        lambda o: o["spec"].update(completions=-1),
        lambda o: o["spec"].update(backoffLimit=-1),
        lambda o: o["spec"].update(completionMode="Whenever"),
        lambda o: o["spec"]["template"]["spec"].update(restartPolicy="Always"),
    ],
}


def request(server: Server, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
    code, out = server.request(method, path, body, **kw)
    assert code < 500, (method, path, code, out)
    return code, out


def canaries_converge(server: Server, n: int, stopped: set[str]) -> None:
    """A Deployment and a pod that avoid the nodes whose kubelet is stopped (where nothing runs)."""
    name = f"canary-{n}"
    dep = workload("Deployment", name, name)
    avoid = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": sorted(stopped) or ["-"]}
                        ]
                    }
                ]
            }
        }
    }
    dep["spec"]["template"]["spec"]["affinity"] = avoid
    assert request(server, "POST", PATHS["Deployment"].format(ns="default"), dep)[0] == 201
    probe = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"probe-{n}"},
        "spec": {"containers": [{"name": "c", "image": "pause"}], "affinity": avoid},
    }
    assert request(server, "POST", PATHS["Pod"].format(ns="default"), probe)[0] == 201
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        _, d = request(server, "GET", f"{PATHS['Deployment'].format(ns='default')}/{name}")
        _, p = request(server, "GET", f"{PATHS['Pod'].format(ns='default')}/probe-{n}")
        if (d.get("status") or {}).get("availableReplicas") == 2 and p["spec"].get("nodeName"):
            break
        time.sleep(0.3)
    else:
        raise AssertionError(f"round {n}: the canaries did not converge: {json.dumps(d.get('status'))}")
    code, text = server.request("GET", "/readyz?verbose", raw=True)
    assert code == 200, text.decode()
    _, loops = request(server, "GET", "/debug/kubesched/loops")
    assert not [name for name, state in loops["loops"].items() if state["stuck"]], loops
    assert {"controller-manager", "kubelet", "scheduler"} <= set(loops["loops"])


TENANT = "tenant-token"
PATTERN_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "names.tenant.example.com"},
    "spec": {
        "group": "tenant.example.com",
        "scope": "Namespaced",
        "names": {"plural": "names", "kind": "Name"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "s": {"type": "string", "pattern": "^([a-z0-9]+-?)+$"},
                                    "items": {
                                        "type": "array",
                                        "maxItems": 300,
                                        "items": {"type": "string", "maxLength": 8},
                                    },
                                },
                                "x-kubernetes-validations": [
                                    {"rule": "!has(self.items) || self.items.all(x, self.items.exists_one(y, y == x))"}
                                ],
                            }
                        },
                    }
                },
            }
        ],
    },
}


def tenant_setup(server: Server) -> None:
    """The hostile tenant: namespace ``tenant``, admin there (its own user), and a CRD it may use."""
    request(server, "POST", "/api/v1/namespaces", {"metadata": {"name": "tenant"}})
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "tenant-admin", "namespace": "tenant"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "tenant"}],
    }
    assert (
        request(server, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/tenant/rolebindings", binding)[0] == 201
    )
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "names", "namespace": "tenant"},
        "rules": [{"apiGroups": ["tenant.example.com"], "resources": ["names"], "verbs": ["*"]}],
    }
    assert request(server, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/tenant/roles", role)[0] == 201
    role_binding = {**binding, "metadata": {"name": "names", "namespace": "tenant"}}
    role_binding["roleRef"] = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "names"}
    assert (
        request(server, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/tenant/rolebindings", role_binding)[0]
        == 201
    )
    assert request(server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", PATTERN_CRD)[0] == 201


def hostile(server: Server, rng: random.Random, n: int) -> None:
    """One round of the tenant's worst: each answered (4xx or 2xx), none a 5xx, none holding others."""
    names = "/apis/tenant.example.com/v1/namespaces/tenant/names"
    for i in range(3):
        text = "a" * rng.randint(25, 5000) + "!"  # exponential in a backtracking matcher
        obj = {"apiVersion": "tenant.example.com/v1", "kind": "Name", "metadata": {"name": f"p{n}-{i}"}}
        code, _ = request(server, "POST", names, {**obj, "spec": {"s": text}}, token=TENANT)
        assert code == 422
    pairs = {"apiVersion": "tenant.example.com/v1", "kind": "Name", "metadata": {"name": f"c{n}"}}
    pairs["spec"] = {"items": [f"s{k:06d}" for k in range(rng.randint(100, 300))]}
    assert request(server, "POST", names, pairs, token=TENANT)[0] == 201  # admitted: 90,000 comparisons, fast
    costly = copy.deepcopy(PATTERN_CRD)  # a rule over an unbounded list: refused when written (and not its)
    costly["metadata"]["name"] = f"costly{n}.tenant.example.com"
    costly["spec"]["names"] = {"plural": f"costly{n}", "kind": f"Costly{n}"}
    costly["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["items"].pop(
        "maxItems"
    )
    code, _ = request(server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", costly, token=TENANT)
    assert code == 403  # not its to write; the admin's answer is the cost
    code, out = request(server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All", costly)
    assert code == 422 and "estimated rule cost exceeds budget" in out["message"]
    for value in ("1e9999999", "9" * 5000):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"q{n}"}}
        pod["spec"] = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": value}}}]}
        assert request(server, "POST", PATHS["Pod"].format(ns="tenant"), pod, token=TENANT)[0] == 422


def flood(server: Server, stop: threading.Event, codes: list[int]) -> None:
    """The tenant's flood: lists as fast as one connection goes, told 429 past its share."""
    while not stop.is_set():
        code, _ = server.request("GET", "/api/v1/namespaces/tenant/configmaps", token=TENANT)
        codes.append(code)


def test_rounds_of_hostile_and_routine_traffic_never_stop_the_cluster(tmp_path):
    rng = random.Random(SEED)
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(f"{TENANT},tenant,3001\n")
    server = Server(
        tmp_path / "data",
        command="up",
        nodes=4,
        args=["--pod-run-seconds", "0.5", "--node-monitor-grace-period", "3", "--token-auth-file", str(tokens)],
    ).start()
    stop = threading.Event()
    flood_codes: list[int] = []
    floods = [threading.Thread(target=flood, args=(server, stop, flood_codes), daemon=True) for _ in range(8)]
    try:
        tenant_setup(server)
        for t in floods:
            t.start()
        stopped: set[str] = set()
        for n in range(ROUNDS):
            hostile(server, rng, n)
            # a tenant's malformed workloads: each refused with a 4xx, nothing else disturbed
            for i in range(6):
                kind = rng.choice(["Deployment", "StatefulSet", "DaemonSet", "Job"])
                obj = workload(kind, f"bad-{n}-{i}", f"bad-{n}-{i}")
                rng.choice(BREAKAGES[kind] + COMMON)(obj)
                code, out = request(server, "POST", PATHS[kind].format(ns="default"), obj)
                assert code in (400, 422), (kind, obj, out)
            # valid workloads of every kind
            for i in range(3):
                kind = rng.choice(["Deployment", "StatefulSet", "DaemonSet", "Job"])
                assert (
                    request(
                        server, "POST", PATHS[kind].format(ns="default"), workload(kind, f"ok-{n}-{i}", f"ok-{n}-{i}")
                    )[0]
                    == 201
                )
            # a namespace deleted while its pods are being scheduled
            ns = f"doomed-{n}"
            assert request(server, "POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
            for i in range(8):
                pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": TEMPLATE["spec"]}
                request(server, "POST", PATHS["Pod"].format(ns=ns), pod)
            request(server, "POST", PATHS["Deployment"].format(ns=ns), workload("Deployment", "d", "d"))
            request(server, "DELETE", f"/api/v1/namespaces/{ns}")
            # a running Job deleted (background cascading), another left to finish
            job = workload("Job", f"job-{n}", f"job-{n}")
            job["spec"]["template"]["metadata"]["annotations"] = {"kubesched.io/run-seconds": "-1"}
            assert request(server, "POST", PATHS["Job"].format(ns="default"), job)[0] == 201
            time.sleep(rng.uniform(0.0, 0.5))
            request(
                server,
                "DELETE",
                f"{PATHS['Job'].format(ns='default')}/job-{n}",
                {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
            )
            # a hollow node stopped, or one started again (never all of them)
            nodes = [f"node-{i}" for i in range(4)]
            if stopped and rng.random() < 0.5:
                name = stopped.pop()
                patch = {"metadata": {"annotations": {"kubesched.io/kubelet-stopped": None}}}
            elif len(stopped) < 2:
                name = rng.choice([x for x in nodes if x not in stopped])
                stopped.add(name)
                patch = {"metadata": {"annotations": {"kubesched.io/kubelet-stopped": "true"}}}
            else:
                name, patch = "", {}
            if name:
                request(server, "PATCH", f"/api/v1/nodes/{name}", patch, content_type="application/merge-patch+json")
            time.sleep(rng.uniform(0.5, 2.0))  # the controllers, kubelet and scheduler race the next round
            canaries_converge(server, n, stopped)
        # the deleted Jobs left no pod behind, Terminating or not, once the stopped kubelets run again:
        # as on kube-apiserver, a bound pod's graceful deletion ends only when its kubelet confirms it
        for name in sorted(stopped):
            patch = {"metadata": {"annotations": {"kubesched.io/kubelet-stopped": None}}}
            request(server, "PATCH", f"/api/v1/nodes/{name}", patch, content_type="application/merge-patch+json")
        stopped.clear()
        _, pods = request(server, "GET", "/api/v1/namespaces/default/pods")
        left = [p["metadata"]["name"] for p in pods["items"] if p["metadata"]["name"].startswith("job-")]
        deadline = time.monotonic() + 30
        while left and time.monotonic() < deadline:
            time.sleep(0.5)
            _, pods = request(server, "GET", "/api/v1/namespaces/default/pods")
            left = [p["metadata"]["name"] for p in pods["items"] if p["metadata"]["name"].startswith("job-")]
        assert left == []
        stop.set()
        for t in floods:
            t.join(timeout=30)
        assert flood_codes and all(code in (200, 429) for code in flood_codes)  # served or told to wait
    finally:
        stop.set()
        server.stop()
