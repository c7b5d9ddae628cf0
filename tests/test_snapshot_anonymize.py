"""``kubesched snapshot --anonymize``: every name a planner might not share replaced by a stable
hash, every reference to it rewritten alike, what the scheduler does not read dropped, labels kept."""

from __future__ import annotations

import json

import pytest

from kubesched.snapshot.anonymize import Anonymizer

A = Anonymizer()
NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "ip-10-0-1-7.internal",
        "labels": {"kubernetes.io/hostname": "ip-10-0-1-7.internal", "topology.kubernetes.io/zone": "us-east-1a"},
        "annotations": {"node.alpha.kubernetes.io/ttl": "0", "csi.volume.kubernetes.io/nodeid": "{}"},
    },
    "spec": {"providerID": "aws:///us-east-1a/i-0abc", "taints": [{"key": "gpu", "effect": "NoSchedule"}]},
    "status": {
        "addresses": [{"type": "InternalIP", "address": "10.0.1.7"}],
        "allocatable": {"cpu": "4"},
        "images": [{"names": ["registry.corp.example/payments:1.2"], "sizeBytes": 1000}],
        "nodeInfo": {"machineID": "abc"},
    },
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "payments-7d9f-abcde",
        "generateName": "payments-7d9f-",
        "namespace": "billing",
        "uid": "u1",
        "labels": {"app": "payments"},
        "annotations": {"secret-ish": "x", "kubernetes.io/config.mirror": "m"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "payments-7d9f", "uid": "r1"}],
    },
    "spec": {
        "nodeName": "ip-10-0-1-7.internal",
        "serviceAccountName": "payments",
        "containers": [
            {
                "name": "app",
                "image": "registry.corp.example/payments:1.2",
                "command": ["run", "--token=hunter2"],
                "env": [{"name": "DB_PASSWORD", "value": "hunter2"}],
                "resources": {"requests": {"cpu": "500m"}},
                "ports": [{"containerPort": 8080, "hostPort": 8080}],
            }
        ],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "payments-data"}},
            {"name": "cfg", "configMap": {"name": "payments-config"}},
        ],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "payments-gpu"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["ip-10-0-1-7.internal"]}
                            ]
                        }
                    ]
                }
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "payments"}},
                        "topologyKey": "kubernetes.io/hostname",
                        "namespaces": ["billing", "default"],
                    }
                ]
            },
        },
    },
    "status": {"phase": "Running", "podIP": "10.1.2.3", "nominatedNodeName": "ip-10-0-1-7.internal"},
}


def test_names_and_their_references_hash_alike() -> None:
    node, pod = A.apply(NODE), A.apply(POD)
    node_name = node["metadata"]["name"]
    assert node_name == A.node("ip-10-0-1-7.internal") and node_name.startswith("node-")
    assert node["metadata"]["labels"] == {
        "kubernetes.io/hostname": node_name,
        "topology.kubernetes.io/zone": "us-east-1a",  # labels selectors and topology read are kept
    }
    assert pod["spec"]["nodeName"] == node_name == pod["status"]["nominatedNodeName"]
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [node_name]
    anti = pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["namespaces"] == [A.namespace("billing"), "default"]  # the namespaces every cluster has kept
    assert pod["metadata"]["namespace"] == A.namespace("billing") != "billing"
    assert pod["metadata"]["ownerReferences"][0]["name"] == A.name("ReplicaSet", "payments-7d9f")
    assert pod["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": A.name("PersistentVolumeClaim", "payments-data")}}
    ]
    assert pod["spec"]["resourceClaims"][0]["resourceClaimName"] == A.name("ResourceClaim", "payments-gpu")
    image = pod["spec"]["containers"][0]["image"]
    assert image == node["status"]["images"][0]["names"][0] == A.image("registry.corp.example/payments:1.2")
    assert Anonymizer().apply(POD) == pod  # stable: the same names, the same hashes


def test_what_the_scheduler_does_not_read_is_dropped() -> None:
    text = json.dumps([A.apply(NODE), A.apply(POD)])
    for secret in ("hunter2", "payments-", "registry.corp", "10.0.1.7", "10.1.2.3", "i-0abc", "machineID", "billing"):
        assert secret not in text, secret
    pod = A.apply(POD)
    container = pod["spec"]["containers"][0]
    assert container == {
        "name": "app",
        "image": A.image("registry.corp.example/payments:1.2"),
        "resources": {"requests": {"cpu": "500m"}},
        "ports": [{"containerPort": 8080, "hostPort": 8080}],
    }
    assert pod["metadata"]["annotations"] == {"kubernetes.io/config.mirror": "m"}  # drain reads it
    assert pod["metadata"]["uid"] == "u1" and "generateName" not in pod["metadata"]
    node = A.apply(NODE)
    assert node["spec"] == {"taints": [{"key": "gpu", "effect": "NoSchedule"}]}
    assert set(node["status"]) == {"allocatable", "images"}


