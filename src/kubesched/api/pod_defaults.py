"""The API's defaults for a pod spec, as kube-apiserver applies them when it decodes a Pod or any
object with a pod template (``pkg/apis/core/v1/defaults.go`` and its generated defaulters):
SetDefaults_PodSpec, SetDefaults_Container (image pull policy by tag, termination message),
ports' protocol, probes and their HTTP actions, volume sources' modes; and for a Pod itself
(SetDefaults_Pod, not its templates) service links on, requests from limits."""

from __future__ import annotations

from typing import Any

# v1.SecretVolumeSourceDefaultMode and its kin: 0644
DEFAULT_MODE = 0o644
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def image_tag(image: str) -> str:
    """The tag ``parsers.ParseImageName`` finds: "latest" when the reference names neither a tag
    nor a digest, "" for a digest alone."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1]
    return "" if digest else "latest"


def _probe(probe: Any) -> Any:
    if not isinstance(probe, dict):
        return probe
    out = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3, **probe}
    for key in ("timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        if out[key] in (0, None):
            out[key] = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}[key]
    if isinstance(out.get("httpGet"), dict):
        out["httpGet"] = _http_get(out["httpGet"])
    return out


def _http_get(action: dict[str, Any]) -> dict[str, Any]:
    return {**action, "path": action.get("path") or "/", "scheme": action.get("scheme") or "HTTP"}


def _env(env: Any) -> Any:
    if not isinstance(env, list):
        return env
    out = []
    for var in env:
        ref = ((var or {}).get("valueFrom") or {}).get("fieldRef") if isinstance(var, dict) else None
        if isinstance(ref, dict) and not ref.get("apiVersion"):
            var = {**var, "valueFrom": {**var["valueFrom"], "fieldRef": {**ref, "apiVersion": "v1"}}}
        out.append(var)
    return out


def _container(c: Any) -> Any:
    if not isinstance(c, dict):
        return c
    out = dict(c)
    if not out.get("imagePullPolicy"):
        out["imagePullPolicy"] = "Always" if image_tag(str(out.get("image") or "")) == "latest" else "IfNotPresent"
    if not out.get("terminationMessagePath"):
        out["terminationMessagePath"] = "/dev/termination-log"
    if not out.get("terminationMessagePolicy"):
        out["terminationMessagePolicy"] = "File"
    if out.get("resources") is None:
        out["resources"] = {}  # ResourceRequirements is not omitempty
    if isinstance(out.get("ports"), list):
        out["ports"] = [
            {**p, "protocol": p.get("protocol") or "TCP"} if isinstance(p, dict) else p for p in out["ports"]
        ]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if probe in out:
            out[probe] = _probe(out[probe])
    for hook in ("postStart", "preStop"):
        handler = (out.get("lifecycle") or {}).get(hook)
        if isinstance(handler, dict) and isinstance(handler.get("httpGet"), dict):
            out["lifecycle"] = {**out["lifecycle"], hook: {**handler, "httpGet": _http_get(handler["httpGet"])}}
    if "env" in out:
        out["env"] = _env(out["env"])
    return out


_MODED = ("secret", "configMap", "downwardAPI", "projected")


def _volume(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    sources = [k for k in v if k != "name"]
    if not sources:  # SetDefaults_Volume: no source is an emptyDir
        return {**v, "emptyDir": {}}
    out = dict(v)
    for key in _MODED:
        if isinstance(out.get(key), dict) and out[key].get("defaultMode") is None:
            out[key] = {**out[key], "defaultMode": DEFAULT_MODE}
    if isinstance(out.get("hostPath"), dict) and out["hostPath"].get("type") is None:
        out["hostPath"] = {**out["hostPath"], "type": ""}
    return out


def default_pod_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """SetDefaults_PodSpec with its containers' and volumes' defaults (templates and pods alike)."""
    out = dict(spec)
    if out.get("serviceAccountName") or out.get("serviceAccount"):
        out["serviceAccountName"] = out.get("serviceAccountName") or out["serviceAccount"]
        out["serviceAccount"] = out["serviceAccountName"]
    out.setdefault("dnsPolicy", "ClusterFirst")
    out.setdefault("restartPolicy", "Always")
    if out.get("securityContext") is None:
        out["securityContext"] = {}
    if out.get("terminationGracePeriodSeconds") is None:
        out["terminationGracePeriodSeconds"] = 30
    out.setdefault("schedulerName", "default-scheduler")
    for key in CONTAINER_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_container(c) for c in out[key]]
    if isinstance(out.get("volumes"), list):
        out["volumes"] = [_volume(v) for v in out["volumes"]]
    return out


def default_pod(spec: dict[str, Any]) -> dict[str, Any]:
    """SetDefaults_Pod on top of the spec's: service links on, a negative grace period made 1."""
    out = default_pod_spec(spec)
    if out.get("enableServiceLinks") is None:
        out["enableServiceLinks"] = True
    grace = out.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0:
        out["terminationGracePeriodSeconds"] = 1
    return out


