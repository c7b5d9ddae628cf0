"""The profiles of a configuration, each a framework with its plugins built
(``pkg/scheduler/profile/profile.go``: ``NewMap``)."""

from __future__ import annotations

from kubesched.errors import InputError
from kubesched.framework.registry import Registry
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.config import SchedulerConfig, apply_feature_gates
from kubesched.scheduler.framework.handle import Handle
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.waiting_pods import WaitingPods
from kubesched.scheduler.plugins import installed_registry


def build_profiles(
    config: SchedulerConfig, handle: Handle | None = None, registry: Registry | None = None
) -> dict[str, Framework]:
    """Every profile's framework, its plugins built with their args (``profile.NewMap``); with
    no handle, without a cluster, which is what ``kubesched config validate`` checks."""
    registry = registry if registry is not None else installed_registry()
    if handle is None:
        handle = Handle(None, Cache(), WaitingPods(), None, features=config.feature_gates)  # type: ignore[arg-type]
    profiles: dict[str, Framework] = {}
    for profile in config.profiles:
        apply_feature_gates(profile, config.feature_gates)
        try:
            fwk = Framework(registry, profile, handle)
        except InputError as exc:
            raise exc.located(file=config.source, obj="KubeSchedulerConfiguration") from None
        profiles[profile.scheduler_name] = fwk
    return profiles
