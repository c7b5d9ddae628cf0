"""KubeSchedulerConfiguration ``kubescheduler.config.k8s.io/v1``: parsing, defaulting, validation.

Defaults follow ``pkg/scheduler/apis/config/v1/defaults.go`` and ``default_plugins.go``; the
user's per-point plugin sets are merged into the defaults as ``mergePluginSet`` does, and the
MultiPoint set is expanded later, when each profile's framework is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import schema
from kubesched.errors import InputError
from kubesched.features import FeatureGates
from kubesched.leaderelection.config import LeaderElectionConfig, from_dict
from kubesched.scheduler.extender import ExtenderConfig, parse_extenders

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"

EXTENSION_POINTS = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)

# getDefaultPlugins(): the MultiPoint set, in execution order, with score weights.
# Upstream default plugins that kubesched does not implement yet (the default profile would leave
# them out): none since the volume plugins arrived.
NOT_YET_IMPLEMENTED: frozenset[str] = frozenset()


DEFAULT_MULTIPOINT: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),  # applyDynamicResources: weight 2 (it scores prioritized lists)
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
    ("NodeDeclaredFeatures", 0),  # applyFeatureGates appends it (GA and locked on in v1.37)
)


def apply_feature_gates(profile: Profile, gates: FeatureGates) -> None:
    """``applyFeatureGates``: the default plugins a gate adds (GenericWorkload: GangScheduling
    at the end of MultiPoint), unless the profile disabled them."""
    if not gates.enabled("GenericWorkload"):
        return
    multi = profile.multi_point
    if "*" in multi.disabled or "GangScheduling" in multi.disabled:
        return
    if all(p.name != "GangScheduling" for p in multi.enabled):
        multi.enabled.append(PluginRef("GangScheduling", 0, default=True))


@dataclass(slots=True)
class PluginRef:
    name: str
    weight: int = 0
    default: bool = False  # came from upstream's default set, not from the user


@dataclass(slots=True)
class PluginSet:
    enabled: list[PluginRef] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Profile:
    scheduler_name: str
    plugins: dict[str, PluginSet]
    multi_point: PluginSet
    plugin_config: dict[str, Any]
    percentage_of_nodes_to_score: int | None = None
    field_path: str = "profiles[0]"
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class SchedulerConfig:
    profiles: list[Profile]
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1
    pod_max_backoff_seconds: float = 10
    parallelism: int = 16
    extenders: list[ExtenderConfig] = field(default_factory=list)
    leader_election: LeaderElectionConfig = field(default_factory=LeaderElectionConfig)
    source: str = "<default>"
    client_connection: ClientConnection = field(default_factory=lambda: ClientConnection())
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    delay_cache_until_active: bool = False
    warnings: list[str] = field(default_factory=list)  # fields read but not acted on
    present: frozenset[str] = frozenset()  # the top-level fields the document set
    # kube-scheduler takes these from --feature-gates only; kubesched also reads a top-level
    # ``featureGates`` map (KubeletConfiguration's spelling) so one file can say it
    feature_gates: FeatureGates = field(default_factory=FeatureGates)


@dataclass(slots=True)
class ClientConnection:
    """component-base ``ClientConnectionConfiguration`` with kube-scheduler's defaults (qps 50,
    burst 100, protobuf content type)."""

    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50.0
    burst: int = 100


# the fields of KubeSchedulerConfiguration v1 and of a profile: anything else is a strict decoding error
TOP_LEVEL_FIELDS = frozenset(
    {
        "apiVersion",
        "kind",
        "parallelism",
        "leaderElection",
        "clientConnection",
        "enableProfiling",
        "enableContentionProfiling",
        "percentageOfNodesToScore",
        "podInitialBackoffSeconds",
        "podMaxBackoffSeconds",
        "profiles",
        "extenders",
        "delayCacheUntilActive",
        "featureGates",  # kubesched's: see SchedulerConfig.feature_gates
    }
)
PROFILE_FIELDS = frozenset({"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"})


# The fields of the in-tree plugins' args (``pkg/scheduler/apis/config/v1``'s *Args types): a
# nested dict is an object, a one-element list a list of that shape, a string the schema type of
# a core API object (validated by ``api.schema``), None a leaf. Out-of-tree plugins declare a
# dataclass, decoded as strictly by ``framework.args``.
_RESOURCE_SPEC = [{"name": None, "weight": None}]
ARGS_FIELDS: dict[str, dict[str, Any]] = {
    "NodeResourcesFit": {
        "ignoredResources": None,
        "ignoredResourceGroups": None,
        "scoringStrategy": {
            "type": None,
            "resources": _RESOURCE_SPEC,
            "requestedToCapacityRatio": {"shape": [{"utilization": None, "score": None}]},
        },
    },
    "NodeResourcesBalancedAllocation": {"resources": _RESOURCE_SPEC},
    "InterPodAffinity": {"hardPodAffinityWeight": None, "ignorePreferredTermsOfExistingPods": None},
    "PodTopologySpread": {"defaultConstraints": ["core.TopologySpreadConstraint"], "defaultingType": None},
    "DefaultPreemption": {"minCandidateNodesPercentage": None, "minCandidateNodesAbsolute": None},
    "NodeAffinity": {"addedAffinity": "core.NodeAffinity"},
    "DynamicResources": {"filterTimeout": None, "bindingTimeout": None},
}


def check_args_fields(plugin: str, args: Mapping[str, Any], path: str) -> None:
    """Strict decoding of an in-tree plugin's args: an unknown field is an error naming it."""
    spec = ARGS_FIELDS.get(plugin)
    if spec is not None:
        _check_shape({**spec, "apiVersion": None, "kind": None}, args, path)


