"""Feature gates (``k8s.io/component-base/featuregate``) of the v1.36 features kubesched acts on.

Only the gates that change kubesched's behaviour are known; each has upstream's v1.36 default
(``pkg/features/kube_features.go``). ``--feature-gates A=true,B=false`` sets them as
kube-scheduler's flag does, with component-base's messages for an unknown gate or a bad value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubesched.errors import InputError

OPPORTUNISTIC_BATCHING = "OpportunisticBatching"
STORAGE_CAPACITY_SCORING = "StorageCapacityScoring"

# name -> (v1.36 default, stage)
KNOWN: dict[str, tuple[bool, str]] = {
    OPPORTUNISTIC_BATCHING: (True, "BETA"),  # KEP-5598: beta and on by default since v1.35
    STORAGE_CAPACITY_SCORING: (True, "BETA"),  # KEP-4049: beta and on by default in v1.37
}

_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def _parse_bool(key: str, value: str) -> bool:
    """Go's ``strconv.ParseBool``, with component-base's message on failure."""
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InputError(f'invalid value of {key}={value}, err: strconv.ParseBool: parsing "{value}": invalid syntax')


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The gates set explicitly; the others keep their defaults."""

    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        if name in self.overrides:
            return self.overrides[name]
        return KNOWN[name][0]

    def merged(self, other: FeatureGates) -> FeatureGates:
        """``other``'s settings over these (the flag over the configuration file)."""
        return FeatureGates({**self.overrides, **other.overrides})

    @classmethod
    def parse(cls, text: str) -> FeatureGates:
        """``--feature-gates`` syntax: comma-separated ``Name=bool`` pairs."""
        out: dict[str, bool] = {}
        for item in (s.strip() for s in text.split(",")):
            if not item:
                continue
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep:
                raise InputError(f"missing bool value for {key}")
            if key not in KNOWN:
                raise InputError(f"unrecognized feature gate: {key}")
            out[key] = _parse_bool(key, value.strip())
        return cls(out)

    @classmethod
    def from_mapping(cls, raw: object, path: str = "featureGates") -> FeatureGates:
        """A ``featureGates`` map (``name: bool``) as KubeletConfiguration spells it."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise InputError("expected an object of feature name to bool", field=path)
        out: dict[str, bool] = {}
        for key, value in raw.items():
            if key not in KNOWN:
                raise InputError(f"unrecognized feature gate: {key}", field=f"{path}.{key}")
            if not isinstance(value, bool):
                raise InputError(f"expected a bool, got {value!r}", field=f"{path}.{key}")
            out[str(key)] = value
        return cls(out)
