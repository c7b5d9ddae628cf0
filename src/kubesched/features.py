"""Feature gates (``k8s.io/component-base/featuregate``) as kube-scheduler v1.37.2's
``--feature-gates`` knows them: every gate of ``kubesched.feature_list`` (generated from upstream's
binary) with upstream's default, lock, stage and dependencies, set with component-base's syntax and
messages (an unknown gate, a bad bool, a locked gate set against its lock, a gate enabled without
the gates it depends on), ``AllAlpha`` and ``AllBeta`` included.

kubesched acts on some of the gates kube-scheduler's scheduler reads; ``what_kubesched_does``
says, for each, what kubesched does (``docs/feature-gates.md`` is generated from it), and
``FeatureGates.ignored`` names the gates a user set that kubesched does not act on, so that the
CLI can say so instead of silently differing from kube-scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubesched.errors import InputError
from kubesched.feature_list import GATES

OPPORTUNISTIC_BATCHING = "OpportunisticBatching"
STORAGE_CAPACITY_SCORING = "StorageCapacityScoring"
NOMINATED_NODE_NAME_FOR_EXPECTATION = "NominatedNodeNameForExpectation"
SCHEDULER_POP_FROM_BACKOFF_Q = "SchedulerPopFromBackoffQ"
GENERIC_WORKLOAD = "GenericWorkload"
ALL_ALPHA = "AllAlpha"
ALL_BETA = "AllBeta"

# The gates kube-scheduler's scheduler reads whose both settings kubesched follows.
FOLLOWED: dict[str, str] = {
    OPPORTUNISTIC_BATCHING: "followed: batching by pod signature (off: every pod gets a full cycle)",
    STORAGE_CAPACITY_SCORING: "followed: VolumeBinding scores nodes by free capacity (off: no Score)",
    NOMINATED_NODE_NAME_FOR_EXPECTATION: "followed: PreBindPreFlight; nominatedNodeName set before a slow binding",
    SCHEDULER_POP_FROM_BACKOFF_Q: "followed: an idle scheduler pops backing-off pods; backoff in 1-second windows",
    "DRAFractionalCapacityRange": "followed: consumable capacity ranges rounded in milli units (off: whole units)",
    GENERIC_WORKLOAD: "followed: PodGroups queue and schedule as one (the pod group cycle), GangScheduling "
    "in the default profile, workload-aware preemption",
}
# Locked or default-on behaviour kubesched always has: setting the gate changes nothing in kubesched.
ALWAYS: dict[str, str] = {
    "DynamicResourceAllocation": "always on: DynamicResources in the default profile",
    "DRAAdminAccess": "always on: admin-access requests allocate devices already in use",
    "DRADeviceTaints": "always on: device taints and claim tolerations",
    "DRADeviceTaintRules": "always on: DeviceTaintRules taint the devices they select; NoExecute ones evict",
    "DRAExtendedResource": "always on: extended resources backed by a DeviceClass",
    "DRAConsumableCapacity": "always on: claims share allowMultipleAllocations devices by their capacity",
    "DRADeviceBindingConditions": "always on: PreBind waits for devices' binding conditions (bindingTimeout)",
    "DRAPrioritizedList": "always on: firstAvailable allocation, and DynamicResources scores the choice (weight 2)",
    "DRAPartitionableDevices": "always on: devices drawing on a slice's shared counters",
    "DRAResourceClaimDeviceStatus": "always on: claims' device status, which binding conditions are read from",
    "NodeDeclaredFeatures": "always on: NodeDeclaredFeatures in the default profile",
    "NodeInclusionPolicyInPodTopologySpread": "always on: nodeAffinityPolicy and nodeTaintsPolicy",
    "MatchLabelKeysInPodTopologySpread": "always on: matchLabelKeys merged into the selector at admission",
    "InPlacePodVerticalScaling": "always on: pods/resize, the kubelet allocating, max(spec, allocated, actuated)",
    "InPlacePodVerticalScalingInitContainers": "always on: init containers resize too",
    "InPlacePodLevelResourcesVerticalScaling": "always on: pod-level status.resources and allocatedResources count",
    "ClearingNominatedNodeNameAfterBinding": "always on: the API server's binding clears status.nominatedNodeName",
    "PodTopologyLabelsAdmission": "always on: a pod bound to a node gets its zone and region labels",
    "PodLevelResources": "always on: pod-level spec.resources requests count instead of the containers'",
    "ImageVolume": "always on: ImageLocality counts image volumes' images",
    "VolumeAttributesClass": "always on (nothing in scheduling depends on it here)",
    "SchedulerAsyncPreemption": "always on: victims are deleted after the cycle, the pod retried after",
}


def what_kubesched_does(name: str) -> str:
    """One line for ``docs/feature-gates.md``."""
    if name in FOLLOWED:
        return FOLLOWED[name]
    if name in ALWAYS:
        return ALWAYS[name]
    if name in (ALL_ALPHA, ALL_BETA):
        return "followed: sets every unlocked gate of the stage not set explicitly"
    _, _, stage, _, read = GATES[name]
    if not read:
        return "accepted; read by other components only"
    if stage == "ALPHA":
        return "accepted; alpha, not implemented"
    return "accepted; not implemented yet: kubesched behaves as with the gate off"


_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def _parse_bool(key: str, value: str) -> bool:
    """Go's ``strconv.ParseBool``, with component-base's message on failure."""
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InputError(f'invalid value of {key}={value}, err: strconv.ParseBool: parsing "{value}": invalid syntax')


def _aggregate(errors: list[str]) -> str:
    """``utilerrors.NewAggregate``'s message: one error as it is, several in brackets."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The gates set explicitly; the others keep their defaults."""

    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        if name in self.overrides:
            return self.overrides[name]
        default, locked, stage, _, _ = GATES[name]
        if not locked:
            special = {"ALPHA": ALL_ALPHA, "BETA": ALL_BETA}.get(stage)
            if special is not None and special in self.overrides:
                return self.overrides[special]
        return default

    def merged(self, other: FeatureGates) -> FeatureGates:
        """``other``'s settings over these (the flag over the configuration file)."""
        return FeatureGates({**self.overrides, **other.overrides})

    def ignored(self) -> list[str]:
        """Gates set explicitly that kube-scheduler's scheduler reads and kubesched does not act on,
        set otherwise than kubesched behaves (the CLI warns about them)."""
        out = []
        for name, value in self.overrides.items():
            _, _, _, _, read = GATES[name]
            if not read or name in FOLLOWED:
                continue
            if name in ALWAYS and value:
                continue
            if name not in ALWAYS and not value:
                continue
            out.append(name)
        return out

    @classmethod
    def parse(cls, text: str) -> FeatureGates:
        """``--feature-gates`` syntax: comma-separated ``Name=bool`` pairs (``featureGate.Set``)."""
        out: dict[str, bool] = {}
        for item in (s.strip() for s in text.split(",")):
            if not item:
                continue
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep:
                raise InputError(f"missing bool value for {key}")
            out[key] = _parse_bool(key, value.strip())
        return cls.checked(out)

    @classmethod
    def checked(cls, settings: Mapping[str, bool], path: str | None = None) -> FeatureGates:
        """``unsafeSetFromMap``: an unknown gate is refused at once; each locked gate set against its
        lock is refused; then every enabled gate's dependencies must be enabled."""
        errors: list[str] = []
        for key, value in settings.items():
            spec = GATES.get(key)
            if spec is None:
                raise InputError(f"unrecognized feature gate: {key}", field=f"{path}.{key}" if path else None)
            default, locked, _, _, _ = spec
            if locked and value != default:
                was, now = str(value).lower(), str(default).lower()
                errors.append(f"cannot set feature gate {key} to {was}, feature is locked to {now}")
        if errors:
            raise InputError(_aggregate(errors), field=path)
        gates = cls(dict(settings))
        for name, (_, _, _, deps, _) in GATES.items():
            if deps and gates.enabled(name):
                off = [d for d in deps if not gates.enabled(d)]
                if off:
                    errors.append(f"{name} is enabled, but depends on features that are disabled: [{' '.join(off)}]")
        if errors:
            raise InputError(_aggregate(errors), field=path)
        return gates

    @classmethod
    def from_mapping(cls, raw: object, path: str = "featureGates") -> FeatureGates:
        """A ``featureGates`` map (``name: bool``) as KubeletConfiguration spells it."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise InputError("expected an object of feature name to bool", field=path)
        out: dict[str, bool] = {}
        for key, value in raw.items():
            if not isinstance(value, bool):
                raise InputError(f"expected a bool, got {value!r}", field=f"{path}.{key}")
            out[str(key)] = value
        return cls.checked(out, path)
