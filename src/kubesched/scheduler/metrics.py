"""The scheduler's Prometheus metrics, with upstream's names, labels, help and buckets
(``pkg/scheduler/metrics/metrics.go``), exported through prometheus_client.

One ``SchedulerMetrics`` per scheduler, with its own registry, so that simulations in one process
do not mix. Observations are cheap on the hot path: a histogram buffers values and folds them
into its buckets in numpy batches; gauges of the queue and of unschedulable pods are read from
the queue when scraped. On the virtual clock, durations are wall time spent and the pod
scheduling SLI is virtual time, as a live scheduler would have seen it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from kubesched.framework.interface import NodeVerdicts
from kubesched.framework.status import Code, code_name
from kubesched.scheduler.framework.point_times import POINTS, PointTimes

PLUGIN_METRICS_SAMPLE_PERCENT = 10  # pluginMetricsSamplePercent in framework/runtime
MAX_ATTEMPTS_LABEL = 15  # the SLI's attempts label stops at "15+"
FOLD_EVERY = 4096  # observations buffered before they are folded into buckets: bounded memory
FOLD_CYCLES = 256  # cycles between folds of the extension points' buffers (a few calls each a cycle)


# each metric's stability level (``pkg/scheduler/metrics/metrics.go``): component-base writes it at
# the start of the help, ``[STABLE] Number of...``
STABILITY = {
    "scheduler_schedule_attempts_total": "STABLE",
    "scheduler_scheduling_attempt_duration_seconds": "STABLE",
    "scheduler_scheduling_algorithm_duration_seconds": "BETA",
    "scheduler_preemption_victims": "STABLE",
    "scheduler_preemption_attempts_total": "STABLE",
    "scheduler_pending_pods": "STABLE",
    "scheduler_pod_scheduling_sli_duration_seconds": "BETA",
    "scheduler_pod_scheduling_attempts": "STABLE",
    "scheduler_framework_extension_point_duration_seconds": "STABLE",
    "scheduler_plugin_execution_duration_seconds": "BETA",
    "scheduler_queue_incoming_pods_total": "STABLE",
    "scheduler_batch_attempts_total": "ALPHA",
    "scheduler_batch_cache_flushed_total": "ALPHA",
    "scheduler_podgroup_schedule_attempts_total": "ALPHA",
    "scheduler_podgroup_scheduling_attempt_duration_seconds": "ALPHA",
    "scheduler_unschedulable_pods": "BETA",
    "scheduler_cache_size": "ALPHA",
}


def annotated(name: str, doc: str) -> str:
    """The help as component-base writes it: the stability level first."""
    return f"[{STABILITY.get(name, 'ALPHA')}] {doc}"


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """``metrics.ExponentialBuckets``."""
    return [start * factor**i for i in range(count)]


class Histogram:
    """One labelled series: bucket counts, sum and count, fed in batches."""

    __slots__ = ("_buf", "bounds", "count", "counts", "total")

    def __init__(self, bounds: np.ndarray) -> None:
        self.bounds = bounds
        self.counts = np.zeros(len(bounds) + 1, np.int64)  # the last: above every bound (+Inf only)
        self.total = 0.0
        self.count = 0
        self._buf: list[float] = []

    def observe(self, value: float) -> None:
        self._buf.append(value)
        if len(self._buf) >= FOLD_EVERY:
            self.fold()

    def fold(self) -> None:
        if not self._buf:
            return
        n = len(self._buf)
        values = np.asarray(self._buf[:n], np.float64)
        del self._buf[:n]  # the same list (callers hold it); what another thread added since stays
        # Prometheus buckets are upper bounds, inclusive (le)
        self.counts += np.bincount(np.searchsorted(self.bounds, values, side="left"), minlength=len(self.counts))
        self.total += float(values.sum())
        self.count += len(values)

    def values(self) -> list[int]:
        """Every observation so far, bucketed: for percentiles in reports."""
        self.fold()
        return self.counts.tolist()


class HistogramVec:
    def __init__(self, name: str, doc: str, labels: Sequence[str], buckets: Sequence[float]) -> None:
        self.name, self.doc, self.labels = name, annotated(name, doc), tuple(labels)
        self.bounds = np.asarray(buckets, np.float64)
        self.series: dict[tuple[str, ...], Histogram] = {}

    def labels_(self, *values: str) -> Histogram:
        h = self.series.get(values)
        if h is None:
            h = self.series[values] = Histogram(self.bounds)
        return h

    def observe(self, value: float, *labels: str) -> None:
        h = self.series.get(labels)
        if h is None:
            h = self.series[labels] = Histogram(self.bounds)
        buf = h._buf
        buf.append(value)
        if len(buf) >= FOLD_EVERY:
            h.fold()

    def collect(self) -> Metric:
        names, order = _sorted_labels(self.labels)  # Go's client orders label names
        fam = HistogramMetricFamily(self.name, self.doc, labels=names)
        for labels, h in sorted(list(self.series.items())):
            labels = tuple(labels[i] for i in order)
            h.fold()
            if h.count == 0:
                continue  # pre-made for speed, never observed: upstream would not have the series
            cum = np.cumsum(h.counts)
            buckets = [(_le(b), float(c)) for b, c in zip(self.bounds.tolist(), cum[:-1].tolist(), strict=True)]
            buckets.append(("+Inf", float(cum[-1])))
            fam.add_metric(list(labels), buckets, h.total)
        return fam

    def quantile(self, q: float, *labels: str) -> float | None:
        """The q-quantile of a series, interpolated in its bucket as Prometheus' histogram_quantile does."""
        h = self.series.get(labels)
        if h is None:
            return None
        h.fold()
        if h.count == 0:
            return None
        rank = q * h.count
        cum = np.cumsum(h.counts)
        i = int(np.searchsorted(cum, rank, side="left"))
        if i >= len(self.bounds):
            return float(self.bounds[-1])
        lo = 0.0 if i == 0 else float(self.bounds[i - 1])
        before = 0.0 if i == 0 else float(cum[i - 1])
        inside = float(h.counts[i]) or 1.0
        return lo + (float(self.bounds[i]) - lo) * (rank - before) / inside


