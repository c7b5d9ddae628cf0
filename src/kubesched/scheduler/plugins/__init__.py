"""In-tree plugins (``pkg/scheduler/framework/plugins``) and the registry that names them."""

from __future__ import annotations

from kubesched.scheduler.framework.registry import Registry
from kubesched.scheduler.plugins.defaultbinder import DefaultBinder
from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption
from kubesched.scheduler.plugins.imagelocality import ImageLocality
from kubesched.scheduler.plugins.interpodaffinity import InterPodAffinity
from kubesched.scheduler.plugins.nodeaffinity import NodeAffinity
from kubesched.scheduler.plugins.nodename import NodeName
from kubesched.scheduler.plugins.nodeports import NodePorts
from kubesched.scheduler.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from kubesched.scheduler.plugins.noderesources.fit import NodeResourcesFit
from kubesched.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.scheduler.plugins.podtopologyspread import PodTopologySpread
from kubesched.scheduler.plugins.queuesort import PrioritySort
from kubesched.scheduler.plugins.schedulinggates import SchedulingGates
from kubesched.scheduler.plugins.tainttoleration import TaintToleration

IN_TREE = (
    SchedulingGates,
    PrioritySort,
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    PodTopologySpread,
    InterPodAffinity,
    DefaultPreemption,
    NodeResourcesBalancedAllocation,
    ImageLocality,
    DefaultBinder,
)

# Upstream default plugins that kubesched does not implement yet: the default profile leaves
# them out (the volume and DRA plugins need
# objects the embedded cluster does not model).
NOT_YET_IMPLEMENTED = frozenset(
    {
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "DynamicResources",
    }
)


def in_tree_registry() -> Registry:
    registry = Registry()
    for plugin in IN_TREE:
        registry.register(plugin.name, plugin)
    return registry
