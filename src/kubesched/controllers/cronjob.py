"""The CronJob controller (``pkg/controller/cronjob``, v2): at each time its schedule names (on the
cluster's clock, so a virtual clock runs a day of schedules in no time) a CronJob creates a Job from
its template, named ``<cronjob>-<minutes since the epoch>``, unless suspended, past
``startingDeadlineSeconds``, or forbidden by its concurrency policy (Forbid skips while one runs,
Replace deletes the running ones first); it tracks its active Jobs, the last schedule and the last
success, and deletes finished Jobs past its history limits."""

from __future__ import annotations

import contextlib
import math
from typing import Any

from kubesched.api.cron import next_after, parse_schedule, zone_of
from kubesched.api.errors import ApiError
from kubesched.clock import EPOCH, parse_rfc3339, rfc3339
from kubesched.controllers.base import Controller, owner_reference

SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
MAX_MISSED = 100  # upstream gives up listing missed times past this many (TooManyMissedTimes)
# realJobControl.DeleteJob (pkg/controller/cronjob/injection.go): a Job goes with its pods (batch/v1
# would orphan them by default)
BACKGROUND = "Background"


def job_name(cron_job: str, due: float) -> str:
    """``getJobName``: the CronJob's name and the scheduled time in minutes since the Unix epoch."""
    return f"{cron_job}-{int((EPOCH.timestamp() + due) // 60)}"


class CronJobController(Controller):
    name = "cronjob"
    kind = "CronJob"
    watches = ("Job",)

    def reconcile(self, cj: dict[str, Any]) -> None:
        meta, spec = cj["metadata"], cj.get("spec") or {}
        ns, name = meta.get("namespace") or "default", meta["name"]
        if meta.get("deletionTimestamp"):
            return
        now = self.client.clock.now()
        jobs = [j for j in self.client.list("Job", ns) if _owned_by(j, meta.get("uid"))]
        status = dict(cj.get("status") or {})
        self._track_finished(cj, jobs, status)
        self._clean_up(cj, jobs)
        try:
            schedule = parse_schedule(str(spec.get("schedule") or ""))
            zone = spec.get("timeZone")
            zone_of(zone)
        except Exception as exc:  # stored before validation knew better: say so, retry nothing
            self.recorder.event(cj, "Warning", "UnparseableSchedule", f"unparseable schedule: {exc}")
            return
        since = parse_rfc3339(status.get("lastScheduleTime") or meta.get("creationTimestamp") or rfc3339(now))
        due = self._most_recent(schedule, zone, since, now, cj)
        if due is not None and not spec.get("suspend"):
            deadline = spec.get("startingDeadlineSeconds")
            if isinstance(deadline, int) and now - due > deadline:
                self.recorder.event(
                    cj, "Warning", "MissSchedule", f"Missed scheduled time to start a job: {rfc3339(due)}"
                )
            else:
                self._start(cj, jobs, due, status)
        self._write_status(ns, name, status, cj.get("status") or {})
        following = next_after(schedule, zone, now)
        if not spec.get("suspend") and following != math.inf:  # (a schedule that never fires)
            self.requeue_after((ns, name), following - now)

    def _most_recent(
        self, schedule: str, zone: str | None, since: float, now: float, cj: dict[str, Any]
    ) -> float | None:
        """``mostRecentScheduleTime``: the last scheduled time after ``since`` and not after now."""
        found: float | None = None
        t = since
        for missed in range(MAX_MISSED + 2):
            t = next_after(schedule, zone, t)
            if t > now:
                return found
            found = t
            if missed > MAX_MISSED:
                self.recorder.event(
                    cj,
                    "Warning",
                    "TooManyMissedTimes",
                    "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
                )
                break
        return found

    def _start(self, cj: dict[str, Any], jobs: list[dict[str, Any]], due: float, status: dict[str, Any]) -> None:
        meta, spec = cj["metadata"], cj.get("spec") or {}
        ns = meta.get("namespace") or "default"
        name = job_name(meta["name"], due)
        if any(j["metadata"]["name"] == name for j in jobs):
            return  # already made for this time
        running = [j for j in jobs if not _finished(j)]
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and running:
            self.recorder.event(
                cj,
                "Normal",
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
            )
            return
        if policy == "Replace":
            for j in running:
                with contextlib.suppress(ApiError):
                    self.client.delete("Job", ns, j["metadata"]["name"], propagation=BACKGROUND)
                self.recorder.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {j['metadata']['name']}")
            status["active"] = []
        try:
            created = self.client.create("Job", job_for(cj, due))
        except ApiError as err:
            self.recorder.event(cj, "Warning", "FailedCreate", f"Error creating job: {err}")
            return
        self.recorder.event(cj, "Normal", "SuccessfulCreate", f"Created job {name}")
        active = [a for a in status.get("active") or [] if a.get("name") != name]
        active.append(_reference(created))
        status["active"] = active
        status["lastScheduleTime"] = rfc3339(due)

    def _track_finished(self, cj: dict[str, Any], jobs: list[dict[str, Any]], status: dict[str, Any]) -> None:
        """Finished Jobs leave ``active`` (``SawCompletedJob``); a completed one sets the last success."""
        by_name = {j["metadata"]["name"]: j for j in jobs}
        active = []
        for ref in status.get("active") or []:
            job = by_name.get(ref.get("name"))
            if job is None:
                continue
            if _finished(job):
                kind = _finished(job)
                self.recorder.event(
                    cj, "Normal", "SawCompletedJob", f"Saw completed job: {job['metadata']['name']}, condition: {kind}"
                )
                if kind == "Complete":
                    done = (job.get("status") or {}).get("completionTime")
                    if done and (not status.get("lastSuccessfulTime") or done > status["lastSuccessfulTime"]):
                        status["lastSuccessfulTime"] = done
                continue
            active.append(ref)
        for job in jobs:  # a running Job of ours not listed (the status write was lost): listed again
            if not _finished(job) and all(a.get("name") != job["metadata"]["name"] for a in active):
                active.append(_reference(job))
        status["active"] = active
        if not active:
            status.pop("active")

    def _clean_up(self, cj: dict[str, Any], jobs: list[dict[str, Any]]) -> None:
        """``cleanupFinishedJobs``: the oldest finished Jobs past the history limits are deleted."""
        spec = cj.get("spec") or {}
        ns = cj["metadata"].get("namespace") or "default"
        for kind, limit in (
            ("Complete", spec.get("successfulJobsHistoryLimit", 3)),
            ("Failed", spec.get("failedJobsHistoryLimit", 1)),
        ):
            if not isinstance(limit, int):
                continue
            done = sorted(
                (j for j in jobs if _finished(j) == kind),
                key=lambda j: ((j.get("status") or {}).get("startTime") or "", j["metadata"]["name"]),
            )
            for job in done[: max(0, len(done) - limit)]:
                with contextlib.suppress(ApiError):
                    self.client.delete("Job", ns, job["metadata"]["name"], propagation=BACKGROUND)
                    self.recorder.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {job['metadata']['name']}")

    def _write_status(self, ns: str, name: str, status: dict[str, Any], before: dict[str, Any]) -> None:
        if status == before:
            return
        with contextlib.suppress(ApiError):
            self.client.patch("CronJob", ns, name, lambda o: {**o, "status": status})


