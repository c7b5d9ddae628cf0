"""Object validation shared by ``simulate``'s manifest loader and the embedded API server: the
parts of kube-apiserver's validation (``pkg/apis/core/validation``, ``apimachinery/pkg/api/
validation``) whose absence would let a wrong object change what the scheduler decides.

Every check raises InputError with the field path and upstream's message; the API server turns
it into a 422 Invalid, the loader into one line naming the file and object.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.errors import InputError, go_quote

# apimachinery/pkg/api/validate/content: DNS-1123 names, label keys and values
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_KEY_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024  # apimachinery TotalAnnotationSizeLimitB
# resources whose names must be DNS labels rather than subdomains (ValidateNamespaceName, ValidateServiceName)
LABEL_NAMED = {"Namespace", "Service"}

# kubesched counts cpu in millicores and every other resource in units as 64-bit integers, and
# scores multiply them by 100 and sum them over pods: quantities above 2^53 are refused so that
# no sum or product can wrap around (upstream's int64 arithmetic has the same limit, unchecked).
MAX_COUNT = 2**53
_STANDARD_CONTAINER_RESOURCES = {"cpu", "memory", "ephemeral-storage"}


def _invalid(value: Any, message: str, field: str) -> InputError:
    return InputError(f"Invalid value: {go_quote(value)}: {message}", field=field)


def dns_subdomain_errors(name: str) -> list[str]:
    errs = ["must be no more than 253 characters"] if len(name) > 253 else []
    if not _SUBDOMAIN.match(name):
        errs.append(SUBDOMAIN_MSG)
    return errs


def dns_label_errors(name: str) -> list[str]:
    errs = ["must be no more than 63 characters"] if len(name) > 63 else []
    if not _LABEL.match(name):
        errs.append(LABEL_MSG)
    return errs


# label and annotation keys found valid: objects of a workload repeat a few (kept up to a bound)
_VALID_KEYS: set[str] = set()
_VALID_KEYS_KEPT = 65536


def label_key_errors(key: str) -> list[str]:
    """``content.IsLabelKey``: an optional DNS-subdomain prefix, a '/', a name of ≤ 63 characters."""
    if key in _VALID_KEYS:
        return []
    errs = _label_key_errors(key)
    if not errs and len(_VALID_KEYS) < _VALID_KEYS_KEPT:
        _VALID_KEYS.add(key)
    return errs


def _label_key_errors(key: str) -> list[str]:
    parts = key.split("/")
    errs: list[str] = []
    if len(parts) > 2:
        return [
            "a valid label key "
            + _KEY_MSG
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns_subdomain_errors(parts[0]))
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _KEY_NAME.match(name):
        errs.append("name part " + _KEY_MSG)
    return errs


def label_value_errors(value: str) -> list[str]:
    errs = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not _LABEL_VALUE.match(value):
        errs.append(_VALUE_MSG)
    return errs


def _shown(value: str) -> str:
    """A value as a message quotes it: long ones cut, as field.Invalid's output is read by people."""
    return value if len(value) <= 256 else value[:253] + "..."


# kinds whose names need only be a path segment (``ValidateRBACName`` = ``path.IsValidPathSegmentName``):
# ``system:kube-scheduler`` is a valid ClusterRole name
PATH_SEGMENT_NAMED = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})


def path_segment_errors(name: str) -> list[str]:
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def validate_name(kind: str, name: Any, field: str = "metadata.name") -> None:
    if not name:
        raise InputError("Required value: name or generateName is required", field=field)
    if not isinstance(name, str):
        raise InputError("must be a string", field=field)
    if kind in PATH_SEGMENT_NAMED:
        errs = path_segment_errors(name)
    else:
        errs = dns_label_errors(name) if kind in LABEL_NAMED else dns_subdomain_errors(name)
    if errs:
        raise _invalid(_shown(name), ", ".join(errs), field)


def validate_meta(kind: str, obj: Mapping[str, Any], *, namespaced: bool) -> None:
    """``ValidateObjectMeta``: the name (a DNS subdomain, or a label for namespaces and services),
    the namespace, label keys and values, annotation keys and their total size."""
    meta = obj.get("metadata")
    if not isinstance(meta, (dict, Mapping)):
        raise InputError("Required value: name or generateName is required", field="metadata.name")
    validate_name(kind, meta.get("name"))
    ns = meta.get("namespace")
    if namespaced and ns:
        errs = dns_label_errors(str(ns))
        if errs:
            raise _invalid(_shown(str(ns)), ", ".join(errs), "metadata.namespace")
    for key, value in (meta.get("labels") or {}).items():
        errs = label_key_errors(str(key))
        if errs:
            raise _invalid(_shown(str(key)), errs[0], "metadata.labels")
        errs = label_value_errors(str(value))
        if errs:
            raise _invalid(_shown(str(value)), errs[0], "metadata.labels")
    annotations = meta.get("annotations") or {}
    size = 0
    for key, value in annotations.items():
        errs = label_key_errors(str(key).lower())
        if errs:
            raise _invalid(_shown(str(key)), errs[0], "metadata.annotations")
        size += len(str(key)) + len(str(value))
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        raise InputError(
            f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes", field="metadata.annotations"
        )


