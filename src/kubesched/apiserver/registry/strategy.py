"""What the registry strategies and admission of kube-apiserver do to an object on its way in
(``pkg/registry/core/*/strategy.go``, ``plugin/pkg/admission``): defaulting, the parts of
validation the scheduler relies on (shared with ``simulate``'s loader), and which fields a write
of the main resource or of ``/status`` may change."""

from __future__ import annotations

import difflib
import json
from typing import Any

from kubesched.api import flowcontrol, schema, validation
from kubesched.api.errors import BadRequest, Forbidden, Invalid, NotFound
from kubesched.api.kinds import is_custom
from kubesched.api.names import generate_name
from kubesched.api.pod import PodInfo, remember_validated
from kubesched.api.workloads import default_workload, given_template_generation, with_template_generation
from kubesched.apiextensions import strategy
from kubesched.apiextensions.registry import CustomResources
from kubesched.apiserver.registry import services
from kubesched.apiserver.resources import BY_KIND, Resource
from kubesched.cluster import validation as object_validation
from kubesched.cluster.admission import default_containers
from kubesched.cluster.store import Store, system_meta_kept
from kubesched.errors import InputError

# apimachinery's names.SimpleNameGenerator alphabet and suffix length


def invalid(r: Resource, name: str, field: str, message: str, value: Any = None) -> Invalid:
    """422 Invalid in upstream's shape: ``Kind "name" is invalid: field: message``."""
    shown = f'Invalid value: "{value}": ' if value is not None else ""
    return field_error(r, name, field, f"{shown}{message}", "FieldValueInvalid")


def field_error(r: Resource, name: str, field: str, message: str, reason: str) -> Invalid:
    """A 422 with one cause (``field.Error``): ``reason`` is FieldValueInvalid, FieldValueForbidden..."""
    return invalid_causes(r, name, f"{field}: {message}", [{"reason": reason, "message": message, "field": field}])


def invalid_causes(r: Resource, name: str, listed: str, causes: list[dict[str, str]]) -> Invalid:
    """``errors.NewInvalid``: the group-qualified kind (``Deployment.apps``), the name, the errors as
    listed (one as it is, several as ``[a, b]``) and a cause each."""
    kind = f"{r.kind}.{r.group}" if r.group else r.kind
    return Invalid(
        f'{kind} "{name}" is invalid: {listed}',
        details={"name": name, "group": r.group, "kind": r.kind, "causes": causes},
    )


def check_meta(r: Resource, obj: dict[str, Any]) -> None:
    """``ValidateObjectMeta`` (shared with the manifest loader): a 422 naming the field."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise BadRequest(f"{r.kind} metadata must be an object")
    name = meta.get("name")
    if name is not None and not isinstance(name, str):
        raise BadRequest(f"{r.kind}.metadata.name must be a string")
    try:
        validation.validate_meta(r.kind, obj, namespaced=r.namespaced)
    except InputError as exc:
        raise invalid(r, str(name or "")[:253], exc.field or "metadata", exc.message) from None


def validate(
    r: Resource, obj: dict[str, Any], *, meta: bool = True, old: dict[str, Any] | None = None
) -> PodInfo | None:
    """The object's own validation, the same checks ``simulate`` applies to manifests (``meta``
    False: its metadata was checked already, by ``check_meta``); a pod's parse is returned."""
    name = (obj.get("metadata") or {}).get("name", "")
    try:
        return object_validation.validate(r.kind, obj, meta=meta, old=old)
    except InputError as exc:
        if exc.causes:  # an aggregate: every cause in the Status, the list in its message
            causes = [{"reason": cause_reason(m), "message": m, "field": f} for f, m in exc.causes]
            raise invalid_causes(r, name, exc.message, causes) from None
        raise field_error(r, name, exc.field or "spec", exc.message, cause_reason(exc.message)) from None


def cause_reason(message: str) -> str:
    return next((v for k, v in CAUSE_REASONS.items() if message.startswith(k)), "FieldValueInvalid")


# a field.Error's type by the words its message starts with (``field.ErrorType.String``)
CAUSE_REASONS = {
    "Required value": "FieldValueRequired",
    "Unsupported value": "FieldValueNotSupported",
    "Forbidden": "FieldValueForbidden",
    "Duplicate value": "FieldValueDuplicate",
    "Not found": "FieldValueNotFound",
    "Too long": "FieldValueTooLong",
    "Too many": "FieldValueTooMany",
}


