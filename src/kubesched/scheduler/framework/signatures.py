"""Pod signatures: Opportunistic Batching's ``SignPod`` (``framework/runtime/batch.go``,
``computeBatchablePlugins``) and the shape cache's pod shapes (kubesched's own), each from the
fragments the profile's plugins give."""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from typing import Any

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import Plugin, SignPlugin
from kubesched.scheduler.framework.batch import PodSignature
from kubesched.scheduler.framework.shape_cache import ShapePlugin
from kubesched.scheduler.framework.template_memo import Templates

_FRAMEWORK_IDS = itertools.count()


class PodSigner:
    """A profile's signers: ``signers`` sign a pod for the batch (none when ``unsigned`` names a
    plugin that cannot); ``shape_static`` and ``shape_dynamic`` give its shape for the shape
    cache (None when some plugin offers neither). ``extenders``: the scheduler has some (no
    signature, no shape)."""

    signers: list[SignPlugin]
    unsigned: list[str]
    shape_static: list[SignPlugin] | None
    shape_dynamic: list[ShapePlugin] | None

    def __init__(self, points: dict[str, list[Plugin]], templates: Templates, extenders: bool) -> None:
        self.signers, self.unsigned = self._batchable_plugins(points)
        shapes = self._shape_plugins(points)
        self.shape_static = shapes[0]
        self.shape_dynamic = shapes[1]
        self.templates = templates
        self.extenders = extenders
        # where a pod keeps this profile's signature of it (a restarted profile's is new)
        self._sign_key = f"kubesched.signature/{next(_FRAMEWORK_IDS)}"
        # the template of the last pod whose signatures the shape cache took, and them
        self._shape_last: tuple[int, tuple[Any, ...]] | None = None

    @staticmethod
    def _batchable_plugins(points: dict[str, list[Plugin]]) -> tuple[list[SignPlugin], list[str]]:
        """``computeBatchablePlugins``: the PreFilter, Filter, PreScore and Score plugins sign a
        pod; one that cannot (no ``sign_pod``) turns signatures off for the profile. Those whose
        signing may refuse are asked first: any refusal gives no signature, whatever the order."""
        signers: dict[str, SignPlugin] = {}
        unsigned: list[str] = []
        for ep in ("preFilter", "filter", "preScore", "score"):
            for p in points[ep]:
                if p.name in signers or p.name in unsigned:
                    continue
                if isinstance(p, SignPlugin) or callable(getattr(p, "sign_pod", None)):
                    signers[p.name] = p  # type: ignore[assignment]
                else:
                    unsigned.append(p.name)
        ordered = sorted(signers.values(), key=lambda p: not getattr(p, "sign_may_refuse", True))
        return ordered, unsigned

    def sign_pod(self, pod: PodInfo) -> PodSignature | None:
        """``SignPod``: the scheduler name and every signer's fragments (a later key replaces an
        earlier one, as in upstream's map); None when a plugin refuses, a plugin cannot sign, or
        the scheduler has extenders."""
        if self.unsigned or self.extenders:
            return None
        # a signer reads the pod alone: the signature is kept with this version of the pod
        cached = pod.extra.get(self._sign_key)
        if cached is not None and cached[0] is pod.obj:
            return cached[1]
        signature = self._sign(pod)
        pod.extra[self._sign_key] = (pod.obj, signature)
        return signature

    def _sign(self, pod: PodInfo) -> PodSignature | None:
        parts: dict[str, Any] = {"SchedulerName": pod.scheduler_name}
        for p in self.signers:
            fragments, st = p.sign_pod(pod)
            if st is not None and not st.is_success():
                return None
            for f in fragments:
                parts[f.key] = f.value
        return tuple(sorted(parts.items()))

    @staticmethod
    def _shape_plugins(
        points: dict[str, list[Plugin]],
    ) -> tuple[list[SignPlugin], list[ShapePlugin]] | tuple[None, None]:
        """The plugins the shape cache asks: the signature of every ``rows_only`` plugin and
        ``shape_pod`` where a plugin has it; (None, None) when some PreFilter, Filter, PreScore
        or Score plugin offers neither (the profile then never uses the cache)."""
        static: dict[str, SignPlugin] = {}
        dynamic: dict[str, ShapePlugin] = {}
        for ep in ("preFilter", "filter", "preScore", "score"):
            for p in points[ep]:
                rows_only = getattr(type(p), "rows_only", False) and callable(getattr(p, "sign_pod", None))
                if rows_only:
                    static[p.name] = p  # type: ignore[assignment]
                if callable(getattr(p, "shape_pod", None)):
                    dynamic[p.name] = p  # type: ignore[assignment]
                elif not rows_only:
                    return None, None
        for p in points["score"]:
            if not p.scores_bounded:  # type: ignore[attr-defined]  # the full path checks each cycle's scores; keep it
                return None, None
        return list(static.values()), list(dynamic.values())

    def shape_of(self, state: CycleState, pod: PodInfo) -> Hashable | None:
        """The pod's shape for the shape cache, after this cycle's PreFilter: the signatures of
        the ``rows_only`` plugins and every ``shape_pod``'s fragments; None when a plugin's
        results for this pod read more than each node's own row. The signatures are taken again
        only for a pod of another template than the previous pod's (template_memo.Templates)."""
        if self.shape_static is None or self.shape_dynamic is None or self.extenders:
            return None
        parts: list[Any] = []
        for p in self.shape_dynamic:
            fragments, st = p.shape_pod(state, pod)
            if st is not None and not st.is_success():
                return None
            parts.extend(fragments)
        template = self.templates.of(pod)
        last = self._shape_last
        if last is not None and last[0] == template:
            static = last[1]
        else:
            found: list[Any] = []
            for signer in self.shape_static:
                fragments, st = signer.sign_pod(pod)
                if st is not None and not st.is_success():
                    found = [None]
                    break
                found.extend(fragments)
            static = tuple(found)
            self._shape_last = (template, static)
        if static == (None,):
            return None
        return (static, *parts) if parts else static