def _sorted_labels(labels: Sequence[str]) -> tuple[list[str], list[int]]:
    order = sorted(range(len(labels)), key=lambda i: labels[i])
    return [labels[i] for i in order], order


def _le(b: float) -> str:
    """A bucket bound as client_golang writes it (shortest form, no ".0" on whole numbers)."""
    text = repr(float(b))
    return text[:-2] if text.endswith(".0") else text


class CounterVec:
    def __init__(self, name: str, doc: str, labels: Sequence[str]) -> None:
        self.name, self.doc, self.labels = name, annotated(name, doc), tuple(labels)
        self.series: dict[tuple[str, ...], float] = {}

    def inc(self, *labels: str, by: float = 1.0) -> None:
        self.series[labels] = self.series.get(labels, 0.0) + by

    def collect(self) -> Metric:
        # prometheus_client adds the _total suffix to a counter family's samples
        names, order = _sorted_labels(self.labels)
        fam = CounterMetricFamily(self.name.removesuffix("_total"), self.doc, labels=names)
        for labels, v in sorted(list(self.series.items())):
            fam.add_metric([labels[i] for i in order], v)
        return fam


@dataclass(slots=True)
class Stats:
    """The scheduler's tallies of its attempts, kept by the same calls that count
    ``scheduler_schedule_attempts_total`` (the benchmarks and ``simulate`` read them)."""

    attempts: int = 0
    scheduled: int = 0
    unschedulable: int = 0
    errors: int = 0
    wall_seconds: float = 0.0