FIELD_VALIDATION_MODES = ("Ignore", "Warn", "Strict")


def field_validation_mode(query: Any) -> str:
    """``?fieldValidation=``: kube-apiserver's default is Warn, kubectl sends Strict."""
    mode = query.get("fieldValidation") or "Warn"
    if mode not in FIELD_VALIDATION_MODES:
        raise BadRequest(f'fieldValidation must be one of Ignore, Warn or Strict, not "{mode}"')
    return mode


class StrictPatchError(BadRequest):
    """A strict patch's unknown fields; the PATCH handler turns it into upstream's 422."""


def decode(
    r: Resource, obj: dict[str, Any], mode: str, version: str, *, patch: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """A request body decoded into the kind's Go type (shared with the loader): a value of the
    wrong type is a 400 ``... cannot be handled as a Kind: json: cannot unmarshal ...``; unknown
    fields follow ``fieldValidation``: a 400 under Strict, warnings under Warn, dropped always."""
    try:
        out, unknown = object_validation.decode(r.group, r.kind, obj, r.version)
    except schema.DecodeError as exc:
        raise BadRequest(f'{r.kind} in version "{version}" cannot be handled as a {r.kind}: {exc.message}') from None
    if r.kind == "DaemonSet":  # apps/v1's conversion reads the template generation from its annotation
        given_template_generation(out)
    if not unknown or mode == "Ignore":
        return out, []
    if mode == "Strict":
        if patch:  # the caller answers as patch.go does, quoting what it decoded
            raise StrictPatchError(schema.unknown_field_message(unknown))
        raise BadRequest(
            f'{r.kind} in version "{version}" cannot be handled as a {r.kind}: {schema.unknown_field_message(unknown)}'
        )
    return out, [f'unknown field "{p}"' for p in unknown]


def pod_qos(spec: dict[str, Any]) -> str:
    """``qos.GetPodQOS``: Guaranteed when every container limits cpu and memory at its requests."""
    containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
    any_set, guaranteed = False, True
    for c in containers:
        res = (c or {}).get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            any_set = True
        for k in ("cpu", "memory"):
            if k not in lim or req.get(k, lim.get(k)) != lim.get(k):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


# the status a create starts with, where the strategy's PrepareForCreate resets it: the Go struct's
# zero value as JSON writes it (fields without omitempty are written as 0)
ZERO_STATUS: dict[str, dict[str, Any]] = {
    "Deployment": {},
    "ReplicaSet": {"replicas": 0},
    "StatefulSet": {"replicas": 0, "availableReplicas": 0},
    "DaemonSet": {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0},
    "Job": {},
    "ReplicationController": {"replicas": 0},
    "PodDisruptionBudget": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0},
    "FlowSchema": {},
    "PriorityLevelConfiguration": {},
    "Service": {"loadBalancer": {}},
}


def prepare_for_create(r: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    """Defaulting a create gets before admission (``PrepareForCreate`` and API defaults)."""
    meta = dict(obj.get("metadata") or {})
    meta.pop("resourceVersion", None)
    meta.pop("uid", None)
    meta.pop("deletionTimestamp", None)
    meta.pop("creationTimestamp", None)
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = generate_name(str(meta["generateName"]))
    obj = {**obj, "apiVersion": r.stored_api_version, "kind": r.kind, "metadata": meta}
    if r.kind == "Pod":
        spec = dict(obj.get("spec") or {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("securityContext", {})
        obj["spec"] = spec
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos(spec)}
        if spec.get("schedulingGates"):
            # the pod strategy's applySchedulingGatedCondition
            obj["status"]["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": None,
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                }
            ]
    elif r.kind == "Namespace":
        meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta.get("name", "")}
        obj["spec"] = {"finalizers": ["kubernetes"], **(obj.get("spec") or {})}
        obj["status"] = {"phase": "Active"}
    elif r.kind in ZERO_STATUS:
        obj["status"] = dict(ZERO_STATUS[r.kind])
    if r.kind == "DaemonSet":
        obj = with_template_generation(obj, None)
    if r.kind in FLOWCONTROL_DEFAULTS:
        obj = FLOWCONTROL_DEFAULTS[r.kind](obj)
    return obj


