"""The fully defaulted configuration as a KubeSchedulerConfiguration v1 document, what
``kube-scheduler --write-config-to`` writes: every top-level default, the merged multiPoint
plugin list with weights, and each in-tree plugin's args with upstream's defaults filled in
(``pkg/scheduler/apis/config/v1/defaults.go``) under what the file set.

A plugin kubesched did not implement would be left out of the default profile, its args too;
since the volume plugins arrived the default profile is v1.36's in full.
"""

from __future__ import annotations

import copy
from typing import Any

from kubesched.leaderelection.config import format_duration
from kubesched.scheduler.config import API_VERSION, KIND, PluginSet, Profile, SchedulerConfig
from kubesched.scheduler.extender import DEFAULT_TIMEOUT

DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
DEFAULT_ARGS: dict[str, dict[str, Any]] = {
    "DefaultPreemption": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    "InterPodAffinity": {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    "NodeAffinity": {},
    "NodeResourcesBalancedAllocation": {"resources": DEFAULT_RESOURCES},
    "NodeResourcesFit": {"scoringStrategy": {"type": "LeastAllocated", "resources": DEFAULT_RESOURCES}},
    "PodTopologySpread": {"defaultingType": "System"},
    # the shape is defaulted under StorageCapacityScoring (beta, on in v1.37)
    "VolumeBinding": {
        "bindTimeoutSeconds": 600,
        "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}],
    },
}


def _args(name: str, given: dict[str, Any] | None) -> dict[str, Any]:
    """Upstream's defaults for ``name``'s args under what the file set (missing fields only)."""
    out = copy.deepcopy(DEFAULT_ARGS.get(name, {}))
    for key, value in (given or {}).items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "scoringStrategy" and isinstance(value, dict):
            strategy = {**value}
            strategy.setdefault("type", "LeastAllocated")
            strategy.setdefault("resources", copy.deepcopy(DEFAULT_RESOURCES))
            out[key] = strategy
        else:
            out[key] = value
    return {"apiVersion": API_VERSION, "kind": f"{name}Args", **out}


def _plugin_set(ps: PluginSet) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if ps.enabled:
        out["enabled"] = [{"name": p.name, **({"weight": p.weight} if p.weight else {})} for p in ps.enabled]
    if ps.disabled:
        out["disabled"] = [{"name": n} for n in ps.disabled]
    return out


def _profile(p: Profile, in_use: set[str]) -> dict[str, Any]:
    plugins = {ep: _plugin_set(ps) for ep, ps in p.plugins.items()}
    multi = PluginSet([r for r in p.multi_point.enabled if not r.default or r.name in in_use], p.multi_point.disabled)
    plugins["multiPoint"] = _plugin_set(multi)
    names = set(p.plugin_config) | (set(DEFAULT_ARGS) & in_use)
    doc: dict[str, Any] = {
        "schedulerName": p.scheduler_name,
        "plugins": plugins,
        "pluginConfig": [{"name": n, "args": _args(n, p.plugin_config.get(n))} for n in sorted(names)],
    }
    if p.percentage_of_nodes_to_score is not None:
        doc["percentageOfNodesToScore"] = p.percentage_of_nodes_to_score
    return doc


def to_document(cfg: SchedulerConfig, implemented: set[str]) -> dict[str, Any]:
    le, cc = cfg.leader_election, cfg.client_connection
    doc: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "clientConnection": {
            "acceptContentTypes": cc.accept_content_types,
            "burst": cc.burst,
            "contentType": cc.content_type,
            "kubeconfig": cc.kubeconfig,
            "qps": cc.qps,
        },
        "enableContentionProfiling": cfg.enable_contention_profiling,
        "enableProfiling": cfg.enable_profiling,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_duration(le.lease_duration),
            "renewDeadline": format_duration(le.renew_deadline),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
            "retryPeriod": format_duration(le.retry_period),
        },
        "parallelism": cfg.parallelism,
        "percentageOfNodesToScore": cfg.percentage_of_nodes_to_score,
        "podInitialBackoffSeconds": int(cfg.pod_initial_backoff_seconds),
        "podMaxBackoffSeconds": int(cfg.pod_max_backoff_seconds),
        "delayCacheUntilActive": cfg.delay_cache_until_active,
        "profiles": [],
    }
    for p in cfg.profiles:
        in_use = {r.name for r in p.multi_point.enabled if r.name in implemented}
        for ps in p.plugins.values():
            in_use |= {r.name for r in ps.enabled}
        doc["profiles"].append(_profile(p, in_use))
    if cfg.extenders:
        doc["extenders"] = [
            {
                "urlPrefix": e.url_prefix,
                "filterVerb": e.filter_verb,
                "preemptVerb": e.preempt_verb,
                "prioritizeVerb": e.prioritize_verb,
                "weight": e.weight,
                "bindVerb": e.bind_verb,
                "enableHTTPS": e.enable_https,
                "tlsConfig": e.tls or None,
                "httpTimeout": format_duration(e.http_timeout or DEFAULT_TIMEOUT),
                "nodeCacheCapable": e.node_cache_capable,
                "managedResources": e.managed_resources,
                "ignorable": e.ignorable,
            }
            for e in cfg.extenders
        ]
    return doc