def _check_shape(spec: Any, value: Any, path: str) -> None:
    if spec is None or value is None:
        return
    if isinstance(spec, str):
        _, unknown = schema.decode(spec, dict(value)) if isinstance(value, Mapping) else (value, [])
        if unknown:
            where = f"{path}.{unknown[0]}"
            raise InputError(f'strict decoding error: unknown field "{where}"', field=where)
        return
    if isinstance(spec, list):
        if isinstance(value, list):
            for i, item in enumerate(value):
                _check_shape(spec[0], item, f"{path}[{i}]")
        return
    if isinstance(value, Mapping):
        _unknown_fields(value, frozenset(spec), f"{path}.")
        for key, sub in spec.items():
            _check_shape(sub, value.get(key), f"{path}.{key}")


def _unknown_fields(raw: Mapping[str, Any], known: frozenset[str], path: str) -> None:
    for key in raw:
        if key not in known:
            raise InputError(f'strict decoding error: unknown field "{path}{key}"', field=f"{path}{key}")


def _bool(raw: Mapping[str, Any], key: str, default: bool, path: str = "") -> bool:
    v = raw.get(key, default)
    if not isinstance(v, bool):
        raise InputError(f"Invalid value: {v!r}: expected true or false", field=f"{path}{key}")
    return v


def _client_connection(raw: Any) -> ClientConnection:
    if raw is None:
        return ClientConnection()
    if not isinstance(raw, Mapping):
        raise InputError("expected an object", field="clientConnection")
    known = frozenset({"kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"})
    _unknown_fields(raw, known, "clientConnection.")
    cc = ClientConnection()
    for key, attr in (
        ("kubeconfig", "kubeconfig"),
        ("acceptContentTypes", "accept_content_types"),
        ("contentType", "content_type"),
    ):
        if key in raw:
            if not isinstance(raw[key], str):
                raise InputError(f"Invalid value: {raw[key]!r}: expected a string", field=f"clientConnection.{key}")
            setattr(cc, attr, raw[key])
    cc.qps = float(_number(raw, "qps", cc.qps, "clientConnection."))
    burst = _number(raw, "burst", cc.burst, "clientConnection.")
    if not isinstance(burst, int):
        raise InputError(f"Invalid value: {burst!r}: expected an integer", field="clientConnection.burst")
    cc.burst = burst
    return cc