# API Priority and Fairness's kinds: defaulted on every decode, creates and updates
FLOWCONTROL_DEFAULTS = {
    "FlowSchema": flowcontrol.default_flow_schema,
    "PriorityLevelConfiguration": flowcontrol.default_priority_level,
}


# kinds whose status only the /status subresource may change (the main resource keeps it)
STATUS_KINDS = {
    "CustomResourceDefinition",
    "ResourceClaim",
    "Pod",
    "Node",
    "Namespace",
    "PodDisruptionBudget",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "Deployment",
    "DaemonSet",
    "Job",
    "PersistentVolumeClaim",
    "FlowSchema",
    "PriorityLevelConfiguration",
}


def prepare_for_update(
    r: Resource, new: dict[str, Any], old: dict[str, Any], subresource: str, store: Store
) -> dict[str, Any]:
    """``PrepareForUpdate`` / the status strategy: a main-resource write keeps the stored status,
    a ``/status`` write keeps everything else."""
    new = {**new, "apiVersion": r.stored_api_version, "kind": r.kind}
    if subresource == "status":
        out = {**old, "status": new.get("status") or {}}
        meta = dict(old["metadata"])
        if (new.get("metadata") or {}).get("resourceVersion"):
            meta["resourceVersion"] = new["metadata"]["resourceVersion"]
        out["metadata"] = meta
        return out
    if r.kind in STATUS_KINDS:
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
    if r.kind in WORKLOAD_KINDS:  # defaulting runs on every decode, updates too
        new = default_workload(r.kind, new, old["metadata"].get("uid") or "")
    if r.kind in FLOWCONTROL_DEFAULTS:
        new = FLOWCONTROL_DEFAULTS[r.kind](new)
    if r.kind == "DaemonSet":
        new = with_template_generation(new, old)
    if r.kind == "Service":
        new = services.update(store, new, old)
    if r.kind == strategy.CRD_KIND:
        new = strategy.admit_crd_update(new, old)
    meta = dict(new.get("metadata") or {})
    uid = meta.get("uid")
    if uid and uid != old["metadata"].get("uid"):  # ValidateObjectMetaUpdate: uid is immutable
        raise invalid(r, meta.get("name", ""), "metadata.uid", "field is immutable", uid)
    new["metadata"] = system_meta_kept(meta, old["metadata"])
    if r.kind == "Pod":
        old_spec, new_spec = old.get("spec") or {}, dict(new.get("spec") or {})
        # fields the API server fills or that only bindings set
        for keep in (
            "nodeName",
            "priority",
            "schedulerName",
            "preemptionPolicy",
            "priorityClassName",
            "terminationGracePeriodSeconds",
            "restartPolicy",
            "dnsPolicy",
            "securityContext",
        ):
            if keep in old_spec and keep not in new_spec:
                new_spec[keep] = old_spec[keep]
        if new_spec.get("nodeName", "") != old_spec.get("nodeName", "") and old_spec.get("nodeName"):
            raise invalid(r, meta.get("name", ""), "spec.nodeName", "field is immutable")
        for key in ("containers", "initContainers"):
            if isinstance(new_spec.get(key), list):
                new_spec[key] = default_containers(new_spec[key])
        check_pod_spec_update(r, meta.get("name", ""), old_spec, new_spec)
        new["spec"] = new_spec
    if r.kind == "PersistentVolumeClaim" and not subresource:
        check_claim_spec_update(r, meta.get("name", ""), old, new)
    return new


CLAIM_UPDATABLE = (
    "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
)


