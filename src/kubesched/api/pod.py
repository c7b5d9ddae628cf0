"""``PodInfo``: a pod parsed once into what the scheduler reads (framework.PodInfo / QueuedPodInfo)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.affinity import (
    PodAffinity,
    SpreadConstraint,
    controller_ref,
    parse_pod_affinity,
    parse_spread_constraints,
)
from kubesched.api.resize import reports_resources, requests_with_status
from kubesched.api.resources import CPU, MEMORY, Resources, parse_resource_list, pod_requests
from kubesched.api.selectors import (
    NodeSelectorTerm,
    Toleration,
    parse_node_selector_term,
    parse_tolerations,
)
from kubesched.errors import InputError

DEFAULT_SCHEDULER_NAME = "default-scheduler"


def normalized_image_name(name: str) -> str:
    """ImageLocality's normalizedImageName: add ``:latest`` when the image has no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    weight: int
    term: NodeSelectorTerm


@dataclass(init=False, slots=True, eq=False)
class PodInfo:
    """Everything the scheduler needs from a pod, parsed once at admission."""

    obj: dict[str, Any]
    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    priority: int
    preemption_policy: str
    scheduler_name: str
    node_name: str
    nominated_node_name: str
    scheduling_gates: tuple[str, ...]
    tolerations: tuple[Toleration, ...]
    node_selector: tuple[tuple[str, str], ...]
    required_terms: tuple[NodeSelectorTerm, ...] | None
    preferred_terms: tuple[PreferredTerm, ...]
    host_ports: tuple[HostPort, ...]
    images: tuple[str, ...]
    n_containers: int
    requests: Resources
    non_zero_cpu: int
    non_zero_memory: int
    deleting: bool
    pvc_names: tuple[str, ...]
    has_pod_affinity: bool = False
    pod_affinity: PodAffinity | None = None
    spread_constraints: tuple[SpreadConstraint, ...] = ()
    controller: tuple[str, str, str] | None = None  # (apiVersion, kind, name) of the controller owner
    # what plugins cache for this version of the pod, each entry beside the object it was taken
    # from ((obj, value): a newer version misses); ``evolve`` starts it empty, so an old version's
    # object is not kept alive by its entries
    extra: dict[str, Any] = field(default_factory=dict)
    pod_group: str = ""  # spec.schedulingGroup.podGroupName: the PodGroup it is scheduled with

    def __init__(
        self,
        obj: dict[str, Any],
        namespace: str,
        name: str,
        uid: str,
        labels: Mapping[str, str],
        priority: int,
        preemption_policy: str,
        scheduler_name: str,
        node_name: str,
        nominated_node_name: str,
        scheduling_gates: tuple[str, ...],
        tolerations: tuple[Toleration, ...],
        node_selector: tuple[tuple[str, str], ...],
        required_terms: tuple[NodeSelectorTerm, ...] | None,
        preferred_terms: tuple[PreferredTerm, ...],
        host_ports: tuple[HostPort, ...],
        images: tuple[str, ...],
        n_containers: int,
        requests: Resources,
        non_zero_cpu: int,
        non_zero_memory: int,
        deleting: bool,
        pvc_names: tuple[str, ...],
        has_pod_affinity: bool = False,
        pod_affinity: PodAffinity | None = None,
        spread_constraints: tuple[SpreadConstraint, ...] = (),
        controller: tuple[str, str, str] | None = None,
        extra: dict[str, Any] | None = None,
        pod_group: str = "",
    ) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.obj = obj
        self.namespace = namespace
        self.name = name
        self.uid = uid
        self.labels = labels
        self.priority = priority
        self.preemption_policy = preemption_policy
        self.scheduler_name = scheduler_name
        self.node_name = node_name
        self.nominated_node_name = nominated_node_name
        self.scheduling_gates = scheduling_gates
        self.tolerations = tolerations
        self.node_selector = node_selector
        self.required_terms = required_terms
        self.preferred_terms = preferred_terms
        self.host_ports = host_ports
        self.images = images
        self.n_containers = n_containers
        self.requests = requests
        self.non_zero_cpu = non_zero_cpu
        self.non_zero_memory = non_zero_memory
        self.deleting = deleting
        self.pvc_names = pvc_names
        self.has_pod_affinity = has_pod_affinity
        self.pod_affinity = pod_affinity
        self.spread_constraints = spread_constraints
        self.controller = controller
        self.extra = {} if extra is None else extra
        self.pod_group = pod_group

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def evolve(
        self, obj: dict[str, Any], node_name: str, nominated_node_name: str, labels: Mapping[str, str] | None = None
    ) -> PodInfo:
        """A copy for a newer version of the same pod whose scheduling inputs did not change
        (see ``same_scheduling_inputs``), or whose ``labels`` alone did where nothing else parsed
        reads them (``labels_alone_changed``). Every field is named here, so that compiled code
        calls the constructor directly (a third of ``dataclasses.replace``'s cost, or of a
        constructor fed from an attrgetter); ``test_evolve_copies_every_field`` keeps the list whole.
        ``extra`` is not copied: its entries belong to the old version's object."""
        return PodInfo(
            obj,
            self.namespace,
            self.name,
            self.uid,
            self.labels if labels is None else labels,
            self.priority,
            self.preemption_policy,
            self.scheduler_name,
            node_name,
            nominated_node_name,
            self.scheduling_gates,
            self.tolerations,
            self.node_selector,
            self.required_terms,
            self.preferred_terms,
            self.host_ports,
            self.images,
            self.n_containers,
            self.requests,
            self.non_zero_cpu,
            self.non_zero_memory,
            self.deleting,
            self.pvc_names,
            self.has_pod_affinity,
            self.pod_affinity,
            self.spread_constraints,
            self.controller,
            None,  # a new ``extra``: what it caches is kept with one version's object (see the field)
            self.pod_group,
        )


