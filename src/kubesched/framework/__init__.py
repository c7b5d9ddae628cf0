"""``kubesched.framework``: everything a scheduling plugin imports (upstream's staging module
``k8s.io/kube-scheduler/framework``). A plugin needs nothing else of kubesched, and these names
are the interface kept stable between releases (README, "The plugin interface").

- Extension points: one base class each (``PreEnqueuePlugin`` … ``PostBindPlugin``), with the
  columnar Filter and Score (``filter_nodes``, ``score_nodes`` over a ``NodeTableView``) and the
  per-node ones in upstream's shape (``PerNodeFilterPlugin``, ``PerNodeScorePlugin``).
- ``Status`` and ``Code``, ``CycleState``, ``PodInfo``, ``NodeInfo``, ``Diagnosis``.
- ``Handle`` as a Protocol: the client (``ClusterClient``, with ``record_event``), the snapshot,
  listers, waiting pods, the nominator, the clock.
- Queueing hints: ``ClusterEvent``, ``ClusterEventWithHint``, ``ActionType``, ``QUEUE`` /
  ``QUEUE_SKIP``; a custom resource's events name it ``<plural>.<version>.<group>`` and the
  listers keep it under ``custom_kind(...)``.
- The client's own types: ``Watch``, ``WatchEvent``, ``ApiError`` and its subclasses.
- ``Memo``: a PreFilter or PreScore plugin's promise that its outcome may be replayed for pods
  of one template.
- ``Registry`` and ``ENTRY_POINT_GROUP``, the entry-point group of installed plugin packages;
  ``InputError`` for a plugin's invalid arguments.
"""

from kubesched.api.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    TooManyRequests,
)
from kubesched.api.pod import PodInfo
from kubesched.api.watch import ADDED, DELETED, MODIFIED, Watch, WatchEvent
from kubesched.client.interface import ClusterClient
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.events import (
    ASSIGNED_POD,
    NODE,
    POD,
    QUEUE,
    QUEUE_SKIP,
    UNSCHEDULABLE_POD,
    WILDCARD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    custom_kind,
)
from kubesched.framework.handle import (
    Extender,
    Handle,
    Listers,
    MetricsRecorder,
    Nominator,
    Snapshot,
    WaitingPod,
    WaitingPods,
)
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    Memo,
    NodeVerdicts,
    NominatingInfo,
    PermitPlugin,
    PerNodeFilterPlugin,
    PerNodeScorePlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    SignFragment,
    SignPlugin,
)
from kubesched.framework.nodes import NodeInfo, NodeTableView
from kubesched.framework.registry import ENTRY_POINT_GROUP, PluginFactory, Registry
from kubesched.framework.status import Code, Status

__all__ = [
    "ADDED",
    "ASSIGNED_POD",
    "DELETED",
    "ENTRY_POINT_GROUP",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "MODIFIED",
    "NODE",
    "POD",
    "QUEUE",
    "QUEUE_SKIP",
    "UNSCHEDULABLE_POD",
    "WILDCARD",
    "ActionType",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "BindPlugin",
    "ClusterClient",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "Conflict",
    "CycleState",
    "Diagnosis",
    "EnqueueExtensions",
    "Extender",
    "FilterPlugin",
    "Forbidden",
    "Handle",
    "InputError",
    "Invalid",
    "Listers",
    "Memo",
    "MetricsRecorder",
    "NodeInfo",
    "NodeTableView",
    "NodeVerdicts",
    "NominatingInfo",
    "Nominator",
    "NotFound",
    "PerNodeFilterPlugin",
    "PerNodeScorePlugin",
    "PermitPlugin",
    "Plugin",
    "PluginFactory",
    "PodInfo",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "Registry",
    "ReservePlugin",
    "ScorePlugin",
    "SignFragment",
    "SignPlugin",
    "Snapshot",
    "Status",
    "TooManyRequests",
    "WaitingPod",
    "WaitingPods",
    "Watch",
    "WatchEvent",
    "custom_kind",
]
