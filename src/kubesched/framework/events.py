"""Cluster events that move unschedulable pods (``framework/types.go`` ClusterEvent, ActionType)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntFlag
from typing import Any

from kubesched.api.pod import PodInfo


class ActionType(IntFlag):
    ADD = 1
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_NODE_DECLARED_FEATURE = 1 << 7
    UPDATE_POD_LABEL = 1 << 8
    UPDATE_POD_SCALE_DOWN = 1 << 9
    UPDATE_POD_TOLERATION = 1 << 10
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 11
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 12
    UPDATE = (1 << 13) - 1 - 3
    ALL = (1 << 13) - 1


# Resources (framework.EventResource); AssignedPod / UnschedulablePod are the internal split of Pod.
POD = "Pod"
ASSIGNED_POD = "AssignedPod"
UNSCHEDULABLE_POD = "UnschedulablePod"
NODE = "Node"
WILDCARD = "*"


def custom_resource(resource: str) -> tuple[str, str, str] | None:
    """An event resource naming a custom resource as upstream's ``EventResource`` does, in the
    ``<plural>.<version>.<group>`` form (``podgroups.v1alpha1.scheduling.x-k8s.io``): its
    (plural, version, group); None for a built-in resource. The scheduler watches such a
    resource for the plugins that register events for it (``eventhandlers.go``'s dynamic
    informers) and keeps it in the listers under ``<plural>.<group>``."""
    parts = resource.split(".")
    if len(parts) < 3 or not parts[0] or not parts[1].startswith("v"):
        return None
    return parts[0], parts[1], ".".join(parts[2:])


def custom_kind(resource: str) -> str | None:
    """The listers' (and the store's) kind of a custom event resource: ``<plural>.<group>``."""
    named = custom_resource(resource)
    return None if named is None else f"{named[0]}.{named[2]}"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: str
    action: ActionType
    label: str = ""

    def matches(self, registered: ClusterEvent) -> bool:
        """``ClusterEvent.Match``: wildcard resources match anything, actions must overlap."""
        if self.resource == WILDCARD or registered.resource == WILDCARD:
            return bool(self.action & registered.action) or self.action == ActionType.ALL
        resource_ok = registered.resource == self.resource or (
            registered.resource == POD and self.resource in (ASSIGNED_POD, UNSCHEDULABLE_POD)
        )
        return resource_ok and bool(self.action & registered.action)

    def __str__(self) -> str:
        return self.label or f"{self.resource}{self.action.name}"


QUEUE = True
QUEUE_SKIP = False
# QueueingHintFn(pod, old, new) → QUEUE / QUEUE_SKIP; None means always QUEUE.
QueueingHintFn = Callable[[PodInfo, Any, Any], bool]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None


UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(WILDCARD, ActionType.ALL, "ForceActivate")
ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
ALL_EVENTS = ClusterEvent(WILDCARD, ActionType.ALL)
