"""``--anonymize``: a snapshot a planner can hand to someone else. Names are replaced by stable hashes
(the same name gives the same hash in every snapshot, so two snapshots of one cluster compare):
namespaces, nodes, every namespaced object, persistent volumes and container images, each reference
to them rewritten alike (a pod's node, claims and owners, a node's hostname label and images, a
volume's claim, a claim's reserving pods, a slice's node). What the scheduler does not read and may
say too much is dropped: annotations, container commands, arguments, environments and mounts, IP
addresses, volume sources but their kind and CSI driver, node addresses and system information.
Labels are kept (selectors, affinities and topology read them), as are the names of classes
(priority, storage, runtime, device) and the namespaces Kubernetes makes; ``--anonymize-labels``
hashes label values too, alike in labels and in what selects by them."""

from __future__ import annotations

import hashlib
from typing import Any

# namespaces every cluster has: their names say nothing
KEPT_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
# annotations the planning commands read (a mirror pod's; a DaemonSet's template generation, by which
# its controller knows its pods current)
KEPT_ANNOTATIONS = frozenset({"kubernetes.io/config.mirror", "deprecated.daemonset.template.generation"})
HOSTNAME = "kubernetes.io/hostname"
NAMESPACE_LABEL = "kubernetes.io/metadata.name"
STATEFUL_POD_NAME = "statefulset.kubernetes.io/pod-name"  # the StatefulSet controller's label of a pod's name
_CLASSES = frozenset({"PriorityClass", "StorageClass", "RuntimeClass", "DeviceClass", "CSIDriver"})
_POD_DROPPED = frozenset({"hostname", "subdomain", "serviceAccountName", "serviceAccount", "imagePullSecrets"})
# kinds with a pod template at spec.template
_WORKLOADS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController", "Deployment", "DaemonSet", "Job"})
_CONTAINER_KEPT = ("name", "image", "resources", "ports", "restartPolicy", "resizePolicy")
# the volumes the scheduler reads (claims, generic ephemeral ones, inline CSI ones its limits count);
# the others (configMaps, secrets, emptyDirs...) say what a pod holds, not where it fits
_VOLUME_KEPT = ("persistentVolumeClaim", "ephemeral", "csi")


def _hash(category: str, name: str) -> str:
    return hashlib.sha256(f"{category}\0{name}".encode()).hexdigest()[:10]


