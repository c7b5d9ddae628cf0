"""``kubesched.framework`` is the plugin interface: its names stay (removing one is a breaking
change, made on purpose by editing PUBLIC below and the README), the guide's examples use only
them, and the plugin packages in this repository import nothing else of kubesched."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import kubesched.framework as framework

ROOT = Path(__file__).resolve().parent.parent

PUBLIC = {
    "ADDED", "ASSIGNED_POD", "DELETED", "ENTRY_POINT_GROUP", "MAX_NODE_SCORE", "MIN_NODE_SCORE", "MODIFIED",
    "NODE", "POD", "QUEUE", "QUEUE_SKIP", "UNSCHEDULABLE_POD", "WILDCARD", "ActionType", "AlreadyExists",
    "ApiError", "BadRequest", "BindPlugin", "ClusterClient", "ClusterEvent", "ClusterEventWithHint", "Code",
    "Conflict", "CycleState", "Diagnosis", "EnqueueExtensions", "Extender", "FilterPlugin", "Forbidden",
    "Handle", "InputError", "Invalid", "Listers", "MetricsRecorder", "NodeInfo", "NodeTableView", "NodeVerdicts",
    "Nominator", "NotFound",
    "PerNodeFilterPlugin", "PerNodeScorePlugin", "PermitPlugin", "Plugin", "PluginFactory", "PodInfo",
    "PostBindPlugin", "PostFilterPlugin", "PostFilterResult", "PreBindPlugin", "PreEnqueuePlugin",
    "PreFilterExtensions", "PreFilterPlugin", "PreFilterResult", "PreScorePlugin", "QueueSortPlugin", "QueuedPodInfo",
    "Registry", "ReservePlugin", "ScorePlugin", "SignFragment", "SignPlugin", "Snapshot", "Status",
    "TooManyRequests", "WaitingPod", "WaitingPods", "Watch", "WatchEvent",
}  # fmt: skip


def test_every_public_name_is_there():
    missing = sorted(n for n in PUBLIC if not hasattr(framework, n))
    assert missing == []
    assert set(framework.__all__) >= PUBLIC


def kubesched_imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kubesched."):
            out.add(node.module or "")
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("kubesched.")}
    return {m for m in out if not m.startswith(("kubesched_",))}


def test_plugin_packages_import_only_the_public_modules():
    """Their code imports ``kubesched.framework`` (and the GPU-sharing model, ``kubesched.gpus``); their
    tests may also use ``kubesched.testing``."""
    offenders = {}
    for package in ("examples/plugins", "plugins/gpushare"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "build" in path.parts:
                continue
            allowed: tuple[str, ...] = ("kubesched.framework", "kubesched.gpus")
            if "tests" in path.parts:
                allowed += ("kubesched.testing",)
            bad = {m for m in kubesched_imports(path) if not m.startswith(allowed)}
            if bad:
                offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}


def test_the_plugin_guide_uses_only_public_names():
    """Every import in docs/plugins.md's code names something of ``kubesched.framework`` (or
    ``kubesched.testing``), nothing internal."""
    guide = (ROOT / "docs" / "plugins.md").read_text()
    names, modules = set(), set()
    for block in re.findall(r"```python\n(.*?)```", guide, re.S):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kubesched"):
                modules.add(node.module)
                if node.module == "kubesched.framework":
                    names |= {a.name for a in node.names}
    assert modules == {"kubesched.framework", "kubesched.testing"}
    assert names and names <= set(framework.__all__), sorted(names - set(framework.__all__))


def _guide_cluster():
    """The guide's one-file plugin, then its testing snippet, executed as a reader would: the
    snippet's cluster."""
    guide = (ROOT / "docs" / "plugins.md").read_text()
    complete = guide.split("<!-- complete plugin -->", 1)[1]
    plugin_code = re.search(r"```python\n(.*?)```", complete, re.S).group(1)
    test_code = re.search(r"```python\n(from kubesched\.testing.*?)```", guide, re.S).group(1)
    namespace: dict = {}
    exec(compile(plugin_code, "least_pods.py", "exec"), namespace)
    exec(compile(test_code, "test_least_pods.py", "exec"), namespace)
    return namespace["cluster"]


def test_the_guide_complete_plugin_and_its_test_run():
    """The guide's one-file plugin, then its testing snippet, executed as a reader would."""
    cluster = _guide_cluster()
    assert cluster.node_of("p") == "b"


def test_the_testing_helpers_run_the_guides_plugin_which_has_no_prefilter_prescore_or_normalize():
    """``Cluster.filter_verdicts`` and ``plugin_scores``, which the guide names, on its LeastPods
    (Filter and Score only): the verdicts and the raw scores, the raw ones standing as normalized."""
    cluster = _guide_cluster()
    probe = {"kind": "Pod", "metadata": {"name": "q", "namespace": "default"}, "spec": {"containers": [{"name": "c"}]}}
    assert cluster.filter_verdicts("LeastPods", probe) == {"a": (3, "node(s) in maintenance"), "b": (0, "")}
    raw, normalized = cluster.plugin_scores("LeastPods", probe)
    assert raw == normalized == {"a": 100, "b": 90}  # b holds "p": one of its 10 pods
    with pytest.raises(TypeError, match="'PrioritySort' is not a Score plugin"):
        cluster.plugin_scores("PrioritySort", probe)