def job_for(cj: dict[str, Any], due: float) -> dict[str, Any]:
    """``getJobFromTemplate2``: the Job a CronJob makes for the time ``due``, owned by it."""
    meta, spec = cj["metadata"], cj.get("spec") or {}
    template = spec.get("jobTemplate") or {}
    tmeta = template.get("metadata") or {}
    annotations = {**(tmeta.get("annotations") or {}), SCHEDULED_ANNOTATION: rfc3339(due)}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(meta["name"], due),
            "namespace": meta.get("namespace") or "default",
            "labels": dict(tmeta.get("labels") or {}),
            "annotations": annotations,
            "ownerReferences": [owner_reference(cj)],
        },
        "spec": template.get("spec") or {},
    }


def next_job(cj: dict[str, Any], now: float) -> dict[str, Any] | None:
    """The Job of the CronJob's next run after ``now`` (what a planner asks of it), or None when
    it is suspended or its schedule never fires."""
    spec = cj.get("spec") or {}
    if spec.get("suspend"):
        return None
    due = next_after(parse_schedule(str(spec.get("schedule") or "")), spec.get("timeZone"), now)
    return None if due == math.inf else job_for(cj, due)


def _owned_by(job: dict[str, Any], uid: str | None) -> bool:
    return any(
        r.get("controller") and r.get("uid") == uid for r in (job.get("metadata") or {}).get("ownerReferences") or []
    )


def _finished(job: dict[str, Any]) -> str:
    """``Complete`` or ``Failed`` once the Job has that condition, else ``""``."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return ""


def _reference(job: dict[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    return {
        "kind": "Job",
        "namespace": meta.get("namespace") or "default",
        "name": meta["name"],
        "uid": meta.get("uid"),
        "apiVersion": "batch/v1",
        "resourceVersion": meta.get("resourceVersion"),
    }
