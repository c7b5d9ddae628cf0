"""Building a profile's plugin lists (``framework/runtime/framework.go``, NewFramework): which
plugins a profile names, each extension point's list with MultiPoint expanded, and the Score
plugins' weights."""

from __future__ import annotations

import dataclasses

from kubesched.errors import InputError
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    MAX_TOTAL_SCORE,
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from kubesched.framework.registry import Registry
from kubesched.scheduler.config import EXTENSION_POINTS, NOT_YET_IMPLEMENTED, PluginRef, Profile
from kubesched.scheduler.framework.args import decode_args
from kubesched.scheduler.framework.handle import Handle

POINT_TYPES: dict[str, type[Plugin]] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}


def plugins_needed(profile: Profile) -> list[str]:
    """Every plugin a profile names, at any extension point or MultiPoint, once, in order."""
    names: dict[str, None] = {}
    for ep in EXTENSION_POINTS:
        for p in profile.plugins[ep].enabled:
            names[p.name] = None
    for p in profile.multi_point.enabled:
        names[p.name] = None
    return list(names)


def expand(ep: str, profile: Profile, plugins: dict[str, Plugin]) -> list[Plugin]:
    """One extension point's plugins: ``expandMultiPointPlugins`` with the point's own list."""
    ptype = POINT_TYPES[ep]
    pset = profile.plugins[ep]
    explicit: list[str] = []
    for p in pset.enabled:
        if not isinstance(plugins[p.name], ptype):
            raise InputError(
                f'plugin "{p.name}" does not extend {ep} plugin', field=f"{profile.field_path}.plugins.{ep}"
            )
        if p.name in explicit:
            raise InputError(
                f'plugin "{p.name}" already registered as "{ep}"', field=f"{profile.field_path}.plugins.{ep}"
            )
        explicit.append(p.name)
    if "*" in pset.disabled:
        return [plugins[n] for n in explicit]
    disabled = set(pset.disabled)
    overrides: list[str] = []
    multi: list[str] = []
    for p in profile.multi_point.enabled:
        plugin = plugins[p.name]
        if not isinstance(plugin, ptype) or p.name in disabled:
            continue
        if p.name in explicit:
            overrides.append(p.name)
            continue
        if p.name in multi:
            raise InputError(
                f'plugin "{p.name}" already registered as "{ep}"', field=f"{profile.field_path}.plugins.multiPoint"
            )
        multi.append(p.name)
    # runtime/framework.go expandMultiPointPlugins: overridden plugins first, in the order of
    # the extension point's own list; then MultiPoint's; then the rest of the explicit ones.
    first = [n for n in explicit if n in overrides]
    ordered = first + multi + [n for n in explicit if n not in overrides]
    return [plugins[n] for n in ordered]


def score_weights(profile: Profile, plugins: dict[str, Plugin]) -> dict[str, int]:
    """Each Score plugin's weight (1 when unset), refusing a sum that could overflow."""
    weights: dict[str, int] = {}
    total = 0
    refs: list[PluginRef] = [*profile.plugins["score"].enabled, *profile.multi_point.enabled]
    for ref in refs:
        if not isinstance(plugins[ref.name], ScorePlugin) or ref.name in weights:
            continue
        w = ref.weight or 1
        if w * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
            raise InputError("total score of Score plugins could overflow", field=f"{profile.field_path}.plugins.score")
        weights[ref.name] = w
        total += w * MAX_NODE_SCORE
    return weights


def new_plugins(registry: Registry, profile: Profile, handle: Handle) -> dict[str, Plugin]:
    """Each plugin the profile names, built once from the registry with its decoded args
    (NewFramework); a default MultiPoint plugin the registry lacks is left out, any other is an
    InputError at the profile's plugins, and a pluginConfig entry no plugin has is one too."""
    profile.multi_point.enabled = [p for p in profile.multi_point.enabled if not (p.default and p.name not in registry)]
    plugins: dict[str, Plugin] = {}
    for name in plugins_needed(profile):
        factory = registry.get(name)
        if factory is None:
            if name in NOT_YET_IMPLEMENTED:
                raise InputError(
                    f'plugin "{name}" is not implemented by kubesched yet', field=f"{profile.field_path}.plugins"
                )
            raise InputError(f'plugin "{name}" does not exist', field=f"{profile.field_path}.plugins")
        args = profile.plugin_config.get(name)
        try:
            target = factory.load() if hasattr(factory, "load") else factory
            arg_type = getattr(target, "Args", None)
            if isinstance(arg_type, type) and dataclasses.is_dataclass(arg_type):
                args = decode_args(arg_type, args)
            plugins[name] = target(args, handle)
        except InputError as exc:
            if exc.field and not exc.field.startswith("profiles"):
                exc.field = f"{profile.field_path}.pluginConfig[{name}].args.{exc.field}"
            raise
    for name in profile.plugin_config:
        if name not in registry:
            raise InputError(f'plugin "{name}" does not exist', field=f"{profile.field_path}.pluginConfig")
    return plugins