class SchedulerMetrics(Collector):
    """The metrics kube-scheduler registers by default (``metricsList``), those that apply here."""

    def __init__(
        self,
        seed: int = 0,
        *,
        pending: Callable[[], dict[str, int]] | None = None,
        unschedulable: Callable[[], dict[tuple[str, str], int]] | None = None,
        cache: Callable[[], dict[str, int]] | None = None,
    ) -> None:
        """``pending``, ``unschedulable``, ``cache``: the gauges' sources, read when scraped (the
        queue's counts, its unschedulable pods by plugin, the cache's counts)."""
        self.stats = Stats()  # one tally: the counters below and the scheduler's own figures
        self.schedule_attempts = CounterVec(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
        )
        self.attempt_duration = HistogramVec(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            exponential_buckets(0.001, 2, 15),
        )
        self.algorithm_duration = HistogramVec(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            [],
            exponential_buckets(0.001, 2, 15),
        )
        self.preemption_victims = HistogramVec(
            "scheduler_preemption_victims", "Number of selected preemption victims", [], exponential_buckets(1, 2, 7)
        )
        self.preemption_attempts = CounterVec(
            "scheduler_preemption_attempts_total", "Total preemption attempts in the cluster till now", []
        )
        self.sli_duration = HistogramVec(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might "
            "involve multiple scheduling attempts.",
            ["attempts"],
            exponential_buckets(0.01, 2, 20),
        )
        self.pod_attempts = HistogramVec(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            [],
            exponential_buckets(1, 2, 5),
        )
        self.extension_point_duration = HistogramVec(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            exponential_buckets(0.0001, 2, 12),
        )
        self.plugin_duration = HistogramVec(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            exponential_buckets(0.00001, 1.5, 20),
        )
        self.queue_incoming = CounterVec(
            "scheduler_queue_incoming_pods_total",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
        )
        # Opportunistic Batching (metrics.go BatchAttemptStats / BatchCacheFlushed, ALPHA)
        self.batch_attempts = CounterVec(
            "scheduler_batch_attempts_total",
            "Counts of results when we attempt to use batching.",
            ["profile", "result"],
        )
        self.batch_cache_flushed = CounterVec(
            "scheduler_batch_cache_flushed_total", "Counts of cache flushes by reason.", ["profile", "reason"]
        )
        # GenericWorkload's (registered only with the gate, as upstream registers them)
        self.pod_group_attempts = CounterVec(
            "scheduler_podgroup_schedule_attempts_total",
            "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could not "
            "be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
        )
        self.pod_group_attempt_duration = HistogramVec(
            "scheduler_podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds",
            ["result", "profile"],
            exponential_buckets(0.001, 2, 15),
        )
        self.pending_source = pending
        self.unschedulable_source = unschedulable
        self.cache_source = cache
        self.sampling = False  # this cycle's plugins are timed (10 % of cycles, as upstream samples)
        self._rng = random.Random(seed)
        self._cycles = 0
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def start_cycle(self) -> None:
        """A scheduling cycle begins: whether its plugins are timed (a sample of the cycles), and
        now and then the extension points' buffered durations folded into their buckets."""
        self._cycles += 1
        if not self._cycles % FOLD_CYCLES:
            for h in self.extension_point_duration.series.values():
                h.fold()
        self.sampling = self._rng.random() * 100 < PLUGIN_METRICS_SAMPLE_PERCENT

    def pod_scheduled(self, profile: str, seconds: float) -> None:
        self.stats.scheduled += 1
        self.schedule_attempts.inc("scheduled", profile)
        self.attempt_duration.observe(seconds, "scheduled", profile)

    def pod_unschedulable(self, profile: str, seconds: float) -> None:
        self.stats.unschedulable += 1
        self.schedule_attempts.inc("unschedulable", profile)
        self.attempt_duration.observe(seconds, "unschedulable", profile)

    def pod_schedule_error(self, profile: str, seconds: float) -> None:
        self.stats.errors += 1
        self.schedule_attempts.inc("error", profile)
        self.attempt_duration.observe(seconds, "error", profile)

    def pod_group_attempt(self, result: str, profile: str, seconds: float) -> None:
        """``observePodGroupScheduleAttemptAndLatency``."""
        self.pod_group_attempts.inc(result, profile)
        self.pod_group_attempt_duration.observe(seconds, result, profile)

    def pod_bound(self, attempts: int, sli_seconds: float) -> None:
        label = str(attempts) if attempts < MAX_ATTEMPTS_LABEL else f"{MAX_ATTEMPTS_LABEL}+"
        self.sli_duration.observe(sli_seconds, label)
        self.pod_attempts.observe(attempts)

    def histograms(self) -> list[HistogramVec]:
        return [
            self.attempt_duration,
            self.algorithm_duration,
            self.preemption_victims,
            self.sli_duration,
            self.pod_attempts,
            self.extension_point_duration,
            self.plugin_duration,
        ]

    def fold(self) -> None:
        """Fold every buffered observation into its buckets."""
        for vec in self.histograms():
            for h in list(vec.series.values()):
                h.fold()

    def collect(self) -> Iterator[Metric]:
        yield self.schedule_attempts.collect()
        yield self.preemption_attempts.collect()
        yield self.queue_incoming.collect()
        for vec in (self.batch_attempts, self.batch_cache_flushed, self.pod_group_attempts):
            if vec.series:  # client_golang exposes no family for a vector without series
                yield vec.collect()
        for h in self.histograms():
            yield h.collect()
        if self.pod_group_attempt_duration.series:
            yield self.pod_group_attempt_duration.collect()
        pending = GaugeMetricFamily(
            "scheduler_pending_pods",
            annotated(
                "scheduler_pending_pods",
                "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means "
                "number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the "
                "scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the "
                "scheduler never attempted to schedule because they are gated.",
            ),
            labels=["queue"],
        )
        for queue, n in sorted((self.pending_source() if self.pending_source else {}).items()):
            pending.add_metric([queue], n)
        yield pending
        unschedulable = GaugeMetricFamily(
            "scheduler_unschedulable_pods",
            annotated(
                "scheduler_unschedulable_pods",
                "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for "
                "all plugins that caused it to not schedule and so this metric have meaning only when broken down "
                "by plugin.",
            ),
            labels=["plugin", "profile"],
        )  # (already in label-name order)
        for (plugin, profile), n in sorted((self.unschedulable_source() if self.unschedulable_source else {}).items()):
            unschedulable.add_metric([plugin, profile], n)
        yield unschedulable
        cache = GaugeMetricFamily(
            "scheduler_cache_size",
            annotated(
                "scheduler_cache_size",
                "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ),
            labels=["type"],
        )
        for kind, n in sorted((self.cache_source() if self.cache_source else {}).items()):
            cache.add_metric([kind], n)
        yield cache

    def summary(self) -> dict[str, Any]:
        """The figures a report shows: attempts by result, latency percentiles, preemption, time
        spent per extension point."""
        quantiles = (0.5, 0.9, 0.99)
        attempts = {"/".join(k): v for k, v in sorted(self.schedule_attempts.series.items())}
        durations = {
            "/".join(labels): {f"p{round(q * 100)}": self.attempt_duration.quantile(q, *labels) for q in quantiles}
            for labels in sorted(self.attempt_duration.series)
        }
        sli = HistogramVec("", "", [], self.sli_duration.bounds.tolist())
        merged = sli.labels_()
        for h in self.sli_duration.series.values():
            h.fold()
            merged.counts += h.counts
            merged.count += h.count
            merged.total += h.total
        victims = self.preemption_victims.series.get(())
        if victims is not None:
            victims.fold()
        points: dict[str, dict[str, float]] = {}
        for (point, _status, _profile), h in sorted(self.extension_point_duration.series.items()):
            h.fold()
            entry = points.setdefault(point, {"count": 0, "seconds": 0.0})
            entry["count"] += h.count
            entry["seconds"] += h.total
        out: dict[str, Any] = {
            "scheduleAttempts": attempts,
            "attemptDurationSeconds": durations,
            "podSchedulingSLISeconds": {f"p{round(q * 100)}": sli.quantile(q) for q in quantiles},
            "preemptionAttempts": self.preemption_attempts.series.get((), 0.0),
            "preemptionVictims": 0.0 if victims is None else victims.total,
            "extensionPoints": points,
        }
        # Opportunistic Batching, where a profile signs pods: "<result or reason>/<profile>"
        for key, vec in (("batchAttempts", self.batch_attempts), ("batchCacheFlushed", self.batch_cache_flushed)):
            if vec.series:
                out[key] = {f"{label}/{profile}": v for (profile, label), v in sorted(vec.series.items())}
        return out


def _label(st: Any) -> str:
    return "Success" if st is None else str(st.code)


def _status_of(ret: Any) -> str:
    """The status label (``Code.String``) of what a plugin method returned. A Filter plugin's
    verdicts over every node are one call here, where upstream times each node's call: labelled
    Success when every node passed, else Error if any node errored, else the code of the rejections
    (the more final one when both kinds are present)."""
    if isinstance(ret, NodeVerdicts):
        codes = ret.code
        if not np.count_nonzero(codes):
            return "Success"
        if np.count_nonzero(codes == int(Code.ERROR)):  # (an IntEnum is numpy's slow path)
            return str(Code.ERROR)
        return code_name(int(codes.max()))
    if isinstance(ret, tuple):
        ret = next((x for x in ret if hasattr(x, "code") and hasattr(x, "reasons")), None)
    return _label(ret) if ret is None or hasattr(ret, "code") else "Success"


def framework_recorders(
    metrics: SchedulerMetrics, profile: str
) -> tuple[PointTimes, Callable[[str, str, tuple[Any, ...], Any, float], None]]:
    """What a profile's framework records into, given to it as it is built (``WithMetricsRecorder``):
    its extension points' times (every call, which the framework times itself:
    ``framework/point_times.py``) and its plugins' in sampled cycles, as ``frameworkImpl``
    records ``framework_extension_point_duration_seconds`` and
    ``plugin_execution_duration_seconds``."""
    vec = metrics.extension_point_duration
    series, bounds = vec.series, vec.bounds
    # a Success, the common case, is appended to its series' buffer directly; the metrics fold
    # the buffers every so many cycles (``start_cycle``) and when read
    ok = {p: series.setdefault((p, "Success", profile), Histogram(bounds))._buf for p in POINTS}

    def other(point: str, code: str, seconds: float) -> None:
        key = (point, code, profile)
        h = series.get(key)
        if h is None:
            h = series[key] = Histogram(bounds)
        h.observe(seconds)

    duration = metrics.plugin_duration

    def plugin(name: str, point: str, args: tuple[Any, ...], ret: Any, seconds: float) -> None:
        duration.observe(seconds, name, point, _status_of(ret))

    return PointTimes(ok, other), plugin
