"""Every rule of ``system:kube-scheduler`` (and ``system:volume-scheduler``) the scheduler relies
on is needed: a replica bound to the role with one rule taken out meets the 403 that rule's
absence causes, named by the rule. One API server, one replica per removed rule (each with its
own service account, schedulerName and Lease), all running at once."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.live import KUBESCHED, Server, wait_for

from kubesched.apiserver.auth.bootstrap_policy import KUBE_SCHEDULER, VOLUME_SCHEDULER

# (case name, role, the rule's resources it removes, the 403 the replica meets without it). The
# kube-scheduler role's PV/PVC read rule is not here: system:volume-scheduler grants the same reads.
CASES = [
    ("events", "kube-scheduler", ["events"], 'cannot create resource "events" in API group "events.k8s.io"'),
    ("nodes", "kube-scheduler", ["nodes"], 'cannot list resource "nodes" in API group ""'),
    ("pods", "kube-scheduler", ["pods"], 'cannot list resource "pods" in API group ""'),
    ("pods-binding", "kube-scheduler", ["bindings", "pods/binding"], 'cannot create resource "pods/binding"'),
    ("pods-status", "kube-scheduler", ["pods/status"], 'cannot patch resource "pods/status"'),
    ("services", "kube-scheduler", ["replicationcontrollers", "services"], 'cannot list resource "services"'),
    ("replicasets", "kube-scheduler", ["replicasets"], 'cannot list resource "replicasets" in API group "apps"'),
    ("statefulsets", "kube-scheduler", ["statefulsets"], 'cannot list resource "statefulsets" in API group "apps"'),
    ("pdbs", "kube-scheduler", ["poddisruptionbudgets"], 'cannot list resource "poddisruptionbudgets"'),
    ("csinodes", "kube-scheduler", ["csinodes"], 'cannot list resource "csinodes"'),
    ("namespaces", "kube-scheduler", ["namespaces"], 'cannot list resource "namespaces"'),
    ("csidrivers", "kube-scheduler", ["csidrivers"], 'cannot list resource "csidrivers"'),
    ("capacities", "kube-scheduler", ["csistoragecapacities"], 'cannot list resource "csistoragecapacities"'),
    ("attachments", "kube-scheduler", ["volumeattachments"], 'cannot list resource "volumeattachments"'),
    ("dra", "kube-scheduler", ["deviceclasses"], 'cannot list resource "deviceclasses" in API group "resource.k8s.io"'),
    ("storageclasses", "volume-scheduler", ["storageclasses"], 'cannot list resource "storageclasses"'),
]


def _without(rules: list[dict[str, Any]], resources: list[str]) -> list[dict[str, Any]]:
    out = [r for r in rules if r.get("resources") != resources]
    assert len(out) == len(rules) - 1, resources  # the case names exactly one rule
    return out


def _objects(case: str, role: str, resources: list[str]) -> list[dict[str, Any]]:
    sa = f"s-{case}"
    kube = KUBE_SCHEDULER if role != "kube-scheduler" else _without(KUBE_SCHEDULER, resources)
    volume = VOLUME_SCHEDULER if role != "volume-scheduler" else _without(VOLUME_SCHEDULER, resources)
    subject = [{"kind": "ServiceAccount", "name": sa, "namespace": "kube-system"}]
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": "kube-system"}}
    ]
    for name, rules in ((f"{sa}-kube", kube), (f"{sa}-volume", volume)):
        out.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": name},
                "rules": rules,
            }
        )
        out.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": subject,
            }
        )
    # its own Lease (created under the kube-scheduler role's create rule)
    lease_rule = {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "resourceNames": [sa],
        "verbs": ["get", "update"],
    }
    out.append(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": sa, "namespace": "kube-system"},
            "rules": [lease_rule],
        }
    )
    out.append(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": sa, "namespace": "kube-system"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": sa},
            "subjects": subject,
        }
    )
    return out


def _pod(name: str, scheduler: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    root = tmp_path_factory.mktemp("rules")
    server = Server(root / "data", command="apiserver", nodes=1).start()
    procs: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
    try:
        for case, role, resources, _ in CASES:
            for obj in _objects(case, role, resources):
                kind = obj["kind"]
                plural = {
                    "ServiceAccount": "serviceaccounts",
                    "ClusterRole": "clusterroles",
                    "ClusterRoleBinding": "clusterrolebindings",
                    "Role": "roles",
                    "RoleBinding": "rolebindings",
                }[kind]
                base = "/api/v1" if kind == "ServiceAccount" else "/apis/rbac.authorization.k8s.io/v1"
                ns = f"/namespaces/{obj['metadata']['namespace']}" if "namespace" in obj["metadata"] else ""
                code, body = server.request("POST", f"{base}{ns}/{plural}", obj)
                assert code == 201, body
            code, review = server.request(
                "POST",
                f"/api/v1/namespaces/kube-system/serviceaccounts/s-{case}/token",
                {"kind": "TokenRequest", "spec": {}},
            )
            assert code == 201, review
            sa = root / f"sa-{case}"
            sa.mkdir()
            (sa / "token").write_text(review["status"]["token"])
            (sa / "ca.crt").write_bytes((server.data_dir / "ca.crt").read_bytes())
            config = root / f"config-{case}.yaml"
            config.write_text(
                yaml.safe_dump(
                    {
                        "apiVersion": "kubescheduler.config.k8s.io/v1",
                        "kind": "KubeSchedulerConfiguration",
                        "profiles": [{"schedulerName": f"s-{case}"}],
                        "leaderElection": {
                            "leaderElect": True,
                            "resourceName": f"s-{case}",
                            "resourceNamespace": "kube-system",
                        },
                    }
                )
            )
            # one pod that fits (bound) and one that cannot (its status patched), per replica
            for name, cpu in ((f"{case}-fits", "10m"), (f"{case}-huge", "1000")):
                server.request("POST", "/api/v1/namespaces/default/pods", _pod(name, f"s-{case}", cpu))
            env = {
                **os.environ,
                "KUBERNETES_SERVICE_HOST": "127.0.0.1",
                "KUBERNETES_SERVICE_PORT": str(server.port),
                "KUBESCHED_SERVICEACCOUNT_DIR": str(sa),
            }
            env.pop("KUBECONFIG", None)
            log = root / f"{case}.log"
            procs[case] = (
                subprocess.Popen(
                    [*KUBESCHED, "scheduler", "--config", str(config), "--secure-port", "0"],
                    stdout=log.open("wb"),
                    stderr=subprocess.STDOUT,
                    env=env,
                ),
                log,
            )
        yield server, procs
    finally:
        for proc, _ in procs.values():
            if proc.poll() is None:
                proc.kill()
        server.stop()


@pytest.mark.parametrize(("case", "role", "resources", "refusal"), CASES, ids=[c[0] for c in CASES])
def test_removing_the_rule_causes_its_403(replicas, case, role, resources, refusal):
    server, procs = replicas
    _, log = procs[case]

    def seen() -> str | None:
        """The refusal, from the replica's log or an event it recorded on its pods (a failed Bind
        is reported on the pod, as upstream's FailedScheduling)."""
        texts = [log.read_text(errors="replace")]
        _, events = server.request("GET", "/api/v1/namespaces/default/events")
        texts += [e.get("message") or "" for e in events["items"] if e["involvedObject"]["name"].startswith(f"{case}-")]
        return next((t for t in texts if refusal in t), None)

    text = wait_for(seen, 60)
    assert "is forbidden" in text and f'User "system:serviceaccount:kube-system:s-{case}"' in text