class Anonymizer:
    """Rewrites objects with hashed names; one instance per snapshot keeps references consistent
    (hashes are stable anyway: the same name, the same hash). ``labels``: label values hashed too,
    wherever they are written: objects' and templates' labels, label selectors, node selectors
    and their terms, Services' and ReplicationControllers' selectors (``_LabelValues``)."""

    def __init__(self, *, labels: bool = False) -> None:
        self.labels = _LabelValues() if labels else None

    def node(self, name: str) -> str:
        return f"node-{_hash('node', name)}" if name else name

    def namespace(self, name: str) -> str:
        return name if not name or name in KEPT_NAMESPACES else f"ns-{_hash('namespace', name)}"

    def name(self, kind: str, name: str) -> str:
        if not name or kind in _CLASSES:
            return name
        if kind == "Node" or kind == "CSINode":
            return self.node(name)
        if kind == "Namespace":
            return self.namespace(name)
        return f"{kind.lower()}-{_hash(kind, name)}"

    def image(self, name: str) -> str:
        return f"image-{_hash('image', name)}" if name else name

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        kind = str(obj.get("kind") or "")
        out = {**obj, "metadata": self._meta(kind, obj.get("metadata") or {})}
        spec, status = obj.get("spec"), obj.get("status")
        if kind == "Pod":
            out["spec"] = self._pod_spec(spec or {})
            out["status"] = self._pod_status(status or {})
        elif kind == "Node":
            out["spec"] = {k: v for k, v in (spec or {}).items() if k in ("taints", "unschedulable")}
            out["status"] = self._node_status(status or {})
        elif kind in _WORKLOADS and isinstance(spec, dict):
            out["spec"] = self._workload_spec(spec)
        elif kind == "CronJob" and isinstance(spec, dict):
            job = spec.get("jobTemplate") or {}
            out["spec"] = {**spec, "jobTemplate": {**job, "spec": self._workload_spec(job.get("spec") or {})}}
            out["status"] = {k: v for k, v in (status or {}).items() if k != "active"}  # Jobs by name
        elif kind == "PersistentVolume":
            out["spec"] = self._pv_spec(spec or {})
        elif kind == "PersistentVolumeClaim" and isinstance(spec, dict) and spec.get("volumeName"):
            out["spec"] = {**spec, "volumeName": self.name("PersistentVolume", spec["volumeName"])}
        elif kind == "ResourceClaim":
            out["status"] = self._claim_status(status or {})
        elif kind == "ResourceSlice" and isinstance(spec, dict):
            out["spec"] = self._slice_spec(spec)
        elif kind == "VolumeAttachment" and isinstance(spec, dict):
            source = dict(spec.get("source") or {})
            if source.get("persistentVolumeName"):
                source["persistentVolumeName"] = self.name("PersistentVolume", source["persistentVolumeName"])
            out["spec"] = {**spec, "nodeName": self.node(spec.get("nodeName", "")), "source": source}
        elif kind == "CSIStorageCapacity":
            out["nodeTopology"] = self._selector(obj.get("nodeTopology"))
        if self.labels is not None:
            out = self.labels.rewrite(out, plain_selector=kind in ("Service", "ReplicationController"))
        return out

    # -- metadata -----------------------------------------------------------------------------------
    def _meta(self, kind: str, meta: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in meta.items() if k not in ("annotations", "generateName")}
        out["name"] = self.name(kind, str(meta.get("name") or ""))
        ordinal = _stateful_ordinal(meta) if kind == "Pod" else None
        if ordinal is not None:  # its controller finds it by name: <set>-<ordinal>
            out["name"] = f"{self.name('StatefulSet', ordinal[0])}-{ordinal[1]}"
        if meta.get("namespace"):
            out["namespace"] = self.namespace(meta["namespace"])
        kept = {k: v for k, v in (meta.get("annotations") or {}).items() if k in KEPT_ANNOTATIONS}
        if kept:
            out["annotations"] = kept
        labels = dict(meta.get("labels") or {})
        if kind == "Node" and labels.get(HOSTNAME) == meta.get("name"):
            labels[HOSTNAME] = out["name"]
        if kind == "Namespace" and NAMESPACE_LABEL in labels:
            labels[NAMESPACE_LABEL] = out["name"]
        if ordinal is not None and labels.get(STATEFUL_POD_NAME) == meta.get("name"):
            labels[STATEFUL_POD_NAME] = out["name"]
        if labels:
            out["labels"] = labels
        if meta.get("ownerReferences"):
            out["ownerReferences"] = [
                {**ref, "name": self.name(str(ref.get("kind") or ""), str(ref.get("name") or ""))}
                for ref in meta["ownerReferences"]
            ]
        return out

    def _workload_spec(self, spec: dict[str, Any]) -> dict[str, Any]:
        """A workload's pod template anonymized as a pod is (the template's metadata as an object's)."""
        template = spec.get("template") or {}
        out = {**spec, "template": {**template, "spec": self._pod_spec(template.get("spec") or {})}}
        if isinstance(template.get("metadata"), dict):
            out["template"]["metadata"] = self._meta("Pod", template["metadata"])
            out["template"]["metadata"].pop("name", None)
        out.pop("serviceName", None)
        out.pop("volumeClaimTemplates", None)
        return out

    # -- pods ---------------------------------------------------------------------------------------
    def _containers(self, containers: Any) -> list[dict[str, Any]]:
        out = []
        for c in containers or []:
            kept = {k: v for k, v in c.items() if k in _CONTAINER_KEPT}
            kept["image"] = self.image(str(c.get("image") or ""))
            out.append(kept)
        return out

    def _pod_spec(self, spec: dict[str, Any]) -> dict[str, Any]:
        out = {
            k: v for k, v in spec.items() if k not in ("hostname", "subdomain", "serviceAccountName", "serviceAccount")
        }
        for key in ("containers", "initContainers"):
            if key in spec:
                out[key] = self._containers(spec[key])
        out.pop("ephemeralContainers", None)
        if spec.get("nodeName"):
            out["nodeName"] = self.node(spec["nodeName"])
        if spec.get("nodeSelector"):
            out["nodeSelector"] = self._hostname_values(spec["nodeSelector"])
        if spec.get("volumes"):
            out["volumes"] = [self._volume(v) for v in spec["volumes"] if any(k in v for k in _VOLUME_KEPT)]
        if spec.get("resourceClaims"):
            out["resourceClaims"] = [self._pod_claim(c) for c in spec["resourceClaims"]]
        if spec.get("affinity"):
            out["affinity"] = self._affinity(spec["affinity"])
        return out

    def _volume(self, volume: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"name": volume.get("name")}
        for key in _VOLUME_KEPT:
            if key not in volume:
                continue
            if key == "persistentVolumeClaim":
                claim = volume[key] or {}
                out[key] = {**claim, "claimName": self.name("PersistentVolumeClaim", str(claim.get("claimName") or ""))}
            elif key == "csi":
                out[key] = {"driver": (volume[key] or {}).get("driver")}
            else:
                out[key] = volume[key]
        return out

    def _pod_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        out = dict(claim)
        if claim.get("resourceClaimName"):
            out["resourceClaimName"] = self.name("ResourceClaim", claim["resourceClaimName"])
        if claim.get("resourceClaimTemplateName"):
            out["resourceClaimTemplateName"] = self.name("ResourceClaimTemplate", claim["resourceClaimTemplateName"])
        return out

    def _pod_status(self, status: dict[str, Any]) -> dict[str, Any]:
        drop = ("podIP", "podIPs", "hostIP", "hostIPs", "containerStatuses", "initContainerStatuses", "message")
        out = {k: v for k, v in status.items() if k not in drop}
        if status.get("nominatedNodeName"):
            out["nominatedNodeName"] = self.node(status["nominatedNodeName"])
        if status.get("resourceClaimStatuses"):
            out["resourceClaimStatuses"] = [
                {**s, "resourceClaimName": self.name("ResourceClaim", str(s.get("resourceClaimName") or ""))}
                for s in status["resourceClaimStatuses"]
            ]
        return out

    def _affinity(self, affinity: dict[str, Any]) -> dict[str, Any]:
        out = dict(affinity)
        node = affinity.get("nodeAffinity")
        if isinstance(node, dict):
            node = dict(node)
            required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
            if isinstance(required, dict):
                node["requiredDuringSchedulingIgnoredDuringExecution"] = self._selector(required)
            preferred = node.get("preferredDuringSchedulingIgnoredDuringExecution")
            if isinstance(preferred, list):
                node["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {**p, "preference": self._term(p.get("preference") or {})} for p in preferred
                ]
            out["nodeAffinity"] = node
        for key in ("podAffinity", "podAntiAffinity"):
            if isinstance(affinity.get(key), dict):
                out[key] = {mode: self._pod_terms(terms) for mode, terms in affinity[key].items()}
        return out

    def _pod_terms(self, terms: Any) -> Any:
        if not isinstance(terms, list):
            return terms
        out = []
        for t in terms:
            term = t.get("podAffinityTerm", t) if isinstance(t, dict) else t
            if isinstance(term, dict) and term.get("namespaces"):
                term = {**term, "namespaces": [self.namespace(n) for n in term["namespaces"]]}
            out.append({**t, "podAffinityTerm": term} if isinstance(t, dict) and "podAffinityTerm" in t else term)
        return out

    def _selector(self, selector: Any) -> Any:
        if not isinstance(selector, dict):
            return selector
        out = dict(selector)
        if isinstance(selector.get("nodeSelectorTerms"), list):
            out["nodeSelectorTerms"] = [self._term(t) for t in selector["nodeSelectorTerms"]]
        if isinstance(selector.get("matchLabels"), dict):
            out["matchLabels"] = self._hostname_values(selector["matchLabels"])
        if isinstance(selector.get("matchExpressions"), list):
            out["matchExpressions"] = [self._requirement(r, HOSTNAME) for r in selector["matchExpressions"]]
        return out

    def _term(self, term: dict[str, Any]) -> dict[str, Any]:
        out = dict(term)
        if isinstance(term.get("matchExpressions"), list):
            out["matchExpressions"] = [self._requirement(r, HOSTNAME) for r in term["matchExpressions"]]
        if isinstance(term.get("matchFields"), list):
            out["matchFields"] = [self._requirement(r, "metadata.name") for r in term["matchFields"]]
        return out

    def _requirement(self, req: dict[str, Any], key: str) -> dict[str, Any]:
        if req.get("key") != key or not isinstance(req.get("values"), list):
            return req
        return {**req, "values": [self.node(str(v)) for v in req["values"]]}

    def _hostname_values(self, labels: dict[str, Any]) -> dict[str, Any]:
        if HOSTNAME not in labels:
            return labels
        return {**labels, HOSTNAME: self.node(str(labels[HOSTNAME]))}

    # -- nodes, volumes, claims, slices -------------------------------------------------------------
    def _node_status(self, status: dict[str, Any]) -> dict[str, Any]:
        kept = ("capacity", "allocatable", "conditions", "phase", "declaredFeatures")
        out = {k: v for k, v in status.items() if k in kept}
        if status.get("images"):
            out["images"] = [
                {**img, "names": [self.image(str(n)) for n in img.get("names") or []]} for img in status["images"]
            ]
        return out

    def _pv_spec(self, spec: dict[str, Any]) -> dict[str, Any]:
        kept = (
            "capacity",
            "accessModes",
            "storageClassName",
            "persistentVolumeReclaimPolicy",
            "volumeMode",
            "volumeAttributesClassName",
        )
        out = {k: v for k, v in spec.items() if k in kept}
        if isinstance(spec.get("nodeAffinity"), dict):
            required = (spec["nodeAffinity"] or {}).get("required")
            out["nodeAffinity"] = {"required": self._selector(required)} if required else spec["nodeAffinity"]
        if isinstance(spec.get("claimRef"), dict):
            ref = spec["claimRef"]
            out["claimRef"] = {
                **{k: v for k, v in ref.items() if k in ("kind", "apiVersion", "uid")},
                "namespace": self.namespace(str(ref.get("namespace") or "")),
                "name": self.name("PersistentVolumeClaim", str(ref.get("name") or "")),
            }
        if isinstance(spec.get("csi"), dict):
            out["csi"] = {"driver": spec["csi"].get("driver"), "volumeHandle": _hash("volume", str(spec["csi"]))}
        elif "local" in spec:
            out["local"] = {"path": "/"}  # a volume of one node: its node affinity says which
        else:  # an in-tree source: its kind kept as a host path, what it names dropped
            out["hostPath"] = {"path": "/"}
        return out

    def _claim_status(self, status: dict[str, Any]) -> dict[str, Any]:
        out = dict(status)
        if isinstance(status.get("reservedFor"), list):
            out["reservedFor"] = [
                {**r, "name": self.name(str(r.get("resource") or "pods").rstrip("s").capitalize(), str(r.get("name")))}
                for r in status["reservedFor"]
            ]
        allocation = status.get("allocation")
        if isinstance(allocation, dict):
            allocation = dict(allocation)
            devices = dict(allocation.get("devices") or {})
            if isinstance(devices.get("results"), list):
                devices["results"] = [{**r, "pool": self._pool(str(r.get("pool") or ""))} for r in devices["results"]]
            allocation["devices"] = devices
            if isinstance(allocation.get("nodeSelector"), dict):
                allocation["nodeSelector"] = self._selector(allocation["nodeSelector"])
            out["allocation"] = allocation
        out.pop("devices", None)  # drivers' reports: network addresses, device data
        return out

    def _slice_spec(self, spec: dict[str, Any]) -> dict[str, Any]:
        out = dict(spec)
        if spec.get("nodeName"):
            out["nodeName"] = self.node(spec["nodeName"])
        if isinstance(spec.get("pool"), dict):
            out["pool"] = {**spec["pool"], "name": self._pool(str(spec["pool"].get("name") or ""))}
        return out

    def _pool(self, name: str) -> str:
        """A pool is most often named after its node: hashed alike, so a node's pool still is its."""
        return self.node(name)


