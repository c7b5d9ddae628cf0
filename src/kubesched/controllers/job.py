"""The Job controller (``pkg/controller/job``): up to ``parallelism`` pods at a time until
``completions`` have succeeded (NonIndexed, or Indexed with one pod per completion index),
finished pods counted through the ``batch.kubernetes.io/job-tracking`` finalizer, a Job failed
once more than ``backoffLimit`` pods failed or past ``activeDeadlineSeconds``, and the
conditions of v1.36: SuccessCriteriaMet / FailureTarget first, Complete / Failed when no pod is
left running, so ``kubectl wait --for=condition=complete`` returns. A pod whose Job is gone (or
finished) loses the tracking finalizer (``syncOrphanPod``), so deleting a Job never leaves its
pods Terminating."""

from __future__ import annotations

import contextlib
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.watch import DELETED, WatchEvent
from kubesched.clock import parse_rfc3339, rfc3339
from kubesched.controllers.base import (
    Controller,
    controller_of,
    is_active,
    is_ready,
    is_terminating,
    key_of,
    pod_from_template,
    write_status,
)

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
COMPLETED = ("CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE = ("DeadlineExceeded", "Job was active longer than specified deadline")


def _finished_ok(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Succeeded"


def _failed(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Failed"


def _index(pod: dict[str, Any]) -> int | None:
    ann = ((pod.get("metadata") or {}).get("annotations") or {}).get(COMPLETION_INDEX)
    try:
        return int(ann) if ann is not None else None
    except ValueError:
        return None


def _condition(status: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next(
        (c for c in status.get("conditions") or [] if c.get("type") == type_ and c.get("status") == "True"), None
    )


def _ranges(indexes: set[int]) -> str:
    """``completedIndexes`` as ``orderedIntervals.String`` writes it: "1,3-5,7", a run of two
    written "1,2"."""
    runs: list[list[int]] = []
    for i in sorted(indexes):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a},{b}" if b == a + 1 else f"{a}-{b}" for a, b in runs)


class JobController(Controller):
    name = "job"
    kind = "Job"
    watches = ("Pod",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._orphans: dict[tuple[str, str], None] = {}  # the orphan pod queue, by pod key
        for pod in self.client.list("Pod"):  # after a restart: pods whose Job went meanwhile
            if self._orphaned(pod):
                self._orphans[key_of(pod)] = None

    def on_event(self, ev: WatchEvent) -> None:
        """``deleteJob`` queues the deleted Job's pods that hold the finalizer; a pod event of a
        pod whose Job is gone queues that pod (``updatePod``/``deletePod``)."""
        super().on_event(ev)
        if ev.kind == "Job" and ev.type == DELETED:
            for pod in self.index.owned("Pod", str(ev.obj["metadata"].get("uid") or "")):
                if TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or []):
                    self._orphans[key_of(pod)] = None
        elif ev.kind == "Pod" and ev.type != DELETED and self._orphaned(ev.obj):
            self._orphans[key_of(ev.obj)] = None

    def run(self) -> None:
        keys, self._orphans = list(self._orphans), {}
        for key in keys:
            self._retries.attempt(("orphan", key), f"Pod {key[0]}/{key[1]}", self._sync_orphan)
        super().run()

    def _due(self, key: Any) -> None:
        if isinstance(key[1], tuple):  # ("orphan", pod key), not a Job's (namespace, name)
            self._orphans[key[1]] = None
        else:
            super()._due(key)

    def _orphaned(self, pod: dict[str, Any]) -> bool:
        """Holds the finalizer while its Job is gone, is another Job of that name, or is finished."""
        if TRACKING_FINALIZER not in ((pod.get("metadata") or {}).get("finalizers") or []):
            return False
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != "Job":
            return True
        job = self.client.get("Job", pod["metadata"].get("namespace") or "", str(ref.get("name") or ""))
        if job is None or job["metadata"].get("uid") != ref.get("uid"):
            return True
        conditions = (job.get("status") or {}).get("conditions") or []
        return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in conditions)

    def _sync_orphan(self, key: tuple[str, tuple[str, str]]) -> None:
        pod = self.client.get("Pod", *key[1])
        if pod is not None and self._orphaned(pod):
            self._release(pod)

    def reconcile(self, job: dict[str, Any]) -> None:
        meta, spec = job["metadata"], job.get("spec") or {}
        status = dict(job.get("status") or {})
        pods = self.index.owned("Pod", meta["uid"])
        now_s = self.client.clock.now()
        now = rfc3339(now_s)
        # count the finished pods not yet counted (those still holding the tracking finalizer)
        succeeded, failed = int(status.get("succeeded") or 0), int(status.get("failed") or 0)
        indexes = self._completed_indexes(status)
        for p in pods:
            fins = (p.get("metadata") or {}).get("finalizers") or []
            if TRACKING_FINALIZER not in fins:
                continue
            if _finished_ok(p):
                succeeded += 1
                if (i := _index(p)) is not None:
                    indexes.add(i)
            elif _failed(p) or (is_terminating(p) and not _finished_ok(p)):
                failed += 1
            else:
                continue
            self._release(p)
        active = [p for p in pods if is_active(p)]
        terminating = [p for p in pods if is_terminating(p) and not (_finished_ok(p) or _failed(p))]
        completions = spec.get("completions")
        parallelism = int(spec.get("parallelism", 1))
        indexed = spec.get("completionMode") == "Indexed"
        status.setdefault("startTime", now)
        finished = _condition(status, "Complete") or _condition(status, "Failed")
        target = _condition(status, "SuccessCriteriaMet") or _condition(status, "FailureTarget")
        if finished is None and target is None:
            if indexed and completions is not None:
                done = len(indexes) >= int(completions)
            elif completions is not None:
                done = succeeded >= int(completions)
            else:
                done = succeeded > 0 and not active
            if done:
                target = self._add(status, "SuccessCriteriaMet", *COMPLETED, now)
            elif failed > int(spec.get("backoffLimit", 6)):
                target = self._add(status, "FailureTarget", *BACKOFF, now)
            elif spec.get("activeDeadlineSeconds") is not None:
                due = parse_rfc3339(status["startTime"]) + int(spec["activeDeadlineSeconds"])
                if now_s >= due:
                    target = self._add(status, "FailureTarget", *DEADLINE, now)
                else:
                    self.requeue_after(key_of(job), due - now_s)
        if finished is None and target is not None:
            for p in active:  # the lingering pods go
                with contextlib.suppress(ApiError):
                    self.client.delete("Pod", *key_of(p), uid=p["metadata"]["uid"])
            if not active and not terminating:
                if target["type"] == "SuccessCriteriaMet":
                    self._add(status, "Complete", *COMPLETED, now)
                    status["completionTime"] = now
                    self.recorder.event(job, "Normal", "Completed", "Job completed")
                else:
                    self._add(status, "Failed", target["reason"], target["message"], now)
                    self.recorder.event(job, "Warning", target["reason"], target["message"])
        elif finished is None and not spec.get("suspend") and not meta.get("deletionTimestamp"):
            self._manage(job, active, succeeded, indexes, parallelism, completions, indexed)
            active = [p for p in self.index.owned("Pod", meta["uid"]) if is_active(p)]
        status.update(
            active=len(active),
            ready=sum(1 for p in active if is_ready(p)),
            succeeded=succeeded,
            failed=failed,
            terminating=len(terminating),
        )
        if indexed:
            status["completedIndexes"] = _ranges(indexes)
        status.setdefault("uncountedTerminatedPods", {})
        for k in ("active", "succeeded", "failed"):
            if not status.get(k):
                status.pop(k, None)
        write_status(self.client, self.kind, job, status)

    @staticmethod
    def _completed_indexes(status: dict[str, Any]) -> set[int]:
        out: set[int] = set()
        for part in (status.get("completedIndexes") or "").split(","):
            if not part:
                continue
            a, _, b = part.partition("-")
            out.update(range(int(a), int(b or a) + 1))
        return out

    @staticmethod
    def _add(status: dict[str, Any], type_: str, reason: str, message: str, now: str) -> dict[str, Any]:
        cond = {
            "type": type_,
            "status": "True",
            "lastProbeTime": now,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }
        status["conditions"] = [*(status.get("conditions") or []), cond]
        return cond

    def _release(self, pod: dict[str, Any]) -> None:
        def put(o: dict[str, Any]) -> dict[str, Any]:
            fins = [f for f in o["metadata"].get("finalizers") or [] if f != TRACKING_FINALIZER]
            return {**o, "metadata": {**o["metadata"], "finalizers": fins}}

        with contextlib.suppress(ApiError):
            self.client.patch("Pod", *key_of(pod), put)

    def _manage(
        self,
        job: dict[str, Any],
        active: list[dict[str, Any]],
        succeeded: int,
        indexes: set[int],
        parallelism: int,
        completions: Any,
        indexed: bool,
    ) -> None:
        """``manageJob``: create pods up to the wanted number, delete the surplus."""
        if completions is None:
            want = parallelism if succeeded == 0 else 0
        else:
            left = int(completions) - (len(indexes) if indexed else succeeded)
            want = max(0, min(parallelism, left))
        if len(active) > want:
            for p in sorted(active, key=lambda p: (bool((p.get("spec") or {}).get("nodeName")), is_ready(p)))[
                : len(active) - want
            ]:
                with contextlib.suppress(ApiError):
                    self.client.delete("Pod", *key_of(p), uid=p["metadata"]["uid"])
            return
        template = (job.get("spec") or {}).get("template") or {}
        name = job["metadata"]["name"]
        busy = {_index(p) for p in active}
        free = [i for i in range(int(completions or 0)) if i not in indexes and i not in busy] if indexed else []
        for n in range(want - len(active)):
            pod = pod_from_template(template, job)
            pod["metadata"]["finalizers"] = [*pod["metadata"].get("finalizers", []), TRACKING_FINALIZER]
            if indexed:
                if n >= len(free):
                    break
                i = free[n]
                pod["metadata"]["generateName"] = f"{name}-{i}-"
                pod["metadata"]["annotations"] = {**pod["metadata"].get("annotations", {}), COMPLETION_INDEX: str(i)}
                pod["metadata"]["labels"] = {**pod["metadata"]["labels"], COMPLETION_INDEX: str(i)}
                pod["spec"] = {**pod["spec"], "hostname": f"{name}-{i}"}
            if self.create_pod(job, pod) is None:
                return
