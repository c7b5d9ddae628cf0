"""Generate ``src/kubesched/apiserver/handlers/protobuf.json``: the field numbers, names and types of the
protobuf messages of the kinds the embedded API server serves, read from the ``generated.proto``
files of k8s.io/api and k8s.io/apimachinery (what kube-apiserver's protobuf serializer uses), and
which fields are Go pointers (from ``types.go``: their zero values are kept, as a set ``*int32``
replicas of 0 is not the same as none).

    python scripts/gen_protobuf_schema.py /path/to/kubernetes+api/repo /path/to/kubernetes+apimachinery/repo [REF]

The arguments are git directories (bare clones are fine) or module folders as the Go module cache
holds them (``$(go env GOMODCACHE)/k8s.io/api@v0.37.2``); REF defaults to v0.37.2.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

REF = "v0.37.2"
API_GROUPS = [
    "core/v1",
    "apps/v1",
    "batch/v1",
    "policy/v1",
    "scheduling/v1",
    "scheduling/v1beta1",
    "coordination/v1",
    "storage/v1",
    "resource/v1",
    "events/v1",
    "autoscaling/v1",
    "autoscaling/v2",
    "authentication/v1",
    "authorization/v1",
    "rbac/v1",
    "node/v1",
    "discovery/v1",
    "networking/v1",
    "flowcontrol/v1",
]
MACHINERY = ["pkg/apis/meta/v1", "pkg/runtime", "pkg/api/resource", "pkg/util/intstr"]
# (apiVersion, kind) of every top-level object a client may send in protobuf
KINDS = {
    "v1": [
        "Pod",
        "Node",
        "Namespace",
        "Event",
        "Service",
        "ReplicationController",
        "ConfigMap",
        "PersistentVolumeClaim",
        "PersistentVolume",
        "Binding",
        "ServiceAccount",
        "Secret",
        "Endpoints",
        "LimitRange",
        "ResourceQuota",
        "PodTemplate",
    ],
    "apps/v1": ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "ControllerRevision"],
    "batch/v1": ["Job", "CronJob"],
    "policy/v1": ["PodDisruptionBudget", "Eviction"],
    "scheduling.k8s.io/v1": ["PriorityClass"],
    "scheduling.k8s.io/v1beta1": ["Workload", "PodGroup"],
    "coordination.k8s.io/v1": ["Lease"],
    "storage.k8s.io/v1": [
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "CSIStorageCapacity",
        "VolumeAttachment",
        "VolumeAttributesClass",
    ],
    "networking.k8s.io/v1": ["NetworkPolicy", "Ingress", "IngressClass"],
    "flowcontrol.apiserver.k8s.io/v1": ["FlowSchema", "PriorityLevelConfiguration"],
    "resource.k8s.io/v1": ["DeviceClass", "DeviceTaintRule", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"],
    "events.k8s.io/v1": ["Event"],
    "autoscaling/v1": ["Scale", "HorizontalPodAutoscaler"],
    "autoscaling/v2": ["HorizontalPodAutoscaler"],
    "authentication.k8s.io/v1": ["SelfSubjectReview", "TokenRequest"],
    "authorization.k8s.io/v1": ["SelfSubjectAccessReview", "SelfSubjectRulesReview"],
    "rbac.authorization.k8s.io/v1": ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"],
    "node.k8s.io/v1": ["RuntimeClass"],
    "discovery.k8s.io/v1": ["EndpointSlice"],
}
_MESSAGE = re.compile(r"^message (\w+) \{")
_FIELD = re.compile(r"^\s+(optional|repeated)?\s*([\w.<>, ]+?)\s+(\w+) = (\d+);")
_GO_FIELD = re.compile(r'^\s+\w+\s+(\*?)[\w.\[\]*]+\s+`json:"([^",]*)([^"]*)"')
_GO_TYPE = re.compile(r"^type (\w+) struct \{")


def show(repo: str, path: str, ref: str) -> str:
    if (Path(repo) / path).is_file():  # a module folder: its version is its name's
        return (Path(repo) / path).read_text()
    out = subprocess.run(["git", "--git-dir", repo, "show", f"{ref}:{path}"], capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else ""


def package_of(text: str) -> str:
    m = re.search(r"^package ([\w.]+);", text, re.M)
    assert m, "no package line"
    return m.group(1)


def qualify(t: str, package: str) -> str:
    t = t.strip()
    if t.startswith("map<"):
        k, v = t[4:-1].split(",", 1)
        return f"map<{k.strip()},{qualify(v, package)}>"
    if t in ("string", "int32", "int64", "bool", "bytes", "double", "float", "uint32", "uint64"):
        return t
    return t.lstrip(".") if t.startswith(".") else f"{package}.{t}"


def pointers(text: str) -> dict[tuple[str, str], bool]:
    """(Go struct, JSON name) -> whether a zero value on the wire is kept: the field is a pointer
    (set to zero is not unset) or its JSON form has no omitempty (always written)."""
    out: dict[tuple[str, str], bool] = {}
    current = None
    for line in text.splitlines():
        m = _GO_TYPE.match(line)
        if m:
            current = m.group(1)
            continue
        if line.startswith("}"):
            current = None
            continue
        if current is None:
            continue
        f = _GO_FIELD.match(line)
        if f and f.group(2):
            out[(current, f.group(2))] = f.group(1) == "*" or "omitempty" not in f.group(3)
    return out


def main(api: str, machinery: str, ref: str = REF) -> None:
    messages: dict[str, dict[str, list[object]]] = {}
    sources = [(api, f"{g}/generated.proto", f"{g}/types.go") for g in API_GROUPS]
    sources += [(machinery, f"{p}/generated.proto", f"{p}/types.go") for p in MACHINERY]
    for repo, proto_path, types_path in sources:
        text = show(repo, proto_path, ref)
        if not text:
            raise SystemExit(f"missing {proto_path} at {ref}")
        package = package_of(text)
        ptr = pointers(show(repo, types_path, ref))
        current = None
        depth = 0
        for line in text.splitlines():
            m = _MESSAGE.match(line)
            if m and depth == 0:
                current = m.group(1)
                messages[f"{package}.{current}"] = {}
                depth = 1
                continue
            if current is None:
                continue
            if line.startswith("}"):
                current, depth = None, 0
                continue
            f = _FIELD.match(line)
            if f:
                label, type_, name, number = f.groups()
                entry: list[object] = [name, qualify(type_, package)]
                flags = ("repeated" if label == "repeated" else "") + (" keep" if ptr.get((current, name)) else "")
                if flags.strip():
                    entry.append(flags.strip())
                messages[f"{package}.{current}"][number] = entry
    kinds = {}
    for api_version, names in KINDS.items():
        group_version = api_version.split("/")
        group = group_version[0].split(".")[0] if len(group_version) == 2 else "core"
        version = group_version[-1]
        for kind in names:
            fqn = f"k8s.io.api.{group}.{version}.{kind}"
            if fqn not in messages:
                raise SystemExit(f"no message {fqn}")
            kinds[f"{api_version} {kind}"] = fqn
    for fqn in ("k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions",):
        kinds[f"meta/v1 {fqn.rsplit('.', 1)[1]}"] = fqn
    out = Path(__file__).resolve().parent.parent / "src" / "kubesched" / "apiserver" / "handlers" / "protobuf.json"
    doc = {"source": f"k8s.io/api and k8s.io/apimachinery {ref} generated.proto", "kinds": kinds, "messages": messages}
    out.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"{out}: {len(messages)} messages, {len(kinds)} kinds")


if __name__ == "__main__":
    main(*sys.argv[1:])