def same_scheduling_inputs(old: dict[str, Any], new: dict[str, Any], labels: bool = True) -> bool:
    """Whether a pod's new version parses to the same PodInfo as ``old`` apart from
    spec.nodeName and status.nominatedNodeName: a binding or a status write (``labels`` False:
    and apart from its labels). Identity checks first, so the common case costs a few pointer
    comparisons. Typed as dicts (as stored pods are): compiled, their lookups and loops then take
    mypyc's dict paths."""
    old_meta: dict[str, Any] = old.get("metadata") or {}
    new_meta: dict[str, Any] = new.get("metadata") or {}
    if labels and old_meta.get("labels") != new_meta.get("labels"):
        return False
    if bool(old_meta.get("deletionTimestamp")) != bool(new_meta.get("deletionTimestamp")):
        return False
    if old_meta.get("ownerReferences") != new_meta.get("ownerReferences"):
        return False
    old_spec: dict[str, Any] = old.get("spec") or {}
    new_spec: dict[str, Any] = new.get("spec") or {}
    if old_spec is new_spec:
        return True
    # a plain loop, not a set of the keys and a generator: this runs for every binding
    for k, v in new_spec.items():
        if k != "nodeName":
            was = old_spec.get(k)
            if was is not v and was != v:
                return False
    for k in old_spec:  # noqa: SIM110 (a loop, not all() over a generator: see above)
        if k not in new_spec and k != "nodeName" and old_spec[k] is not None:
            return False
    return True


def labels_alone_changed(prev: PodInfo, new: dict[str, Any]) -> bool:
    """Whether a pod's new version differs from ``prev``'s in its labels and otherwise only as
    ``same_scheduling_inputs`` allows, for a pod whose parse reads its labels nowhere else (no pod
    affinity and no spread constraint, whose ``matchLabelKeys`` take label values): a binding to a
    node whose zone and region kube-apiserver's PodTopologyLabelsAdmission adds to the pod."""
    return (
        prev.pod_affinity is None
        and not prev.spread_constraints
        and same_scheduling_inputs(prev.obj, new, labels=False)
    )