def is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_overcommit_allowed(name: str) -> bool:
    """``helper.IsOvercommitAllowed``: native resources other than hugepages."""
    return is_native_resource(name) and not name.startswith("hugepages-")


def is_integer_resource(name: str) -> bool:
    """``helper.IsIntegerResourceName``: extended resources (and quota's object counts)."""
    return not is_native_resource(name) and not name.startswith("requests.")


def quantity_errors(name: str, raw: Any, field: str) -> Any:
    """``ValidateResourceQuantityValue`` plus kubesched's 2^53 bound; returns the parsed value."""
    try:
        q, problem = _checked_quantity(name, raw)
    except TypeError:  # an unhashable value (a list, a map): not a quantity either way
        q, problem = _check_quantity(name, raw)
    if problem is None:
        return q
    if problem[0] == "parse":
        raise InputError(problem[1], field=field)
    raise _invalid(raw, problem[1], field)


def _check_quantity(name: str, raw: Any) -> tuple[Any, tuple[str, str] | None]:
    """The parsed quantity, or what is wrong with it: ("parse", message) or ("invalid", detail)."""
    try:
        q = parse_quantity(raw)
    except QuantityError as exc:
        return None, ("parse", str(exc))
    if q < 0:
        return q, ("invalid", "must be greater than or equal to 0")
    if is_integer_resource(name) and q.denominator != 1:
        return q, ("invalid", "must be an integer")
    scaled = q * 1000 if name == "cpu" else q
    if scaled > MAX_COUNT:
        bound = f"{MAX_COUNT}m" if name == "cpu" else "8Pi"
        return q, ("invalid", f"must be no more than {bound} (kubesched counts resources in 64-bit integers)")
    return q, None


# every pod of a workload repeats the same few quantities ("100m", "500Mi"): checked once each
_checked_quantity = functools.lru_cache(maxsize=4096, typed=True)(_check_quantity)


def validate_resource_list(raw: Any, field: str) -> None:
    """A ResourceList outside containers (node capacity and allocatable, pod overhead)."""
    if not raw:
        return
    for name, qty in raw.items():
        quantity_errors(str(name), qty, f"{field}[{name}]")


def validate_requirements(res: Mapping[str, Any], field: str, *, container: bool) -> None:
    """``validateResourceRequirements``: names, non-negative quantities, integers for extended
    resources, requests ≤ limits, and equal requests and limits (with limits required) for the
    resources that cannot be overcommitted (extended resources, hugepages)."""
    limits = res.get("limits") or {}
    requests = res.get("requests") or {}
    parsed_limits = {}
    for name, qty in limits.items():
        _check_resource_name(str(name), f"{field}.limits[{name}]", container)
        parsed_limits[name] = quantity_errors(str(name), qty, f"{field}.limits[{name}]")
    for name, qty in requests.items():
        where = f"{field}.requests[{name}]"
        _check_resource_name(str(name), where, container)
        q = quantity_errors(str(name), qty, where)
        limit = parsed_limits.get(name)
        if limit is not None:
            if qty == limits[name]:  # the same value is the same quantity: no Fraction compared
                continue
            if q != limit and not is_overcommit_allowed(str(name)):
                raise _invalid(qty, f"must be equal to {name} limit of {limits[name]}", f"{field}.requests")
            if q > limit:
                raise _invalid(
                    qty, f"must be less than or equal to {name} limit of {limits[name]}", f"{field}.requests"
                )
        elif not is_overcommit_allowed(str(name)):
            raise InputError(
                "Required value: Limit must be set for non overcommitable resources", field=f"{field}.limits"
            )


def _check_resource_name(name: str, field: str, container: bool) -> None:
    """``validateContainerResourceName``: a name without a domain must be a standard resource."""
    if "/" not in name:
        if container and name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            raise _invalid(name, "must be a standard resource for containers", field)
        return
    errs = label_key_errors(name)
    if errs:
        raise _invalid(name, errs[0], field)


