"""The scheduling hot path compiled with mypyc: which modules, and whether they run compiled.

``setup.py`` compiles ``MODULES`` when it can and writes each source's hash beside them
(``MANIFEST``). At ``import kubesched`` the hashes are compared: when a source was edited since
(an editable install keeps the compiled modules in the source tree, where Python would prefer
them to the edited ``.py``), or ``KUBESCHED_PURE_PYTHON`` is set, every module of the list is
loaded from its source instead, all of them together (compiled modules call each other natively).
This module imports nothing of kubesched: setup.py reads the list before anything is built.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importlib.abc alone would cost every `import kubesched` ~15 ms (importlib.resources)
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

MANIFEST = "compiled.json"
MODULES = (
    "kubesched.api.affinity",
    "kubesched.api.pod",
    "kubesched.api.pod_defaults",
    "kubesched.api.quantity",
    "kubesched.api.resources",
    "kubesched.api.selectors",
    "kubesched.api.validation",
    "kubesched.api.volumes",
    "kubesched.api.watch",
    "kubesched.apiserver.registry.strategy",
    "kubesched.client.eventseries",
    "kubesched.client.inprocess",
    "kubesched.clock",
    "kubesched.cluster.admission",
    "kubesched.cluster.event_conversion",
    "kubesched.cluster.store",
    "kubesched.cluster.validation",
    "kubesched.framework.cycle_state",
    "kubesched.framework.diagnosis",
    "kubesched.framework.status",
    "kubesched.gpus.sharing",
    "kubesched.scheduler.binding",
    "kubesched.scheduler.cache",
    "kubesched.scheduler.eventhandlers",
    "kubesched.scheduler.framework.batch",
    "kubesched.scheduler.framework.filter_verdicts",
    "kubesched.scheduler.framework.handle",
    "kubesched.scheduler.framework.point_times",
    "kubesched.scheduler.framework.runtime",
    "kubesched.scheduler.framework.shape_cache",
    "kubesched.scheduler.framework.signatures",
    "kubesched.scheduler.framework.template_memo",
    "kubesched.scheduler.metrics",
    "kubesched.scheduler.nodesearch.columns",
    "kubesched.scheduler.nodesearch.nominated",
    "kubesched.scheduler.nodesearch.outcome",
    "kubesched.scheduler.nodesearch.search",
    "kubesched.scheduler.nodesearch.shapes",
    "kubesched.scheduler.nodesearch.way",
    "kubesched.scheduler.nodetable",
    "kubesched.scheduler.nominator",
    "kubesched.scheduler.parts",
    "kubesched.scheduler.plugins.defaultbinder",
    "kubesched.scheduler.plugins.helper",
    "kubesched.scheduler.plugins.imagelocality",
    "kubesched.scheduler.plugins.interpodaffinity.plugin",
    "kubesched.scheduler.plugins.nodeaffinity",
    "kubesched.scheduler.plugins.nodeports",
    "kubesched.scheduler.plugins.noderesources.balanced_allocation",
    "kubesched.scheduler.plugins.noderesources.fit",
    "kubesched.scheduler.plugins.noderesources.scoring",
    "kubesched.scheduler.plugins.nodeunschedulable",
    "kubesched.scheduler.plugins.nodevolumelimits",
    "kubesched.scheduler.plugins.podtopologyspread.common",
    "kubesched.scheduler.plugins.podtopologyspread.plugin",
    "kubesched.scheduler.plugins.tainttoleration",
    "kubesched.scheduler.plugins.volumebinding.plugin",
    "kubesched.scheduler.plugins.volumerestrictions",
    "kubesched.scheduler.plugins.volumezone",
    "kubesched.scheduler.podtable",
    "kubesched.scheduler.queue",
    "kubesched.scheduler.queue_podgroups",
    "kubesched.scheduler.queued",
    "kubesched.scheduler.schedule_one",
    "kubesched.scheduler.schedule_one_podgroup",
    "kubesched.scheduler.schedule_pod",
    "kubesched.scheduler.scheduler",
)
PACKAGE = Path(__file__).resolve().parent

# what install() found: "compiled", or why the sources run ("pure Python: ...")
state = "pure Python: not compiled"


class SourcesFirst:
    """A meta path finder: the listed modules' ``.py`` files ahead of their compiled modules."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in MODULES:
            return None
        import importlib.util

        return importlib.util.spec_from_file_location(fullname, _source(fullname))


def _source(module: str) -> Path:
    return PACKAGE.parent.joinpath(*module.split(".")).with_suffix(".py")


def _compiled_present() -> bool:
    runtime = _source(MODULES[0])
    return any(runtime.parent.glob(runtime.stem + ".*.so")) or any(runtime.parent.glob(runtime.stem + ".*.pyd"))


def edited(digests: dict[str, str]) -> list[str]:
    """The modules whose source no longer has the hash it was compiled from."""
    import hashlib

    return [m for m in MODULES if digests.get(m) != hashlib.sha256(_source(m).read_bytes()).hexdigest()]


def install() -> None:
    """Decide, once, whether the compiled modules may load (see the module's docstring)."""
    global state
    if not _compiled_present():
        return
    manifest = PACKAGE / MANIFEST
    if os.environ.get("KUBESCHED_PURE_PYTHON"):
        state = "pure Python: KUBESCHED_PURE_PYTHON is set"
    elif not manifest.exists():
        state = f"pure Python: compiled modules without {MANIFEST} (not built by setup.py)"
    else:
        import json

        try:
            digests = json.loads(manifest.read_text())
        except (OSError, ValueError):
            digests = {}
        changed = edited(digests)
        if not changed:
            state = "compiled"
            return
        state = f"pure Python: {_source(changed[0]).relative_to(PACKAGE.parent)} changed since it was compiled"
    sys.meta_path.insert(0, SourcesFirst())