def updated_pod_condition(pod: Mapping[str, Any], condition: dict[str, Any]) -> dict[str, Any] | None:
    """``UpdatePodCondition`` (``pkg/api/v1/pod/util.go``): the condition as it is to be written,
    keeping the pod's lastTransitionTime when its status does not change (a condition without
    one is stamped by the writer); None when the pod already has it as it is (nothing to write)."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    old = next((c for c in conditions if c.get("type") == condition["type"]), None)
    if old is None or old.get("status") != condition.get("status"):
        return condition
    if (
        old.get("reason") == condition.get("reason")
        and old.get("message") == condition.get("message")
        and not old.get("lastProbeTime")
    ):
        return None
    return {**condition, "lastTransitionTime": old.get("lastTransitionTime")}


def same_pod_spec_and_meta(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether two pods (possibly two different pods) have equal specs, labels, annotations,
    owners and deletion state: all that plugins sign a pod by."""
    old_meta: dict[str, Any] = old.get("metadata") or {}
    new_meta: dict[str, Any] = new.get("metadata") or {}
    return (
        old.get("spec") == new.get("spec")
        and old_meta.get("labels") == new_meta.get("labels")
        and old_meta.get("annotations") == new_meta.get("annotations")
        and old_meta.get("ownerReferences") == new_meta.get("ownerReferences")
        and bool(old_meta.get("deletionTimestamp")) == bool(new_meta.get("deletionTimestamp"))
    )


def _containers(spec: Mapping[str, Any], kind: str, field_prefix: str) -> list[tuple[Resources, Mapping[str, Any]]]:
    raw = spec.get(kind) or []
    if not isinstance(raw, list):
        raise InputError("expected a list", field=f"{field_prefix}.{kind}")
    out = []
    for i, c in enumerate(raw):
        if not isinstance(c, (dict, Mapping)):
            raise InputError("expected an object", field=f"{field_prefix}.{kind}[{i}]")
        res = c.get("resources") or {}
        req = parse_resource_list(res.get("requests"), f"{field_prefix}.{kind}[{i}].resources.requests")
        out.append((req, c))
    return out


# Pods parsed by the API server's validation, by the identity of the object it validated, until the
# scheduler's informer meets that object: a pod created in process is parsed once, not twice.
# An entry goes when the informer takes it; all go when the table is full (the parses of pods no
# informer in this process watches: a dry run, a refused create, an API server serving only HTTP).
_VALIDATED: dict[int, PodInfo] = {}
VALIDATED_LIMIT = 4096


def remember_validated(info: PodInfo) -> None:
    """Keep the parse of a pod the API server is about to store (see ``validated_pod_info``)."""
    if len(_VALIDATED) >= VALIDATED_LIMIT:
        _VALIDATED.clear()
    _VALIDATED[id(info.obj)] = info


def validated_pod_info(obj: dict[str, Any]) -> PodInfo | None:
    """The validation's parse of this very object, if it made one. Storing a new object sets
    only its uid and system metadata (and drops a deletionTimestamp) after validation, so those
    are read again; everything else the parse holds is the stored object's."""
    info = _VALIDATED.pop(id(obj), None)
    if info is None or info.obj is not obj:
        return None
    meta = obj.get("metadata") or {}
    info.uid = meta.get("uid") or ""
    info.deleting = bool(meta.get("deletionTimestamp"))
    return info