def check_claim_spec_update(r: Resource, name: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    """``ValidatePersistentVolumeClaimUpdate``: a claim's spec is immutable but for its volume
    name, set once, its volumeAttributesClassName, and, once Bound, its storage request (so a
    claim cannot be grown past its quota before it binds: quota is charged on create)."""
    before, after = dict(old.get("spec") or {}), dict(new.get("spec") or {})
    for key in ("volumeMode",):  # defaulted on every decode upstream
        if key in before and key not in after:
            after[key] = before[key]
    if not before.get("volumeName"):
        _same(before, after, "volumeName")
    _same(before, after, "volumeAttributesClassName")
    requests = (after.get("resources") or {}).get("requests")
    if (new.get("status") or {}).get("phase") == "Bound" and isinstance(requests, dict):
        kept = ((before.get("resources") or {}).get("requests") or {}).get("storage")
        after["resources"] = {**after["resources"], "requests": {**requests, "storage": kept}}
    if after == before:
        return
    diff = _spec_diff(before, after)
    message = f"Forbidden: {CLAIM_UPDATABLE}\n{diff}" if diff else f"Forbidden: {CLAIM_UPDATABLE}"
    raise field_error(r, name, "spec", message, "FieldValueForbidden")


POD_UPDATABLE = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def check_pod_spec_update(r: Resource, name: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    """``ValidatePodUpdate`` (``pkg/apis/core/validation``): a pod's spec is immutable but for
    container images, activeDeadlineSeconds, added tolerations, a negative grace period set to 1,
    removed scheduling gates, and, while the pod is gated, added nodeSelector entries. The new
    spec with those fields taken from the old one must equal the old one."""
    munged = dict(new)
    for key in ("containers", "initContainers"):
        olds, news = old.get(key) or [], new.get(key)
        if isinstance(news, list) and len(olds) == len(news) and news:
            munged[key] = [
                {**n, "image": o.get("image")} if isinstance(n, dict) and isinstance(o, dict) else n
                for o, n in zip(olds, news, strict=True)
            ]
    for key in ("activeDeadlineSeconds",):
        if key in old:
            munged[key] = old[key]
        else:
            munged.pop(key, None)
    old_tolerations, new_tolerations = old.get("tolerations") or [], new.get("tolerations") or []
    if all(t in new_tolerations for t in old_tolerations):
        _same(munged, old, "tolerations")
    grace_old, grace_new = old.get("terminationGracePeriodSeconds"), new.get("terminationGracePeriodSeconds")
    if isinstance(grace_old, int) and grace_old < 0 and grace_new == 1:
        munged["terminationGracePeriodSeconds"] = grace_old
    old_gates, new_gates = old.get("schedulingGates") or [], new.get("schedulingGates") or []
    if all(g in old_gates for g in new_gates):
        _same(munged, old, "schedulingGates")
    if old_gates:  # mutable scheduling directives of a gated pod: nodeSelector may only gain entries
        old_sel, new_sel = old.get("nodeSelector") or {}, new.get("nodeSelector") or {}
        if all(new_sel.get(k) == v for k, v in old_sel.items()):
            _same(munged, old, "nodeSelector")
    if munged == old:
        return
    diff = _spec_diff(old, munged)
    message = f"Forbidden: {POD_UPDATABLE}\n{diff}" if diff else f"Forbidden: {POD_UPDATABLE}"
    raise field_error(r, name, "spec", message, "FieldValueForbidden")


def _same(munged: dict[str, Any], old: dict[str, Any], key: str) -> None:
    if key in old:
        munged[key] = old[key]
    else:
        munged.pop(key, None)


def _spec_diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    """A unified diff of the two specs as indented JSON (what changed, for the message)."""
    a = json.dumps(old, indent=1, sort_keys=True).splitlines()
    b = json.dumps(new, indent=1, sort_keys=True).splitlines()
    lines = list(difflib.unified_diff(a, b, lineterm="", n=2))[2:]  # no ---/+++ header
    return "\n".join(lines)


DEFAULT_TOLERATION_SECONDS = 300  # --default-not-ready-toleration-seconds, --default-unreachable-...


def default_toleration_seconds(pod: dict[str, Any]) -> dict[str, Any]:
    """The DefaultTolerationSeconds admission plugin: a pod that does not already tolerate the
    not-ready and unreachable NoExecute taints tolerates them for 300 s, after which the taint
    eviction controller deletes it from a failed node."""
    spec = dict(pod.get("spec") or {})
    tolerations = list(spec.get("tolerations") or [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if any(
            isinstance(t, dict)
            and (t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists"))
            and t.get("effect") in (None, "", "NoExecute")
            for t in tolerations
        ):
            continue
        tolerations.append(
            {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}
        )
    return {**pod, "spec": {**spec, "tolerations": tolerations}}


def _kept(given: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with the identity, status and deletion under way ``given`` had (a state's object,
    ``Store.as_given``: a snapshot's terminating pods stay terminating)."""
    meta = dict(obj["metadata"])
    for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
        if (given.get("metadata") or {}).get(key):
            meta[key] = given["metadata"][key]
    out = {**obj, "metadata": meta}
    if isinstance(given.get("status"), dict):
        out["status"] = {**(obj.get("status") or {}), **given["status"]}
    return out


WORKLOAD_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"})


class ServerAdmission:
    """The API server's part of a create before the mutating admission plugins, installed first in
    the Store's admission chain so that every create gets it, whatever its way in (HTTP, manifests
    loaded at start, in-process components): defaulting, PrepareForCreate, DefaultTolerationSeconds
    and NamespaceLifecycle. Validation comes after the mutating plugins (``ServerValidation``)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.custom = CustomResources(store)

    def __call__(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        if is_custom(kind):  # its strategy is part of the cluster's admission (cluster.admission)
            if strategy.custom_for(self.custom, kind).resource.namespaced:
                obj["metadata"].setdefault("namespace", "default")
                self._namespace_lifecycle(kind, strategy.plural_group(kind), obj)
            return obj
        r = BY_KIND.get(kind)
        if r is None:
            return obj
        given = obj
        obj = prepare_for_create(r, obj)
        if self.store.as_given:  # an object of a cluster's state (``embedded.objects.create_as_given``)
            obj = _kept(given, obj)
        if r.kind == "Pod":
            obj = default_toleration_seconds(obj)
            # PodTopologyLabelsAdmission: a pod created bound gets its node's zone and region labels
            copied = self.store.topology_labels(str((obj.get("spec") or {}).get("nodeName") or ""))
            if copied:
                meta = obj["metadata"]
                obj = {**obj, "metadata": {**meta, "labels": {**(meta.get("labels") or {}), **copied}}}
        elif r.kind == "Service":
            obj = services.create(self.store, obj)
        if r.kind in WORKLOAD_KINDS:
            obj["metadata"].setdefault("uid", self.store.new_uid())  # the Job selector names it
            obj = default_workload(r.kind, obj, obj["metadata"]["uid"])
        if r.namespaced:
            self._namespace_lifecycle(r.qualified, (r.plural, r.group), obj)
        return obj

    def _namespace_lifecycle(self, qualified: str, plural_group: tuple[str, str], obj: dict[str, Any]) -> None:
        """The NamespaceLifecycle admission plugin: no object in a missing or terminating namespace."""
        ns = obj["metadata"].get("namespace")
        namespace = self.store.try_get("Namespace", "", ns or "")
        if namespace is None:
            raise NotFound(f'namespaces "{ns}" not found', details={"name": ns, "kind": "namespaces"})
        if (namespace.get("status") or {}).get("phase") == "Terminating":
            # the NamespaceLifecycle admission plugin
            name = obj["metadata"].get("name", "")
            raise Forbidden(
                f'{qualified} "{name}" is forbidden: unable to create new content in namespace {ns} '
                "because it is being terminated",
                details={
                    "name": name,
                    "group": plural_group[1],
                    "kind": plural_group[0],
                    "causes": [
                        {
                            "reason": "NamespaceTerminating",
                            "message": f"namespace {ns} is being terminated",
                            "field": "metadata.namespace",
                        }
                    ],
                },
            )


class ServerValidation:
    """The registry strategy's Validate for a create, after the mutating admission plugins have
    run (create.go admits, then the registry's BeforeCreate validates; validating admission such
    as ResourceQuota comes last): a pod naming a missing PriorityClass is refused for that even
    when its name is invalid too, as kube-apiserver refuses it. A pod's parse is kept for an
    in-process scheduler's informer (``api.pod.validated_pod_info``)."""

    def __call__(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        r = None if is_custom(kind) else BY_KIND.get(kind)
        if r is None:  # custom resources are validated by their strategy (cluster.admission)
            return obj
        check_meta(r, obj)
        parsed = validate(r, obj, meta=False)
        if parsed is not None:
            remember_validated(parsed)
        return obj
