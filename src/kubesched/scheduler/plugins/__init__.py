"""In-tree plugins (``pkg/scheduler/framework/plugins``) and the registry that names them."""

from __future__ import annotations

import importlib.metadata
from typing import Any

from kubesched.errors import InputError
from kubesched.framework.handle import Handle
from kubesched.framework.interface import Plugin
from kubesched.framework.registry import ENTRY_POINT_GROUP, Registry
from kubesched.scheduler.plugins.defaultbinder import DefaultBinder
from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption
from kubesched.scheduler.plugins.dynamicresources import DynamicResources
from kubesched.scheduler.plugins.gangscheduling import GangScheduling
from kubesched.scheduler.plugins.imagelocality import ImageLocality
from kubesched.scheduler.plugins.interpodaffinity import InterPodAffinity
from kubesched.scheduler.plugins.nodeaffinity import NodeAffinity
from kubesched.scheduler.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
from kubesched.scheduler.plugins.nodename import NodeName
from kubesched.scheduler.plugins.nodeports import NodePorts
from kubesched.scheduler.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from kubesched.scheduler.plugins.noderesources.fit import NodeResourcesFit
from kubesched.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.scheduler.plugins.nodevolumelimits import NodeVolumeLimits
from kubesched.scheduler.plugins.podtopologyspread import PodTopologySpread
from kubesched.scheduler.plugins.queuesort import PrioritySort
from kubesched.scheduler.plugins.schedulinggates import SchedulingGates
from kubesched.scheduler.plugins.tainttoleration import TaintToleration
from kubesched.scheduler.plugins.volumebinding import VolumeBinding
from kubesched.scheduler.plugins.volumerestrictions import VolumeRestrictions
from kubesched.scheduler.plugins.volumezone import VolumeZone

IN_TREE = (
    SchedulingGates,
    PrioritySort,
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    VolumeRestrictions,
    NodeVolumeLimits,
    VolumeBinding,
    VolumeZone,
    PodTopologySpread,
    InterPodAffinity,
    DynamicResources,
    DefaultPreemption,
    NodeResourcesBalancedAllocation,
    ImageLocality,
    DefaultBinder,
    NodeDeclaredFeatures,
    GangScheduling,
)

from kubesched.scheduler.config import NOT_YET_IMPLEMENTED  # noqa: E402,F401  (re-exported)


class EntryPointFactory:
    """An installed plugin (an entry point of group ``kubesched.plugins``), imported when a
    profile uses it."""

    def __init__(self, ep: importlib.metadata.EntryPoint, dist: str) -> None:
        self.ep, self.dist = ep, dist

    def load(self) -> Any:
        try:
            target = self.ep.load()
        except Exception as exc:  # an ImportError, or whatever the package raised while importing
            raise InputError(
                f'cannot load plugin "{self.ep.name}" ({self.ep.value}) of package "{self.dist}": {exc}'
            ) from None
        declared = getattr(target, "name", self.ep.name)
        if isinstance(declared, str) and declared and declared != self.ep.name:
            raise InputError(
                f'plugin "{self.ep.name}" of package "{self.dist}" is named "{declared}" by its class; '
                "the entry point and the plugin's name must agree"
            )
        return target

    def __call__(self, args: Any, handle: Handle | None) -> Plugin:
        return self.load()(args, handle)


def installed_registry() -> Registry:
    """The in-tree plugins and those installed Python packages declare in the entry point group
    ``kubesched.plugins`` (``name = "module:PluginClass"``); a name taken twice is an error."""
    registry = in_tree_registry()
    owner: dict[str, str] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else ep.value
        if ep.name in owner:
            if owner[ep.name] == dist:
                continue  # the same distribution seen twice on sys.path
            raise InputError(f'plugin "{ep.name}" is provided by two packages: "{owner[ep.name]}" and "{dist}"')
        if ep.name in registry:
            raise InputError(f'plugin "{ep.name}" of package "{dist}" has the name of an in-tree plugin')
        owner[ep.name] = dist
        registry[ep.name] = EntryPointFactory(ep, dist)
    return registry


def in_tree_registry() -> Registry:
    registry = Registry()
    for plugin in IN_TREE:
        registry.register(plugin.name, plugin)
    return registry
