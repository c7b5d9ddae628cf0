"""Node declared features (KEP-5328; ``k8s.io/component-helpers/nodedeclaredfeatures``): the
registry of features a node may publish in ``status.declaredFeatures``, which of them a pod's spec
needs, and both as bitmasks over the registry sorted by name (its ``FeatureSet``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

# nodedeclaredfeatures/features/registry.go's AllFeatures, by Name(), sorted as Framework sorts them
REGISTRY: tuple[str, ...] = tuple(
    sorted(
        (
            "DRANodeAllocatableResources",
            "DRAOptionalNodeOperations",
            "ExtendWebSocketsToKubelet",
            "InPlacePodLevelResourcesVerticalScaling",
            "InPlacePodVerticalScalingInitContainers",
            "InPlacePodVerticalScalingMemoryBackedVolumes",
            "RestartAllContainersOnContainerExits",
            "UserNamespacesHostNetworkSupport",
            "VolumeBindMountOptions",
        )
    )
)
BIT = {name: 1 << i for i, name in enumerate(REGISTRY)}
WORD = (1 << 64) - 1


def word_count() -> int:
    """How many 64-bit words a mask over the registry takes (the node table's column width)."""
    return max(1, (len(REGISTRY) + 63) // 64)


def mask_words(mask: int, words: int) -> list[int]:
    """A mask as ``words`` unsigned 64-bit words, lowest bits first."""
    return [(mask >> (64 * k)) & WORD for k in range(words)]


def node_mask(declared: Sequence[str]) -> int:
    """``FeatureMapper.TryMap`` of a node's list: one merge walk of the (sorted) list against the
    registry, names it does not know skipped; an unsorted list loses what the walk passes by, as
    upstream's does (the API keeps the list sorted)."""
    mask, i, j = 0, 0, 0
    while i < len(declared) and j < len(REGISTRY):
        if declared[i] == REGISTRY[j]:
            mask |= 1 << j
            i += 1
            j += 1
        elif declared[i] < REGISTRY[j]:
            i += 1
        else:
            j += 1
    return mask


_replaced: Callable[[Mapping[str, Any]], int] | None = None  # registry_replaced's inference
_version = 0  # bumped whenever the registry is replaced or restored


def registry_version() -> int:
    """Changes whenever ``registry_replaced`` swaps the registry (a pod's mask may then differ)."""
    return _version


@contextmanager
def registry_replaced(names: Sequence[str], infer: Callable[[Mapping[str, Any]], bool]) -> Iterator[None]:
    """The registry swapped for features ``names``, each needed by a pod whose spec ``infer``
    holds, as scheduler_perf's NodeDeclaredFeatures workload swaps ``features.AllFeatures`` for
    mock features (``scheduler_perf/nodedeclaredfeatures``). For tests and benchmarks; node tables
    built inside take its width."""
    global REGISTRY, BIT, _replaced, _version
    saved = REGISTRY, BIT, _replaced
    _version += 1
    REGISTRY = tuple(sorted(names))
    BIT = {name: 1 << i for i, name in enumerate(REGISTRY)}
    everything = (1 << len(REGISTRY)) - 1
    _replaced = lambda spec: everything if infer(spec) else 0  # noqa: E731
    try:
        yield
    finally:
        REGISTRY, BIT, _replaced = saved
        _version += 1


def required_mask(spec: Mapping[str, Any]) -> int:
    """``InferForPodScheduling``: the features the pod's spec needs on its node (the registry's
    features whose ``InferForScheduling`` holds; none has a maximum version at v1.37). One pass over
    the containers: it runs for every pod at PreFilter."""
    if _replaced is not None:
        return _replaced(spec)
    mask = 0
    if spec.get("hostNetwork") and spec.get("hostUsers") is False:
        mask |= BIT["UserNamespacesHostNetworkSupport"]
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(key) or ():
            if not isinstance(c, Mapping):
                continue
            rules = c.get("restartPolicyRules") if key != "ephemeralContainers" else None
            if rules and any(isinstance(r, Mapping) and r.get("action") == "RestartAllContainers" for r in rules):
                mask |= BIT["RestartAllContainersOnContainerExits"]
            mounts = c.get("volumeMounts")
            if mounts and any(isinstance(m, Mapping) and m.get("bindMountOptions") for m in mounts):
                mask |= BIT["VolumeBindMountOptions"]
    return mask