def validate_pod(obj: Mapping[str, Any]) -> None:
    """The parts of ``ValidatePodCreate`` about what the scheduler reads: the names it looks up
    (priority class, scheduler, node), at least one container, each named and with an image,
    and every resource requirement (containers, init containers, pod level, overhead)."""
    spec = obj.get("spec") or {}
    for key in ("priorityClassName", "schedulerName", "nodeName"):  # ValidatePodSpec: DNS subdomains
        value = spec.get(key)
        if value:
            errs = dns_subdomain_errors(str(value))
            if errs:
                raise _invalid(_shown(str(value)), ", ".join(errs), f"spec.{key}")
    containers = spec.get("containers")
    if not containers:
        raise InputError("Required value", field="spec.containers")
    for key in ("containers", "initContainers"):
        for i, c in enumerate(spec.get(key) or []):
            if not isinstance(c, (dict, Mapping)):
                continue
            if not c.get("name"):
                raise InputError("Required value", field=f"spec.{key}[{i}].name")
            if not c.get("image"):  # validateContainerCommon
                raise InputError("Required value", field=f"spec.{key}[{i}].image")
            validate_requirements(c.get("resources") or {}, f"spec.{key}[{i}].resources", container=True)
            if key == "initContainers" and c.get("restartPolicy") != "Always":  # validateInitContainers
                for j, p in enumerate(c.get("resizePolicy") or []):
                    if isinstance(p, (dict, Mapping)) and p.get("restartPolicy") == "RestartContainer":
                        raise _invalid(
                            "RestartContainer",
                            "must not be set to 'RestartContainer' for non-sidecar initContainers",
                            f"spec.{key}[{i}].resizePolicy[{j}].restartPolicy",
                        )
    if spec.get("resources"):
        validate_requirements(spec["resources"], "spec.resources", container=False)
    validate_resource_list(spec.get("overhead"), "spec.overhead")
    _validate_host_users(spec)


def _validate_host_users(spec: Mapping[str, Any]) -> None:
    """``validateHostUsers``: a pod in a user namespace of its own (``hostUsers: false``) shares
    none of the host's namespaces (the host network only under the alpha
    UserNamespacesHostNetworkSupport) and mounts no block devices; the field names as upstream
    writes them."""
    if spec.get("hostUsers") is not False:
        return
    for key, field in (("hostNetwork", "spec.hostNetwork"), ("hostPID", "spec.HostPID"), ("hostIPC", "spec.HostIPC")):
        if spec.get(key):
            raise InputError("Forbidden: when `hostUsers` is false", field=field)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(key) or []):
            if isinstance(c, Mapping) and c.get("volumeDevices"):
                raise InputError("Forbidden: when `hostUsers` is false", field=f"spec.{key}[{i}].volumeDevices")


def validate_node(obj: Mapping[str, Any]) -> None:
    """``ValidateNode``'s resource checks: capacity and allocatable are non-negative quantities."""
    status = obj.get("status") or {}
    for key in ("capacity", "allocatable"):
        validate_resource_list(status.get(key), f"status.{key}")


# -- storage (pkg/apis/core/validation ValidatePersistentVolume*, pkg/apis/storage/validation) ------------
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")


def _supported(value: object, allowed: tuple[str, ...], field: str) -> None:
    if value not in allowed:
        choices = ", ".join(go_quote(a) for a in allowed)
        raise InputError(f"Unsupported value: {go_quote(value)}: supported values: {choices}", field=field)


def _access_modes(spec: Mapping[str, Any], field: str, required: str) -> None:
    modes = spec.get("accessModes") or []
    if not modes:
        raise InputError(required, field=field)
    for i, mode in enumerate(modes):
        _supported(mode, ACCESS_MODES, f"{field}[{i}]")


def validate_persistent_volume(obj: Mapping[str, Any]) -> None:
    """``ValidatePersistentVolumeSpec``'s checks the scheduler depends on: access modes and a
    storage capacity."""
    spec = obj.get("spec") or {}
    _access_modes(spec, "spec.accessModes", "Required value")
    if "storage" not in (spec.get("capacity") or {}):
        raise InputError("Required value", field="spec.capacity[storage]")


def validate_persistent_volume_claim(obj: Mapping[str, Any]) -> None:
    """``ValidatePersistentVolumeClaimSpec``'s checks the scheduler depends on: access modes and a
    storage request."""
    spec = obj.get("spec") or {}
    _access_modes(spec, "spec.accessModes", "Required value: at least 1 access mode is required")
    if "storage" not in ((spec.get("resources") or {}).get("requests") or {}):
        raise InputError("Required value", field="spec.resources[storage]")


def validate_storage_class(obj: Mapping[str, Any]) -> None:
    """``ValidateStorageClass``: a provisioner, a reclaim policy and a binding mode it knows."""
    if not obj.get("provisioner"):
        raise InputError("Required value", field="provisioner")
    if obj.get("reclaimPolicy") is not None:
        _supported(obj["reclaimPolicy"], ("Delete", "Retain"), "reclaimPolicy")
    if obj.get("volumeBindingMode") is not None:
        _supported(obj["volumeBindingMode"], ("Immediate", "WaitForFirstConsumer"), "volumeBindingMode")