@pytest.mark.parametrize(
    ("obj", "path", "expected"),
    [
        (
            {
                "kind": "PersistentVolume",
                "metadata": {"name": "pv-1"},
                "spec": {
                    "claimRef": {"namespace": "billing", "name": "payments-data", "uid": "c1"},
                    "nfs": {"server": "nas.corp", "path": "/exports/billing"},
                },
            },
            ("spec", "claimRef"),
            {
                "uid": "c1",
                "namespace": A.namespace("billing"),
                "name": A.name("PersistentVolumeClaim", "payments-data"),
            },
        ),
        (
            {
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "payments-data", "namespace": "billing"},
                "spec": {"volumeName": "pv-1"},
            },
            ("spec", "volumeName"),
            A.name("PersistentVolume", "pv-1"),
        ),
        (
            {
                "kind": "ResourceClaim",
                "metadata": {"name": "payments-gpu", "namespace": "billing"},
                "status": {"reservedFor": [{"resource": "pods", "name": "payments-7d9f-abcde", "uid": "u1"}]},
            },
            ("status", "reservedFor"),
            [{"resource": "pods", "name": A.name("Pod", "payments-7d9f-abcde"), "uid": "u1"}],
        ),
        (
            {
                "kind": "ResourceSlice",
                "metadata": {"name": "s"},
                "spec": {"nodeName": "ip-10-0-1-7.internal", "pool": {"name": "ip-10-0-1-7.internal"}, "driver": "gpu"},
            },
            ("spec", "nodeName"),
            A.node("ip-10-0-1-7.internal"),
        ),
        ({"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 10}, ("metadata", "name"), "high"),
        (
            {
                "kind": "Namespace",
                "metadata": {"name": "billing", "labels": {"kubernetes.io/metadata.name": "billing"}},
            },
            ("metadata", "labels"),
            {"kubernetes.io/metadata.name": A.namespace("billing")},
        ),
    ],
    ids=["pv claimRef", "pvc volumeName", "claim reservedFor", "slice nodeName", "class kept", "namespace label"],
)
def test_references_in_each_kind(obj: dict, path: tuple[str, str], expected: object) -> None:
    out = A.apply(obj)
    assert out[path[0]][path[1]] == expected
    assert "nas.corp" not in json.dumps(out)


WORKLOAD_TEMPLATE = {
    "metadata": {"labels": {"app": "payments"}, "annotations": {"vault.corp/secret": "billing/db"}},
    "spec": {
        "containers": [
            {"name": "c", "image": "corp.io/payments:7", "env": [{"name": "DB", "value": "pg.billing.corp"}]}
        ],
        "nodeSelector": {"kubernetes.io/hostname": "ip-10-0-1-7.internal"},
    },
}


@pytest.mark.parametrize(
    ("kind", "spec", "template_at"),
    [
        ("Deployment", {"replicas": 2, "template": WORKLOAD_TEMPLATE}, ("template",)),
        ("DaemonSet", {"template": WORKLOAD_TEMPLATE}, ("template",)),
        ("Job", {"completions": 1, "template": WORKLOAD_TEMPLATE}, ("template",)),
        (
            "CronJob",
            {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": WORKLOAD_TEMPLATE}}},
            ("jobTemplate", "spec", "template"),
        ),
    ],
)
def test_a_workloads_pod_template_is_anonymized_as_a_pod_is(
    kind: str, spec: dict, template_at: tuple[str, ...]
) -> None:
    """A snapshot holds the workloads that own its pods (drain's controllers recreate from them):
    their templates say as much as a pod does, and lose the same."""
    out = A.apply({"kind": kind, "metadata": {"name": "payments", "namespace": "billing"}, "spec": spec})
    template = out["spec"]
    for key in template_at:
        template = template[key]
    assert out["metadata"] == {"name": A.name(kind, "payments"), "namespace": A.namespace("billing")}
    assert template["metadata"] == {"labels": {"app": "payments"}}  # labels kept, annotations gone
    assert template["spec"]["containers"] == [{"name": "c", "image": A.image("corp.io/payments:7")}]
    assert template["spec"]["nodeSelector"] == {"kubernetes.io/hostname": A.node("ip-10-0-1-7.internal")}
    assert "corp" not in json.dumps(out)  # the image, the environment, the annotation


def test_label_values_hash_alike_in_labels_and_in_what_selects_by_them() -> None:
    """``--anonymize-labels``: a value is hashed with its key, so a selector still selects what it
    selected; integers (Gt/Lt compare them) and the hostname and namespace-name labels (already
    the hashed names) are kept."""
    hidden = Anonymizer(labels=True)
    node = hidden.apply(
        {
            "kind": "Node",
            "metadata": {
                "name": "ip-10-0-1-7.internal",
                "labels": {"kubernetes.io/hostname": "ip-10-0-1-7.internal", "team": "billing", "gen": "7"},
            },
        }
    )
    zone = hidden.labels.value("team", "billing")
    assert node["metadata"]["labels"] == {
        "kubernetes.io/hostname": hidden.node("ip-10-0-1-7.internal"),
        "team": zone,
        "gen": "7",
    }
    assert zone != "billing" and zone == Anonymizer(labels=True).labels.value("team", "billing")  # stable
    assert hidden.labels.value("tier", "billing") != zone  # the key is part of it
    pod = hidden.apply(
        {
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "billing", "labels": {"app": "payments"}},
            "spec": {
                "containers": [{"name": "c", "image": "i"}],
                "nodeSelector": {"team": "billing"},
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "team", "operator": "In", "values": ["billing"]},
                                        {"key": "gen", "operator": "Gt", "values": ["5"]},
                                    ]
                                }
                            ]
                        }
                    },
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {"matchLabels": {"app": "payments"}}, "topologyKey": "team"}
                        ]
                    },
                },
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "team",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {
                            "matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["payments"]}]
                        },
                    }
                ],
            },
        }
    )
    app = hidden.labels.value("app", "payments")
    assert pod["metadata"]["labels"] == {"app": app}
    assert pod["spec"]["nodeSelector"] == {"team": zone}
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "team", "operator": "In", "values": [zone]},
        {"key": "gen", "operator": "Gt", "values": ["5"]},
    ]
    anti = pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti == {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "team"}
    spread = pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"][0]
    assert spread["values"] == [app]
    service = hidden.apply(
        {
            "kind": "Service",
            "metadata": {"name": "s", "namespace": "billing"},
            "spec": {"selector": {"app": "payments"}},
        }
    )
    assert service["spec"]["selector"] == {"app": app}
    budget = hidden.apply(
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "b", "namespace": "billing"},
            "spec": {"selector": {"matchLabels": {"app": "payments"}}},
        }
    )
    assert budget["spec"]["selector"] == {"matchLabels": {"app": app}}
    assert "payments" not in json.dumps([pod, service, budget])
    namespace = hidden.apply(
        {"kind": "Namespace", "metadata": {"name": "billing", "labels": {"kubernetes.io/metadata.name": "billing"}}}
    )
    assert namespace["metadata"]["labels"] == {"kubernetes.io/metadata.name": hidden.namespace("billing")}