class _LabelValues:
    """Label values as stable hashes of their key and value, in labels and in everything that
    selects by them alike, so selectors, affinities, spreading and budgets still match what they
    matched. Kept: values that are integers (``Gt``/``Lt`` compare them), empty ones, and those of
    the hostname and namespace-name labels, already the hashed node and namespace names."""

    KEPT_KEYS = frozenset({HOSTNAME, NAMESPACE_LABEL})
    MAPS = frozenset({"labels", "matchLabels", "nodeSelector"})

    def value(self, key: str, value: Any) -> Any:
        if not isinstance(value, str) or not value or key in self.KEPT_KEYS or _is_int(value):
            return value
        return f"v-{_hash('label', f'{key}={value}')}"

    def rewrite(self, obj: Any, *, plain_selector: bool = False, depth: int = 0) -> Any:
        if isinstance(obj, list):
            return [self.rewrite(x, depth=depth + 1) for x in obj]
        if not isinstance(obj, dict):
            return obj
        out: dict[str, Any] = {}
        for k, v in obj.items():
            if (k in self.MAPS or (plain_selector and k == "selector" and depth == 1)) and _is_str_map(v):
                out[k] = {key: self.value(key, val) for key, val in v.items()}
            elif k == "matchExpressions" and isinstance(v, list):
                out[k] = [self._requirement(r) for r in v]
            else:
                out[k] = self.rewrite(v, plain_selector=plain_selector, depth=depth + 1)
        return out

    def _requirement(self, req: Any) -> Any:
        if not isinstance(req, dict) or req.get("operator") not in ("In", "NotIn"):
            return req
        if not isinstance(req.get("values"), list):
            return req
        key = str(req.get("key") or "")
        return {**req, "values": [self.value(key, v) for v in req["values"]]}


def _stateful_ordinal(meta: dict[str, Any]) -> tuple[str, str] | None:
    """(set, ordinal) of a pod a StatefulSet controls and named ``<set>-<ordinal>``, else None."""
    name = str(meta.get("name") or "")
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "StatefulSet" and ref.get("controller"):
            prefix, _, ordinal = name.rpartition("-")
            if prefix == ref.get("name") and ordinal.isdigit():
                return prefix, ordinal
    return None


def _is_str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _is_int(value: str) -> bool:
    try:
        int(value)
    except ValueError:
        return False
    return True