def pod_info_from(obj: dict[str, Any]) -> PodInfo:
    """Parse a (defaulted, admitted) v1 Pod. Raises InputError naming the bad field."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if not isinstance(spec, (dict, Mapping)):
        raise InputError("expected an object", field="spec")
    containers = _containers(spec, "containers", "spec")
    inits = _containers(spec, "initContainers", "spec")
    init_reqs = [(r, c.get("restartPolicy") == "Always") for r, c in inits]
    overhead = parse_resource_list(spec.get("overhead"), "spec.overhead")
    pod_level_raw = (spec.get("resources") or {}).get("requests")
    pod_level = parse_resource_list(pod_level_raw, "spec.resources.requests") if pod_level_raw else None
    app = [r for r, _ in containers]
    if isinstance(status, (dict, Mapping)) and status and reports_resources(status):  # in-place resize
        requests = requests_with_status(containers, inits, status, overhead, pod_level)
        non_zero = requests_with_status(containers, inits, status, overhead, pod_level, non_zero=True)
    else:
        requests = pod_requests(app, init_reqs, overhead, pod_level)
        non_zero = pod_requests(app, init_reqs, overhead, pod_level, non_zero=True)

    affinity = spec.get("affinity") or {}
    if not isinstance(affinity, (dict, Mapping)):
        raise InputError("expected an object", field="spec.affinity")
    node_aff = affinity.get("nodeAffinity") or {}
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution")
    required_terms = None
    if required is not None:
        required_terms = tuple(
            parse_node_selector_term(
                t, f"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"
            )
            for i, t in enumerate(required.get("nodeSelectorTerms") or [])
        )
    preferred = []
    for i, p in enumerate(node_aff.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        f = f"spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        weight = p.get("weight")
        if not isinstance(weight, int) or not 1 <= weight <= 100:
            raise InputError(f"Invalid value: {weight!r}: must be in the range 1-100", field=f"{f}.weight")
        preferred.append(PreferredTerm(weight, parse_node_selector_term(p.get("preference") or {}, f"{f}.preference")))

    ports = []
    for i, (_, c) in enumerate(containers):
        for j, p in enumerate(c.get("ports") or []):
            hp = p.get("hostPort")
            if hp:
                if not isinstance(hp, int) or not 0 < hp < 65536:
                    raise InputError(
                        f"Invalid value: {hp!r}: must be between 1 and 65535, inclusive",
                        field=f"spec.containers[{i}].ports[{j}].hostPort",
                    )
                ports.append(HostPort(p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", hp))

    images = tuple(normalized_image_name(c["image"]) for _, c in inits + containers if c.get("image"))
    node_selector = spec.get("nodeSelector") or {}
    if not isinstance(node_selector, (dict, Mapping)):
        raise InputError("expected a map", field="spec.nodeSelector")
    gates = tuple(str(g.get("name")) for g in spec.get("schedulingGates") or [])
    namespace = meta.get("namespace") or "default"
    labels = meta.get("labels") or {}
    pod_affinity = parse_pod_affinity(affinity, namespace, labels)
    spread = parse_spread_constraints(spec.get("topologySpreadConstraints"), labels)
    pvcs = tuple(
        str(v["persistentVolumeClaim"].get("claimName"))
        for v in spec.get("volumes") or []
        if isinstance(v, (dict, Mapping)) and v.get("persistentVolumeClaim")
    )
    return PodInfo(
        obj=obj,
        namespace=namespace,
        name=meta.get("name") or "",
        uid=meta.get("uid") or "",
        labels=labels,
        priority=int(spec.get("priority") or 0),
        preemption_policy=spec.get("preemptionPolicy") or "PreemptLowerPriority",
        scheduler_name=spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME,
        node_name=spec.get("nodeName") or "",
        nominated_node_name=status.get("nominatedNodeName") or "",
        scheduling_gates=gates,
        tolerations=parse_tolerations(spec.get("tolerations"), "spec.tolerations"),
        node_selector=tuple(sorted((str(k), str(v)) for k, v in node_selector.items())),
        required_terms=required_terms,
        preferred_terms=tuple(preferred),
        host_ports=tuple(ports),
        images=images,
        n_containers=len(containers) + len(inits),
        requests=requests,
        non_zero_cpu=non_zero.get(CPU, 0),
        non_zero_memory=non_zero.get(MEMORY, 0),
        deleting=bool(meta.get("deletionTimestamp")),
        pvc_names=pvcs,
        has_pod_affinity=pod_affinity is not None,
        pod_affinity=pod_affinity,
        spread_constraints=spread,
        controller=controller_ref(meta),
        pod_group=str((spec.get("schedulingGroup") or {}).get("podGroupName") or ""),
    )