@pytest.mark.parametrize(
    ("name", "owner", "expected"),
    [
        ("db-0", {"kind": "StatefulSet", "name": "db", "controller": True}, "statefulset:db-0"),
        ("db-12", {"kind": "StatefulSet", "name": "db", "controller": True}, "statefulset:db-12"),
        ("db-x", {"kind": "StatefulSet", "name": "db", "controller": True}, "pod"),
        ("db-0", {"kind": "StatefulSet", "name": "db", "controller": False}, "pod"),
        ("web-0", {"kind": "ReplicaSet", "name": "web", "controller": True}, "pod"),
    ],
    ids=["ordinal-0", "ordinal-12", "no-ordinal", "not-its-controller", "replicaset"],
)
def test_a_statefulsets_pod_keeps_the_name_its_controller_looks_for(name: str, owner: dict, expected: str) -> None:
    """The StatefulSet controller finds its pods as ``<set>-<ordinal>``: a pod hashed like any other
    was made again beside the snapshot's in simulate (found against kube-controller-manager's pods)."""
    a = Anonymizer()
    meta = {"name": name, "namespace": "default", "ownerReferences": [{**owner, "uid": "u"}]}
    meta["labels"] = {"statefulset.kubernetes.io/pod-name": name}
    out = a.apply({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": []}})
    if expected == "pod":
        assert out["metadata"]["name"] == a.name("Pod", name)
        assert out["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == name  # a label, kept
    else:
        ordinal = name.rpartition("-")[2]
        assert out["metadata"]["name"] == f"{a.name('StatefulSet', 'db')}-{ordinal}"
        assert out["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == out["metadata"]["name"]
