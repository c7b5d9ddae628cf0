"""A scheduler on an in-memory cluster, for testing plugins as upstream's plugin tests do
(``pkg/scheduler/testing``): ``Cluster`` holds the objects, schedules them with a profile (your
plugins in its ``registry``), and lets virtual time pass; ``filter_verdicts`` and
``plugin_scores`` run one plugin alone against the node table. Public, as ``kubesched.framework``
is, for plugin packages' tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.pod import pod_info_from
from kubesched.embedded.cluster import EmbeddedCluster
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import FilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin
from kubesched.framework.registry import Registry
from kubesched.framework.status import Code
from kubesched.scheduler.binding import Binding
from kubesched.scheduler.config import SchedulerConfig, parse_config
from kubesched.scheduler.resultstore import NODE_LIMIT

CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def in_tree_registry() -> Registry:
    """The in-tree plugins, to which a test registers its own."""
    from kubesched.scheduler.plugins import in_tree_registry as registry

    return registry()


class Cluster(EmbeddedCluster):
    """The embedded cluster with the helpers a plugin's tests use."""

    def __init__(
        self,
        *objects: dict[str, Any],
        config: dict[str, Any] | SchedulerConfig | None = None,
        registry: Registry | None = None,
        binding: Binding | None = None,
        workloads: bool = False,
        run_seconds: float = 1.0,
        results: bool = False,
        results_node_limit: int = NODE_LIMIT,
        seed: int = 0,
        attach_limit: int = 0,
    ) -> None:
        """``objects``: manifests (Nodes, Pods, …) created in order; ``config``: fields of a
        KubeSchedulerConfiguration (or one parsed); ``registry``: the plugins profiles may name
        (``in_tree_registry()`` plus yours; None: the in-tree ones and the installed packages). ``workloads``: run what
        ``kubesched up`` runs around the scheduler too: the API server's admission, the hollow
        kubelet (pods Running, run-to-completion pods done after ``run_seconds``) and the workload
        controllers with the garbage collector and the namespace controller. ``results``: each
        attempt's per-plugin results written on the pod, as ``kubesched up`` writes them.
        ``attach_limit``: with ``workloads``, the hollow CSI driver's volumes per node (its
        CSINodes), as ``kubesched up --attach-limit``; 0: no CSINodes."""
        super().__init__(
            *objects,
            config=config if isinstance(config, SchedulerConfig) else parse_config({**CONFIG, **(config or {})}),
            registry=registry,
            binding=binding,
            workloads=workloads,
            run_seconds=run_seconds,
            results=results,
            results_node_limit=results_node_limit,
            seed=seed,
            attach_limit=attach_limit,
        )

    def node_of(self, name: str, ns: str = "default") -> str | None:
        return (self.store.get("Pod", ns, name).get("spec") or {}).get("nodeName")

    def events(self, reason: str) -> list[str]:
        return [e["message"] for e in self.store.list("Event")[0] if e.get("reason") == reason]

    # -- one plugin on its own, against the cache (upstream's plugin unit tests) -------------------
    def _plugin(self, name: str) -> Any:
        return self.sched.profiles["default-scheduler"].plugins[name]

    def filter_verdicts(self, plugin: str, pod: dict[str, Any]) -> dict[str, tuple[int, str]]:
        """PreFilter + Filter of ``plugin`` for ``pod``: (code, first reason) per node, (0, "") passing;
        a PreFilter that rejects the pod gives every node its status."""
        pl, info, nodes, state = self._plugin(plugin), pod_info_from(pod), self.sched.node_table(), CycleState()
        st = pl.pre_filter(state, info, nodes)[1] if isinstance(pl, PreFilterPlugin) else None
        if st is not None and not st.is_success() and st.code != Code.SKIP:
            return dict.fromkeys(nodes.names, (int(st.code), st.reasons[0] if st.reasons else ""))
        skipped = st is not None and st.code == Code.SKIP
        v = pl.filter_nodes(state, info, nodes) if isinstance(pl, FilterPlugin) and not skipped else None
        if v is None:
            return dict.fromkeys(nodes.names, (0, ""))
        return {
            n: (int(v.code[i]), v.describe(v.reason_at(i))[0] if v.code[i] else "") for i, n in enumerate(nodes.names)
        }

    def plugin_scores(self, plugin: str, pod: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]] | None:
        """(raw, normalized) scores of ``plugin`` with every node feasible (normalized: the raw ones
        for a plugin without NormalizeScore); None when its PreScore skips. A plugin that is no
        Score plugin is an error naming it."""
        pl, info, nodes, state = self._plugin(plugin), pod_info_from(pod), self.sched.node_table(), CycleState()
        if not isinstance(pl, ScorePlugin):
            raise TypeError(f"plugin {plugin!r} is not a Score plugin")
        rows = np.arange(nodes.n)
        st = pl.pre_score(state, info, nodes, rows) if isinstance(pl, PreScorePlugin) else None
        if st is not None and st.code == Code.SKIP:
            return None
        raw = pl.score_nodes(state, info, nodes, rows)
        norm = pl.normalize_scores(state, info, raw.copy())
        if norm is None:
            norm = raw
        return dict(zip(nodes.names, raw.tolist(), strict=True)), dict(zip(nodes.names, norm.tolist(), strict=True))