def _with_label_keys(selector: Any, labels: dict[str, Any], keys: Any, operator: str) -> Any:
    if not isinstance(selector, dict) or not isinstance(keys, list):
        return selector
    added = [{"key": k, "operator": operator, "values": [labels[k]]} for k in keys if k in labels]
    if not added:
        return selector
    return {**selector, "matchExpressions": [*(selector.get("matchExpressions") or []), *added]}


def _term(t: Any, labels: dict[str, Any]) -> Any:
    """One (anti-)affinity term with its label keys merged into its selector (a function of the
    module, not a closure: compiled, a closure and its environment would hold each other)."""
    if not isinstance(t, dict) or not (t.get("matchLabelKeys") or t.get("mismatchLabelKeys")):
        return t
    selector = _with_label_keys(t.get("labelSelector"), labels, t.get("matchLabelKeys"), "In")
    return {**t, "labelSelector": _with_label_keys(selector, labels, t.get("mismatchLabelKeys"), "NotIn")}


def merge_label_keys(spec: dict[str, Any], labels: dict[str, Any]) -> dict[str, Any]:
    """What the pod strategy's PrepareForCreate does to a new pod (``pkg/registry/core/pod/strategy.go``:
    mutatePodAffinity, mutateTopologySpreadConstraints): each (anti-)affinity term's matchLabelKeys
    and mismatchLabelKeys, and each spread constraint's matchLabelKeys, become ``In`` and ``NotIn``
    requirements on the pod's own label values in the term's selector."""
    out = dict(spec)
    affinity = out.get("affinity")
    if isinstance(affinity, dict):
        affinity = dict(affinity)
        for kind in ("podAffinity", "podAntiAffinity"):
            terms = affinity.get(kind)
            if not isinstance(terms, dict):
                continue
            terms = dict(terms)
            required = terms.get("requiredDuringSchedulingIgnoredDuringExecution")
            if isinstance(required, list):
                terms["requiredDuringSchedulingIgnoredDuringExecution"] = [_term(t, labels) for t in required]
            preferred = terms.get("preferredDuringSchedulingIgnoredDuringExecution")
            if isinstance(preferred, list):
                terms["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {**w, "podAffinityTerm": _term(w.get("podAffinityTerm"), labels)} if isinstance(w, dict) else w
                    for w in preferred
                ]
            affinity[kind] = terms
        out["affinity"] = affinity
    constraints = out.get("topologySpreadConstraints")
    if isinstance(constraints, list):
        out["topologySpreadConstraints"] = [
            {**c, "labelSelector": _with_label_keys(c.get("labelSelector"), labels, c.get("matchLabelKeys"), "In")}
            if isinstance(c, dict) and c.get("matchLabelKeys") and c.get("labelSelector") is not None
            else c
            for c in constraints
        ]
    return out