def _plugin_set(raw: Any, path: str) -> PluginSet:
    if raw is None:
        return PluginSet()
    if not isinstance(raw, Mapping):
        raise InputError("expected an object with enabled/disabled", field=path)
    _unknown_fields(raw, frozenset({"enabled", "disabled"}), f"{path}.")
    for key in ("enabled", "disabled"):
        entries = raw.get(key)
        if entries is not None and not isinstance(entries, list):
            raise InputError("expected a list", field=f"{path}.{key}")
        for i, p in enumerate(entries or []):
            if isinstance(p, Mapping):
                _unknown_fields(p, frozenset({"name", "weight"}), f"{path}.{key}[{i}].")
    enabled = []
    for i, p in enumerate(raw.get("enabled") or []):
        if not isinstance(p, Mapping) or not isinstance(p.get("name"), str) or not p["name"]:
            raise InputError("Required value: plugin name", field=f"{path}.enabled[{i}].name")
        weight = p.get("weight", 0) or 0
        if not isinstance(weight, int) or isinstance(weight, bool) or weight < 0:
            raise InputError(
                f"Invalid value: {weight!r}: must be a non-negative integer", field=f"{path}.enabled[{i}].weight"
            )
        enabled.append(PluginRef(p["name"], weight))
    disabled = []
    for i, p in enumerate(raw.get("disabled") or []):
        if not isinstance(p, Mapping) or not isinstance(p.get("name"), str) or not p["name"]:
            raise InputError("Required value: plugin name", field=f"{path}.disabled[{i}].name")
        disabled.append(p["name"])
    return PluginSet(enabled, disabled)


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """``mergePluginSet``: defaults minus disabled ("*" = all), custom entries override in place."""
    disabled = set(custom.disabled)
    custom_by_name = {p.name: (i, p) for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled:
        for p in default.enabled:
            if p.name in disabled:
                continue
            if p.name in custom_by_name:
                i, cp = custom_by_name[p.name]
                replaced.add(i)
                p = cp
            enabled.append(p)
    enabled.extend(p for i, p in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled, list(custom.disabled))


def _number(raw: Mapping[str, Any], key: str, default: Any, path: str) -> Any:
    v = raw.get(key, default)
    if v is None:
        return default
    if not isinstance(v, int | float) or isinstance(v, bool):
        raise InputError(f"Invalid value: {v!r}: must be a number", field=f"{path}{key}")
    return v


def _profile(raw: Any, index: int, n_profiles: int) -> Profile:
    path = f"profiles[{index}]"
    if not isinstance(raw, Mapping):
        raise InputError("expected an object", field=path)
    _unknown_fields(raw, PROFILE_FIELDS, f"{path}.")
    name = raw.get("schedulerName")
    if name is None and n_profiles == 1:
        name = DEFAULT_SCHEDULER_NAME
    if not isinstance(name, str) or not name:
        raise InputError("Required value", field=f"{path}.schedulerName")
    plugins_raw = raw.get("plugins") or {}
    if not isinstance(plugins_raw, Mapping):
        raise InputError("expected an object", field=f"{path}.plugins")
    for key in plugins_raw:
        if key not in (*EXTENSION_POINTS, "multiPoint", "placementGenerate", "placementScore"):
            raise InputError(f"unknown field {key!r}", field=f"{path}.plugins.{key}")
    default_mp = PluginSet([PluginRef(n, w, default=True) for n, w in DEFAULT_MULTIPOINT])
    multi = merge_plugin_set(default_mp, _plugin_set(plugins_raw.get("multiPoint"), f"{path}.plugins.multiPoint"))
    points = {
        ep: merge_plugin_set(PluginSet(), _plugin_set(plugins_raw.get(ep), f"{path}.plugins.{ep}"))
        for ep in EXTENSION_POINTS
    }
    plugin_config: dict[str, Any] = {}
    skipped: list[str] = []
    plugin_configs = raw.get("pluginConfig") or []
    if not isinstance(plugin_configs, list):
        raise InputError("expected a list", field=f"{path}.pluginConfig")
    for i, pc in enumerate(plugin_configs):
        if not isinstance(pc, Mapping) or not isinstance(pc.get("name"), str):
            raise InputError("Required value: name", field=f"{path}.pluginConfig[{i}].name")
        if pc["name"] in plugin_config:
            raise InputError(f"Duplicate value: {pc['name']!r}", field=f"{path}.pluginConfig[{i}]")
        args = pc.get("args") or {}
        if not isinstance(args, Mapping):
            raise InputError("expected an object", field=f"{path}.pluginConfig[{i}].args")
        if pc["name"] in NOT_YET_IMPLEMENTED:  # a dumped upstream configuration has their args
            skipped.append(
                f'{path}.pluginConfig[{i}]: plugin "{pc["name"]}" is not implemented by kubesched yet; '
                "its args are ignored"
            )
            continue
        _unknown_fields(pc, frozenset({"name", "args"}), f"{path}.pluginConfig[{i}].")
        check_args_fields(pc["name"], args, f"{path}.pluginConfig[{i}].args")
        plugin_config[pc["name"]] = dict(args)
    pct = raw.get("percentageOfNodesToScore")
    if pct is not None and (not isinstance(pct, int) or not 0 <= pct <= 100):
        raise InputError(
            f"Invalid value: {pct!r}: not in valid range [0-100]", field=f"{path}.percentageOfNodesToScore"
        )
    return Profile(name, points, multi, plugin_config, pct, path, skipped)


def parse_config(raw: Any, source: str = "<config>") -> SchedulerConfig:
    """Parse, default and validate a KubeSchedulerConfiguration document."""
    try:
        return _parse(raw, source)
    except InputError as exc:
        raise exc.located(file=source, obj=f"{KIND}") from None


def _parse(raw: Any, source: str) -> SchedulerConfig:
    if raw is None:
        raw = {"apiVersion": API_VERSION, "kind": KIND}
    if not isinstance(raw, Mapping):
        raise InputError("expected an object", field="")
    if raw.get("apiVersion") != API_VERSION:
        raise InputError(
            f"no kind {KIND!r} is registered for version {raw.get('apiVersion')!r}; expected {API_VERSION}",
            field="apiVersion",
        )
    _unknown_fields(raw, TOP_LEVEL_FIELDS, "")
    pct = _number(raw, "percentageOfNodesToScore", 0, "")
    if not 0 <= pct <= 100:
        raise InputError(f"Invalid value: {pct}: not in valid range [0-100]", field="percentageOfNodesToScore")
    initial = _number(raw, "podInitialBackoffSeconds", 1, "")
    if initial <= 0:
        raise InputError(f"Invalid value: {initial}: must be greater than 0", field="podInitialBackoffSeconds")
    maximum = _number(raw, "podMaxBackoffSeconds", 10, "")
    if maximum < initial:
        raise InputError(
            f"Invalid value: {maximum}: must be greater than or equal to PodInitialBackoffSeconds",
            field="podMaxBackoffSeconds",
        )
    parallelism = _number(raw, "parallelism", 16, "")
    if parallelism <= 0:
        raise InputError(f"Invalid value: {parallelism}: should be an integer greater than 0", field="parallelism")
    profiles_raw = raw.get("profiles") or [{}]
    if not isinstance(profiles_raw, list):
        raise InputError("expected a list", field="profiles")
    profiles = [_profile(p, i, len(profiles_raw)) for i, p in enumerate(profiles_raw)]
    seen: dict[str, int] = {}
    for i, p in enumerate(profiles):
        if p.scheduler_name in seen:
            raise InputError(f"Duplicate value: {p.scheduler_name!r}", field=f"profiles[{i}].schedulerName")
        seen[p.scheduler_name] = i
    if len(profiles) > 1:
        first = _queue_sort_of(profiles[0])
        for i, p in enumerate(profiles[1:], 1):
            if _queue_sort_of(p) != first:
                raise InputError(
                    "Invalid value: queueSort must be the same for all profiles",
                    field=f"profiles[{i}].plugins.queueSort",
                )
    extenders = parse_extenders(raw.get("extenders"))
    # resources an extender manages with ignoredByScheduler replace NodeResourcesFit's
    # ignoredResources in every profile (``scheduler.go`` buildExtenders)
    ignored = [r["name"] for e in extenders for r in e.managed_resources if r.get("ignoredByScheduler")]
    if ignored:
        for p in profiles:
            p.plugin_config["NodeResourcesFit"] = {
                **p.plugin_config.get("NodeResourcesFit", {}),
                "ignoredResources": ignored,
            }
    warnings = [
        f"{key} is read but kubesched does not act on it yet"
        for key, default in (
            ("enableProfiling", True),
            ("enableContentionProfiling", True),
            ("delayCacheUntilActive", False),
        )
        if key in raw and raw[key] != default
    ]
    for p in profiles:
        warnings.extend(p.warnings)
    for key in ("contentType", "acceptContentTypes"):  # qps and burst limit kubesched scheduler's requests
        if key in (raw.get("clientConnection") or {}):
            warnings.append(f"clientConnection.{key} is read but kubesched does not act on it yet")
    return SchedulerConfig(
        profiles,
        int(pct),
        float(initial),
        float(maximum),
        int(parallelism),
        extenders,
        from_dict(raw.get("leaderElection")).validate(),
        source,
        _client_connection(raw.get("clientConnection")),
        _bool(raw, "enableProfiling", True),
        _bool(raw, "enableContentionProfiling", True),
        _bool(raw, "delayCacheUntilActive", False),
        warnings,
        frozenset(str(k) for k in raw),
        FeatureGates.from_mapping(raw.get("featureGates")),
    )


def _queue_sort_of(p: Profile) -> list[str]:
    explicit = [e.name for e in p.plugins["queueSort"].enabled]
    if explicit:
        return explicit
    if "*" in p.plugins["queueSort"].disabled:
        return []
    return [e.name for e in p.multi_point.enabled if e.name == "PrioritySort"]


def default_config() -> SchedulerConfig:
    return parse_config(None, "<default>")
