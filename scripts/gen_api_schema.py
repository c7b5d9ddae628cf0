"""Generate ``src/kubesched/api/schema.json``: the JSON shape of the API types the project decodes,
read from the Go types of k8s.io/api and k8s.io/apimachinery (the same structs kube-apiserver
decodes request bodies into).

    python scripts/gen_api_schema.py API_REPO APIMACHINERY_REPO APIEXTENSIONS_REPO [REF]
    m=$(go env GOMODCACHE); python scripts/gen_api_schema.py $m/k8s.io/api@v0.37.2 \
        $m/k8s.io/apimachinery@v0.37.2 $m/k8s.io/apiextensions-apiserver@v0.37.2

The arguments are git directories (bare clones are fine: files are read with ``git show REF:...``)
or module folders as the Go module cache holds them (``scripts/build_upstream.sh`` fetches them);
REF defaults to v0.37.2, the staging tag of Kubernetes v1.37.2, the release kubesched follows.
Each struct becomes ``{"json name": type}``; a type is ``int32``/``int64``/``float64``/``bool``/
``string`` (with the Go name of a named string type after a colon, for messages), ``Quantity``,
``IntOrString``, ``Time``, ``raw`` (any JSON), ``[]T``, ``map[string]T`` or a struct's key.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

REF = "v0.37.2"
# (repo index, path, package key, display package)
FILES = [
    (0, "core/v1/types.go", "core", "v1"),
    (0, "apps/v1/types.go", "apps", "v1"),
    (0, "policy/v1/types.go", "policy", "v1"),
    (0, "batch/v1/types.go", "batch", "v1"),
    (0, "autoscaling/v1/types.go", "autoscaling", "v1"),
    (0, "autoscaling/v2/types.go", "autoscalingv2", "v2"),
    (0, "authentication/v1/types.go", "authentication", "v1"),
    (0, "authorization/v1/types.go", "authorization", "v1"),
    (0, "rbac/v1/types.go", "rbac", "v1"),
    (0, "scheduling/v1/types.go", "scheduling", "v1"),
    (0, "scheduling/v1beta1/types.go", "schedulingv1beta1", "v1beta1"),
    (0, "coordination/v1/types.go", "coordination", "v1"),
    (0, "events/v1/types.go", "events", "v1"),
    (0, "resource/v1/types.go", "resource", "v1"),
    (0, "storage/v1/types.go", "storage", "v1"),
    (0, "node/v1/types.go", "node", "v1"),
    (0, "discovery/v1/types.go", "discovery", "v1"),
    (0, "networking/v1/types.go", "networking", "v1"),
    (0, "flowcontrol/v1/types.go", "flowcontrol", "v1"),
    (1, "pkg/apis/meta/v1/types.go", "meta", "v1"),
    (2, "pkg/apis/apiextensions/v1/types.go", "apiextensionsv1", "v1"),
]
IMPORTS = {
    "k8s.io/api/core/v1": "core",
    "k8s.io/apimachinery/pkg/apis/meta/v1": "meta",
}
SPECIAL = {
    "resource.Quantity": "Quantity",
    "intstr.IntOrString": "IntOrString",
    "meta.Time": "Time",
    "meta.MicroTime": "Time",
    "meta.Duration": "string:v1.Duration",
    "meta.FieldsV1": "raw",
    "runtime.RawExtension": "raw",
    "types.UID": "string:types.UID",
    "types.NodeName": "string:types.NodeName",
    "[]byte": "string:[]uint8",
    "apiextensionsv1.JSON": "raw",
    # a CRD's schema: structural checks of its own (kubesched.apiextensions), not Go decoding
    "apiextensionsv1.JSONSchemaProps": "raw",
    "runtime.Object": "raw",
}
ROOTS = [
    "core.Pod",
    "core.Node",
    "core.Namespace",
    "core.Event",
    "core.Service",
    "core.ReplicationController",
    "core.ConfigMap",
    "core.Secret",
    "core.Endpoints",
    "discovery.EndpointSlice",
    "core.LimitRange",
    "core.ResourceQuota",
    "core.PersistentVolumeClaim",
    "core.PersistentVolume",
    "core.Binding",
    "apps.ReplicaSet",
    "apps.StatefulSet",
    "apps.Deployment",
    "apps.DaemonSet",
    "apps.ControllerRevision",
    "batch.Job",
    "batch.CronJob",
    "autoscaling.Scale",
    "autoscaling.HorizontalPodAutoscaler",
    "autoscalingv2.HorizontalPodAutoscaler",
    "authentication.SelfSubjectReview",
    "authentication.TokenRequest",
    "authorization.SelfSubjectAccessReview",
    "authorization.SelfSubjectRulesReview",
    "core.ServiceAccount",
    "rbac.Role",
    "rbac.ClusterRole",
    "rbac.RoleBinding",
    "rbac.ClusterRoleBinding",
    "events.Event",
    "coordination.Lease",
    "scheduling.PriorityClass",
    "schedulingv1beta1.Workload",
    "schedulingv1beta1.PodGroup",
    "policy.PodDisruptionBudget",
    "policy.Eviction",
    "resource.DeviceClass",
    "resource.ResourceClaim",
    "resource.ResourceClaimTemplate",
    "resource.ResourceSlice",
    "resource.DeviceTaintRule",
    "storage.StorageClass",
    "storage.CSINode",
    "storage.CSIDriver",
    "storage.CSIStorageCapacity",
    "storage.VolumeAttachment",
    "node.RuntimeClass",
    "apiextensionsv1.CustomResourceDefinition",
    "core.PodTemplate",
    "networking.NetworkPolicy",
    "networking.Ingress",
    "networking.IngressClass",
    "storage.VolumeAttributesClass",
    "flowcontrol.FlowSchema",
    "flowcontrol.PriorityLevelConfiguration",
]
SCALARS = {"string", "bool", "int32", "int64", "float64", "int", "uint64", "uint32", "float32"}
_FIELD = re.compile(r'^\s+(\w+)\s+([^\s`]+)\s+`json:"([^"]*)"')
_EMBED = re.compile(r'^\s+\*?([\w.]+)\s+`json:"([^"]*)"')
_TYPE = re.compile(r"^type (\w+) (.+)$")


def read(repo: str, path: str, ref: str = REF) -> str:
    if (Path(repo) / path).is_file():  # a module folder: its version is its name's
        return (Path(repo) / path).read_text()
    return subprocess.run(
        ["git", "--git-dir", repo, "show", f"{ref}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def parse(text: str, pkg: str, structs: dict, named: dict) -> None:
    aliases = {"": pkg}
    for alias, imp in re.findall(r'^\s*(\w+)?\s*"([^"]+)"$', text, re.M):
        if imp in IMPORTS:
            aliases[alias or imp.rsplit("/", 1)[-1]] = IMPORTS[imp]
    current = None
    for line in text.splitlines():
        if line.strip().startswith("//"):
            continue
        if current is None:
            m = _TYPE.match(line)
            if not m:
                continue
            name, rest = m.groups()
            if rest.startswith("struct {"):
                current = f"{pkg}.{name}"
                structs[current] = {"fields": {}, "inline": []}
                if rest.strip() == "struct{}" or rest.endswith("}"):
                    current = None
            else:
                named[f"{pkg}.{name}"] = (rest.split("//")[0].strip(), aliases)
            continue
        if line.startswith("}"):
            current = None
            continue
        m = _FIELD.match(line)
        if m:
            _, gotype, tag = m.groups()
            jname = tag.split(",")[0]
            if jname == "-":
                continue
            if jname == "" and ",inline" in tag:
                structs[current]["inline"].append((gotype, aliases))
                continue
            structs[current]["fields"][jname] = (gotype, aliases)
            continue
        m = _EMBED.match(line)
        if m:
            gotype, tag = m.groups()
            jname = tag.split(",")[0].strip()
            if jname:
                structs[current]["fields"][jname] = (gotype, aliases)
            else:
                structs[current]["inline"].append((gotype, aliases))


def main(api: str, machinery: str, apiextensions: str, ref: str = REF) -> None:
    structs: dict = {}
    named: dict = {}
    repos = [api, machinery, apiextensions]
    for idx, path, pkg, _ in FILES:
        parse(read(repos[idx], path, ref), pkg, structs, named)
    out: dict[str, dict[str, str]] = {}

    def qualify(name: str, aliases: dict) -> str:
        if "." in name:
            alias, local = name.split(".", 1)
            if alias in aliases:
                return f"{aliases[alias]}.{local}"
            return name
        return f"{aliases['']}.{name}"

    def resolve(gotype: str, aliases: dict, pending: list) -> str:
        t = gotype.lstrip("*")
        if t in SPECIAL:
            return SPECIAL[t]
        if t.startswith("[]"):
            if t == "[]byte":
                return SPECIAL["[]byte"]
            return "[]" + resolve(t[2:], aliases, pending)
        if t.startswith("map["):
            value = t[t.index("]") + 1 :]
            return "map[string]" + resolve(value, aliases, pending)
        if t in SCALARS:
            return t
        if t == "interface{}" or t == "any":
            return "raw"
        key = qualify(t, aliases)
        if key in SPECIAL:
            return SPECIAL[key]
        if key in structs:
            pending.append(key)
            return key
        if key in named:
            under, under_aliases = named[key]
            base = resolve(under, under_aliases, pending)
            display = "v1." + key.split(".", 1)[1]
            if base in SCALARS and base == "string":
                return f"string:{display}"
            if base in SCALARS:
                return base
            return base
        return "raw"  # a type from a package not read here: accept any JSON

    pending = list(ROOTS)
    while pending:
        key = pending.pop()
        if key in out:
            continue
        fields: dict[str, str] = {}
        out[key] = fields

        todo = [key]
        while todo:  # the struct's own fields and those of the structs it inlines
            s = structs[todo.pop(0)]
            for gotype, aliases in s["inline"]:
                k = qualify(gotype.lstrip("*"), aliases)
                if k in structs:
                    todo.append(k)
            for jname, (gotype, aliases) in s["fields"].items():
                fields[jname] = resolve(gotype, aliases, pending)
    doc = {"source": f"k8s.io/api, k8s.io/apimachinery and k8s.io/apiextensions-apiserver {ref}", "roots": ROOTS, "types": dict(sorted(out.items()))}
    target = Path(__file__).resolve().parent.parent / "src/kubesched/api/schema.json"
    target.write_text(json.dumps(doc, indent=0, sort_keys=False, separators=(",", ":")) + "\n")
    print(f"{target}: {len(out)} types", file=sys.stderr)

if __name__ == "__main__":
    main(*sys.argv[1:5])
