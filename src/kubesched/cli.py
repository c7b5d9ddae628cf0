"""The ``kubesched`` command line."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import click

from kubesched import __version__, compiled
from kubesched.errors import InputError

if TYPE_CHECKING:
    from kubesched.features import FeatureGates
    from kubesched.scheduler.config import SchedulerConfig


def _feature_gates_option(fn: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--feature-gates",
        "feature_gates",
        default="",
        metavar="NAME=BOOL,...",
        help="Feature gates, as kube-scheduler v1.37's flag: every gate it knows, with its defaults and locks "
        "(docs/feature-gates.md).",
    )(fn)


def _gates(text: str) -> FeatureGates:
    from kubesched.features import FeatureGates

    gates = FeatureGates.parse(text)
    _warn_ignored(gates)
    return gates


def _warn_ignored(gates: FeatureGates) -> None:
    """Say so when a gate set on the command line changes kube-scheduler but not kubesched."""
    from kubesched.features import what_kubesched_does

    for name in gates.ignored():
        click.echo(f"kubesched: warning: feature gate {name}: {what_kubesched_does(name)}", err=True)


@click.group()
@click.version_option(__version__, prog_name="kubesched", message=f"%(prog)s, version %(version)s ({compiled.state})")
def main() -> None:
    """kubesched: the Kubernetes scheduler (v1.37 semantics) in Python."""
    from kubesched.app import gc_settings

    gc_settings.tune()


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--config",
    "config_path",
    type=str,
    default=None,
    help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for tie-breaks and UIDs.")
@click.option(
    "--output",
    "-o",
    "output",
    type=click.Choice(["table", "wide", "plain", "json"]),
    default="table",
    show_default=True,
    help="table: boxed (plain past 500 pods); wide: plain with the nominated node; plain: aligned columns.",
)
@click.option("--pending-only", is_flag=True, help="List only the pods that were not bound.")
@click.option("--summary", "summary_only", is_flag=True, help="Print only the summary lines.")
@click.option("--timing", is_flag=True, help="Add wall-clock figures to the JSON output (they vary run to run).")
@click.option(
    "--validate",
    "field_validation",
    type=click.Choice(["strict", "warn", "ignore"]),
    default="strict",
    show_default=True,
    help="Unknown fields in manifests: refuse (as kubectl), warn and drop, or drop.",
)
@click.option(
    "--explain",
    "explain",
    multiple=True,
    metavar="NS/NAME",
    help="Show per-node filter verdicts and scores of every scheduling attempt of this pod.",
)
@click.option("--report", "report_path", default=None, metavar="FILE", help="Write an HTML report with plots.")
@_feature_gates_option
def simulate(
    paths: tuple[str, ...],
    config_path: str | None,
    seed: int,
    output: str,
    pending_only: bool,
    summary_only: bool,
    timing: bool,
    field_validation: str,
    explain: tuple[str, ...],
    report_path: str | None,
    feature_gates: str,
) -> None:
    """Schedule the pods in PATHS (YAML/JSON files or directories, - for standard input) until
    nothing more can change."""
    from kubesched.simulate.output import print_result, to_json
    from kubesched.simulate.progress import Progress
    from kubesched.simulate.runner import simulate as run

    for key in explain:
        if key.count("/") != 1:
            _fail(InputError(f"--explain takes NAMESPACE/NAME, got {key!r}"))
    show_progress = output != "json" and sys.stderr.isatty()
    try:
        gates = _gates(feature_gates)
        if config_path is not None:
            _load_config(config_path)  # its warnings first (fields read but not acted on)
        with Progress(enabled=show_progress) as progress:
            result = run(
                list(paths),
                feature_gates=gates,
                config_path=config_path,
                seed=seed,
                explain=list(explain),
                field_validation=field_validation.capitalize(),
                progress=progress.update if show_progress else None,
            )
        if report_path is not None:
            from kubesched.report import write_simulate_report

            write_simulate_report(result, report_path, {"paths": list(paths), "config": config_path, "seed": seed})
    except InputError as exc:
        _fail(exc)
    known = {f"{p['namespace']}/{p['name']}": p for p in result.pods}
    for key in explain:
        if key not in known:
            _fail(InputError(f"--explain {key}: no such pod in the input"))
    if output == "json":
        click.echo(to_json(result, timing=timing, pending_only=pending_only))
    else:
        print_result(
            result,
            sys.stdout,
            fmt=output,
            pending_only=pending_only,
            summary_only=summary_only,
            terminal=sys.stdout.isatty(),
        )
    for key in explain:
        if key not in result.explain:
            pod = known[key]
            why = (
                f" ({pod['reason']}: {pod['message']})" if pod.get("reason") in ("SchedulingGated", "NoProfile") else ""
            )
            click.echo(f"kubesched: --explain {key}: the pod never reached a scheduling attempt{why}", err=True)


@main.command()
@click.argument("workload")
@click.option(
    "--cluster",
    "cluster",
    multiple=True,
    required=True,
    help="The trace's node CSV, or manifests (files or directories) holding the nodes.",
)
@click.option(
    "--mode",
    type=click.Choice(["timed", "arrivals"]),
    default="timed",
    show_default=True,
    help="timed: pods come and go at their times; arrivals: the FGD paper's method (see --load).",
)
@click.option(
    "--policy",
    default="default",
    show_default=True,
    help="default (kube-scheduler's profile) or a paper policy: Random, DotProduct, GpuClustering, GpuPacking, "
    "BestFit, FGD.",
)
@click.option("--config", "config_path", default=None, help="A KubeSchedulerConfiguration instead of --policy.")
@click.option(
    "--load",
    type=click.FloatRange(min=0),
    default=1.3,
    show_default=True,
    help="arrivals: grow or shrink the workload to this multiple of the cluster's GPUs (0: as it is).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for the workload draws and tie-breaks.")
@click.option(
    "--tie-break",
    type=click.Choice(["permutation", "random", "name"]),
    default=None,
    help="Among the best nodes: permutation (the paper's simulator: a seeded random order of the nodes, the "
    "default for its six policies), random (kube-scheduler's pick, the default otherwise) or the smallest name.",
)
@click.option("--samples", type=click.IntRange(min=1), default=200, show_default=True, help="timed: measures taken.")
@click.option("--namespace", default="openb", show_default=True, help="Namespace of the trace's pods.")
@click.option(
    "--gangs",
    type=click.Choice(["none", "same-arrival"]),
    default="none",
    show_default=True,
    help="same-arrival: pods arriving the same second with the same requests are one job's workers, "
    "scheduled all-or-nothing as a PodGroup gang (turns GenericWorkload on).",
)
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--timing", is_flag=True, help="Add wall-clock figures to the JSON output.")
@click.option("--report", "report_path", default=None, metavar="FILE", help="Write an HTML report with plots.")
@_feature_gates_option
def replay(
    workload: str,
    cluster: tuple[str, ...],
    mode: str,
    policy: str,
    config_path: str | None,
    load: float,
    seed: int,
    tie_break: str | None,
    samples: int,
    namespace: str,
    gangs: str,
    output: str,
    timing: bool,
    report_path: str | None,
    feature_gates: str,
) -> None:
    """Replay WORKLOAD (the trace's pod CSV, or JSON Lines of pods with arrival times) on the virtual
    clock and measure GPU allocation and fragmentation."""
    from kubesched.replay.output import print_replay, replay_json
    from kubesched.replay.runner import replay as run
    from kubesched.simulate.progress import Progress

    show_progress = output != "json" and sys.stderr.isatty()
    try:
        gates = _gates(feature_gates)
        with Progress(enabled=show_progress) as progress:
            result = run(
                workload,
                list(cluster),
                feature_gates=gates,
                mode=mode,
                policy=policy,
                config_path=config_path,
                load=load,
                seed=seed,
                samples=samples,
                namespace=namespace,
                tie_break=tie_break,
                progress=progress.step if show_progress else None,
                gangs=gangs,
            )
        if report_path is not None:
            from kubesched.report import write_replay_report

            write_replay_report(result, report_path)
    except InputError as exc:
        _fail(exc)
    if output == "json":
        click.echo(replay_json(result, timing))
    else:
        print_replay(result, sys.stdout)
        click.echo(f"wall {result.timing['wallSeconds']:.2f}s, {result.timing['podsPerSecond'] or 0:,.0f} pods/s")


@main.command()
@click.argument("workloads", nargs=-1, required=True)
@click.option("--cluster", "cluster", multiple=True, required=True, help="The trace's node CSV, or node manifests.")
@click.option(
    "--policies",
    default="Random,DotProduct,GpuClustering,GpuPacking,BestFit,FGD",
    show_default=True,
    help="Comma-separated policies: the paper's six (the default) and 'default' for kube-scheduler's profile.",
)
@click.option("--seeds", type=click.IntRange(min=1), default=10, show_default=True, help="Seeds per cell: 42, 43, ...")
@click.option("--first-seed", type=int, default=42, show_default=True)
@click.option("--mode", type=click.Choice(["timed", "arrivals"]), default="arrivals", show_default=True)
@click.option("--load", type=click.FloatRange(min=0), default=1.3, show_default=True)
@click.option(
    "--tie-break",
    type=click.Choice(["permutation", "random", "name"]),
    default=None,
    help="Among the best nodes: permutation (the paper's simulator: a seeded random order of the nodes, the "
    "default for its six policies), random (kube-scheduler's pick, the default otherwise) or the smallest name.",
)
@click.option(
    "--gangs",
    "gang_modes",
    default="none",
    show_default=True,
    help="Comma-separated replay --gangs values to compare, e.g. none,same-arrival: what all-or-nothing "
    "placement of the trace's multi-pod jobs costs in GPU allocation.",
)
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Local processes (default: all cores).")
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS", help="Run on a Ray cluster (auto: local).")
@click.option("--dask", "dask_address", default=None, metavar="ADDRESS", help="Run on a Dask scheduler.")
@click.option("--output", "-o", type=click.Choice(["text", "json", "csv"]), default="text", show_default=True)
@click.option("--report", "report_path", default=None, metavar="FILE", help="Write an HTML report with plots.")
def sweep(
    workloads: tuple[str, ...],
    cluster: tuple[str, ...],
    policies: str,
    seeds: int,
    first_seed: int,
    mode: str,
    load: float,
    tie_break: str | None,
    gang_modes: str,
    jobs: int | None,
    ray_address: str | None,
    dask_address: str | None,
    output: str,
    report_path: str | None,
) -> None:
    """Replay every WORKLOAD under every policy and seed, in parallel, and tabulate the results
    (mean ± standard deviation over seeds)."""
    import csv
    import json

    from kubesched.replay.output import print_sweep, summarize
    from kubesched.replay.profiles import ALL_POLICIES
    from kubesched.replay.sweep import SUMMARY_KEYS, execute, grid
    from kubesched.simulate.progress import Progress

    names = [p.strip() for p in policies.split(",") if p.strip()]
    for name in names:
        if name not in ALL_POLICIES:
            _fail(InputError(f'unknown policy "{name}"; choose from {", ".join(ALL_POLICIES)}', field="--policies"))
    from kubesched.replay.gangs import GANG_MODES

    gangs = [g.strip() for g in gang_modes.split(",") if g.strip()]
    for g in gangs:
        if g not in GANG_MODES:
            _fail(InputError(f'unknown gangs "{g}"; choose from {", ".join(GANG_MODES)}', field="--gangs"))
    show_progress = output == "text" and sys.stderr.isatty()
    try:
        runs = grid(
            list(workloads),
            list(cluster),
            names,
            list(range(first_seed, first_seed + seeds)),
            mode=mode,
            load=load,
            tie_break=tie_break,
            gangs=gangs,
        )
        with Progress(enabled=show_progress) as progress:
            rows = execute(
                runs,
                jobs=jobs,
                ray_address=ray_address,
                dask_address=dask_address,
                progress=(lambda done, total: progress.step(done, total, "runs")) if show_progress else None,
            )
        summary = summarize(rows, SUMMARY_KEYS)
        if report_path is not None:
            from kubesched.report import write_sweep_report

            tie = tie_break or "per policy (permutation for the paper's six)"
            write_sweep_report(rows, summary, report_path, {"mode": mode, "load": load, "tieBreak": tie})
    except InputError as exc:
        _fail(exc)
    if output == "json":
        click.echo(
            json.dumps(
                {"summary": summary, "runs": [{k: v for k, v in r.items() if k != "curve"} for r in rows]}, indent=2
            )
        )
    elif output == "csv":
        fields = [k for k in rows[0] if k != "curve"]
        writer = csv.DictWriter(sys.stdout, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    else:
        print_sweep(summary, SUMMARY_KEYS, sys.stdout, round(load * 100))
        wall = sum(r["wallSeconds"] for r in rows)
        click.echo(f"{len(rows)} runs, {wall:,.1f}s of replay")


_server_flags = [
    click.option("--data-dir", default=".kubesched", show_default=True, help="Where the state and kubeconfig live."),
    click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on."),
    click.option("--port", type=click.IntRange(1, 65535), default=6443, show_default=True),
    click.option(
        "--nodes",
        type=click.IntRange(min=0),
        default=None,
        help="Create N hollow nodes (4 CPU, 32Gi, 110 pods). Default: up makes 3 when the cluster has no "
        "node; apiserver makes none.",
    ),
    click.option(
        "--watch-history",
        type=click.IntRange(min=1),
        default=100_000,
        show_default=True,
        help="Revisions a watch can replay; older resourceVersions get 410 Expired.",
    ),
    click.option(
        "--max-requests-inflight",
        type=click.IntRange(min=0),
        default=400,
        show_default=True,
        help="Reads served at once (watches not counted); more get 429 with Retry-After. 0: no limit.",
    ),
    click.option(
        "--max-mutating-requests-inflight",
        type=click.IntRange(min=0),
        default=200,
        show_default=True,
        help="Writes served at once; more get 429 with Retry-After. 0: no limit.",
    ),
    click.option(
        "--enable-priority-and-fairness",
        type=bool,
        default=True,
        show_default=True,
        help="Share the server fairly between users: requests take turns by user (system:masters, watches and "
        "streams exempt); a user's 51st waiting request gets 429 with Retry-After.",
    ),
    click.option(
        "--max-connections",
        type=click.IntRange(min=0),
        default=1000,
        show_default=True,
        help="Open connections at once; a connection over the cap is answered 429 and closed. 0: no cap.",
    ),
    click.option(
        "--idle-connection-timeout",
        type=click.FloatRange(min=0.1),
        default=90.0,
        show_default=True,
        help="Seconds before a connection with no request in progress is closed.",
    ),
    click.option(
        "--watch-queue-length",
        type=click.IntRange(min=1),
        default=10_000,
        show_default=True,
        help="Events a watch may fall behind before it is closed (the client lists and watches again).",
    ),
    click.option(
        "--kubelet/--no-kubelet",
        default=True,
        show_default=True,
        help="Run the hollow kubelet (nodes Ready, bound pods Running); scheduler_perf runs without one.",
    ),
    click.option(
        "--attach-limit",
        type=click.IntRange(min=0),
        default=32,
        show_default=True,
        help="Volumes of the hollow CSI driver each hollow node can attach (its CSINode's allocatable count); "
        "0: the kubelet reports no CSINode.",
    ),
    click.option(
        "--pod-termination-delay",
        type=click.FloatRange(min=0),
        default=0.5,
        show_default=True,
        help="Seconds the hollow kubelet takes to stop a deleted pod's containers before confirming its deletion.",
    ),
    click.option(
        "--pod-run-seconds",
        type=click.FloatRange(min=0),
        default=1.0,
        show_default=True,
        help="Seconds a hollow pod with restartPolicy Never or OnFailure (a Job's) runs before it completes; "
        "the pod's annotation kubesched.io/run-seconds overrides it, kubesched.io/exit-code makes it fail.",
    ),
    click.option(
        "--controllers",
        default="*",
        show_default=True,
        help="The controllers to run, as kube-controller-manager's flag: '*' all, 'name' one, '-name' not that one "
        "(deployment, replicaset, statefulset, daemonset, job, garbage-collector, namespace, node-lifecycle, "
        "pod-garbage-collector, disruption, persistentvolume-binder, resourceclaim).",
    ),
    click.option(
        "--terminated-pod-gc-threshold",
        type=click.IntRange(min=0),
        default=12_500,
        show_default=True,
        help="Finished pods kept before the pod garbage collector deletes the oldest (0: never; "
        "kube-controller-manager's flag).",
    ),
    click.option(
        "--node-monitor-grace-period",
        type=click.FloatRange(min=1),
        default=50.0,
        show_default=True,
        help="Seconds a node's Lease may go unrenewed before the node lifecycle controller marks it Unknown "
        "and taints it unreachable (kube-controller-manager's flag).",
    ),
    click.option(
        "--token-auth-file",
        default=None,
        metavar="FILE",
        help='Static bearer tokens as kube-apiserver\'s flag reads them (CSV: token,user,uid[,"group1,group2"]); '
        "those users get what RBAC grants them.",
    ),
    click.option(
        "--fault-injection",
        is_flag=True,
        default=False,
        help="For tests: accept latency, failures, drops and pauses set at /debug/kubesched/faults (loopback).",
    ),
]


_results_limit_option = click.option(
    "--results-node-limit",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Nodes listed one by one in a pod's results; past it the best-scored feasible nodes are listed and the "
    "rest counted per reason in kubesched.io/filter-result-groups.",
)


def _with_server_flags(fn: Callable[..., None]) -> Callable[..., None]:
    for flag in reversed(_server_flags):
        fn = flag(fn)
    return fn


def _serve(
    config_path: str | None,
    paths: tuple[str, ...],
    *,
    with_scheduler: bool,
    feature_gates: str = "",
    results: bool = False,
    results_node_limit: int = 10,
    ui_port: int = 0,
    **flags: Any,
) -> None:
    from pathlib import Path

    from kubesched.apiserver.limits import Limits
    from kubesched.app.apiserver import ServerOptions, run
    from kubesched.controllers.manager import select as select_controllers
    from kubesched.features import FeatureGates

    _logging()
    try:
        scheduler = _load_config(config_path, feature_gates) if with_scheduler else None
        opts = ServerOptions(
            data_dir=Path(flags["data_dir"]),
            host=flags["host"],
            port=flags["port"],
            nodes=flags["nodes"],
            default_nodes=DEFAULT_UP_NODES if with_scheduler else 0,
            history=flags["watch_history"],
            kubelet=flags["kubelet"],
            pod_termination_delay=flags["pod_termination_delay"],
            pod_run_seconds=flags["pod_run_seconds"],
            controllers=select_controllers(flags["controllers"]),
            node_monitor_grace=flags["node_monitor_grace_period"],
            terminated_pod_gc_threshold=flags["terminated_pod_gc_threshold"],
            token_auth_file=flags["token_auth_file"],
            attach_limit=flags["attach_limit"],
            fault_injection=flags["fault_injection"],
            limits=Limits(
                max_requests_inflight=flags["max_requests_inflight"],
                max_mutating_requests_inflight=flags["max_mutating_requests_inflight"],
                max_connections=flags["max_connections"],
                idle_timeout=flags["idle_connection_timeout"],
                priority_and_fairness=flags["enable_priority_and_fairness"],
            ),
            watch_queue_length=flags["watch_queue_length"],
            paths=list(paths),
            scheduler=scheduler,
            # the API server serves what the gates turn on, the scheduler's under ``up``
            feature_gates=scheduler.feature_gates if scheduler is not None else FeatureGates.parse(feature_gates),
            config_path=config_path,
            write_results=results,
            results_node_limit=results_node_limit,
            ui_port=ui_port,
        )
        run(opts)
    except InputError as exc:
        _fail(exc)


@main.command()
@_with_server_flags
@click.argument("paths", nargs=-1)
@_feature_gates_option
def apiserver(paths: tuple[str, ...], feature_gates: str, **flags: Any) -> None:
    """The embedded Kubernetes API server (with hollow kubelets and the PDB controller), no scheduler."""
    _serve(None, paths, with_scheduler=False, feature_gates=feature_gates, **flags)


@main.command()
@_with_server_flags
@click.option("--config", "config_path", default=None, help="KubeSchedulerConfiguration file.")
@click.option(
    "--results/--no-results",
    default=True,
    show_default=True,
    help="Write each attempt's per-plugin results on the pod (kube-scheduler-simulator's annotations).",
)
@_results_limit_option
@click.option(
    "--ui-port",
    type=click.IntRange(0, 65535),
    default=3000,
    show_default=True,
    help="Port of the web UI (on --host, behind the same token; 0: no UI).",
)
@_feature_gates_option
@click.argument("paths", nargs=-1)
def up(
    config_path: str | None,
    paths: tuple[str, ...],
    feature_gates: str,
    results: bool,
    results_node_limit: int,
    ui_port: int,
    **flags: Any,
) -> None:
    """The embedded API server and the scheduler in one process: a cluster kubectl can drive,
    with a web UI."""
    _serve(
        config_path,
        paths,
        with_scheduler=True,
        feature_gates=feature_gates,
        results=results,
        results_node_limit=results_node_limit,
        ui_port=ui_port,
        **flags,
    )


def _duration_flag(name: str, attr: str, default: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option(
        f"--leader-elect-{name}",
        attr,
        default=None,
        metavar="DURATION",
        help=f"Overrides leaderElection.{_camel(name)} (default {default}).",
    )


def _camel(name: str) -> str:
    head, *rest = name.split("-")
    return head + "".join(p.title() for p in rest)


class _Verbosity(click.IntRange):
    """klog's ``-v`` as pflag reads it: ``-v=4`` (shorthand with ``=``, as kube-scheduler manifests
    write it) as well as ``-v 4`` and ``--v=4``."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.startswith("="):
            value = value[1:]
        return super().convert(value, param, ctx)


@main.command()
@click.option(
    "--kubeconfig",
    default=None,
    help="kubeconfig of the API server to schedule for (default: in-cluster, the pod's service account).",
)
@click.option("--config", "config_path", default=None, help="KubeSchedulerConfiguration file.")
@click.option(
    "--leader-elect",
    type=click.BOOL,
    is_flag=False,
    flag_value=True,
    default=None,
    help="Elect a leader among replicas over a Lease before scheduling (default true; --leader-elect=false).",
)
@_duration_flag("lease-duration", "lease_duration", "15s")
@_duration_flag("renew-deadline", "renew_deadline", "10s")
@_duration_flag("retry-period", "retry_period", "2s")
@click.option("--leader-elect-resource-lock", "resource_lock", default=None, help="Only leases (the default).")
@click.option("--leader-elect-resource-name", "resource_name", default=None, help="Default kube-scheduler.")
@click.option("--leader-elect-resource-namespace", "resource_namespace", default=None, help="Default kube-system.")
@click.option("-v", "--v", "verbosity", type=_Verbosity(min=0), default=0, help="Log verbosity (2: every binding).")
@click.option("--bind-address", default="127.0.0.1", show_default=True, help="Address of the HTTPS endpoint.")
@click.option(
    "--secure-port",
    type=click.IntRange(0, 65535),
    default=10259,
    show_default=True,
    help="Port of /healthz, /livez, /readyz and /metrics (0: none).",
)
@click.option(
    "--write-results",
    is_flag=True,
    default=False,
    help="Write each attempt's per-plugin results on the pod as kube-scheduler-simulator's annotations "
    "(kube-scheduler-simulator.sigs.k8s.io/*): one more write per failed attempt, none per binding.",
)
@_results_limit_option
@_feature_gates_option
def scheduler(
    kubeconfig: str | None,
    config_path: str | None,
    feature_gates: str,
    leader_elect: bool | None,
    verbosity: int,
    bind_address: str,
    secure_port: int,
    write_results: bool,
    results_node_limit: int,
    **lease_options: str | None,
) -> None:
    """The scheduler alone, as a client of any Kubernetes API server (kube-scheduler's place)."""
    import logging

    from kubesched.app.scheduler import Serving, run
    from kubesched.leaderelection.config import parse_duration

    _logging()
    if verbosity >= 2:
        logging.getLogger("kubesched.scheduler").setLevel(logging.DEBUG)
    try:
        flags: dict[str, Any] = {"leader_elect": leader_elect}
        for attr, value in lease_options.items():
            if attr in ("lease_duration", "renew_deadline", "retry_period") and value is not None:
                flags[attr] = parse_duration(value, f"--leader-elect-{attr.replace('_', '-')}")
            else:
                flags[attr] = value
        cfg = _load_config(config_path, feature_gates)
        # --kubeconfig, else the configuration's clientConnection.kubeconfig, else in-cluster
        code = run(
            kubeconfig or cfg.client_connection.kubeconfig or None,
            cfg,
            flags,
            Serving(bind_address, secure_port),
            write_results=write_results,
            results_node_limit=results_node_limit,
        )
    except InputError as exc:
        _fail(exc)
    sys.exit(code)


@main.command()
@click.argument("pod")
@click.option("-n", "--namespace", default=None, help="The pod's namespace (default: default, or NAMESPACE/ in POD).")
@click.option(
    "--kubeconfig",
    default=None,
    help="kubeconfig of the API server (default: $KUBECONFIG, else .kubesched/kubeconfig).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Schedule the pod once more in a dry cycle against the cluster as it is now, even if it carries results.",
)
@click.option("--config", "config_path", default=None, help="KubeSchedulerConfiguration of the dry cycle.")
@click.option("--all", "all_attempts", is_flag=True, help="Every attempt written on the pod, not only the latest.")
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table", show_default=True)
def explain(
    pod: str,
    namespace: str | None,
    kubeconfig: str | None,
    dry_run: bool,
    config_path: str | None,
    all_attempts: bool,
    output: str,
) -> None:
    """Why POD ([NAMESPACE/]NAME) of a live cluster is where it is, or why it waits: each plugin's
    verdict and score per node, from the results on the pod (kube-scheduler-simulator's
    annotations) or from a dry scheduling cycle against the current cluster."""
    import json
    import os

    from rich.console import Console

    from kubesched.app import explain as live
    from kubesched.explain import pending_message, print_attempt

    ns, _, name = pod.rpartition("/")
    ns = ns or namespace or "default"
    path = kubeconfig or os.environ.get("KUBECONFIG") or ".kubesched/kubeconfig"
    try:
        cfg = _load_config(config_path) if dry_run or config_path else None
        obj, objects = live.fetch(path, ns, name, snapshot=True)
        attempts = [] if dry_run else live.from_annotations(obj)
        source = "the results on the pod"
        if not attempts:
            one = live.dry_run(obj, objects, cfg or _load_config(None))
            if one is None:
                _fail(InputError(f"pod {ns}/{name}: the dry cycle did not reach a scheduling attempt (gated?)"))
            attempts = [one]
            source = "a dry scheduling cycle against the cluster as it is now"
    except InputError as exc:
        _fail(exc)
    shown = attempts if all_attempts else attempts[-1:]
    if output == "json":
        click.echo(json.dumps(shown if all_attempts else shown[0], indent=2))
        return
    console = Console(highlight=False, soft_wrap=False, width=max(120, Console().width))
    first = len(attempts) - len(shown)
    message = pending_message(obj)
    for i, parsed in enumerate(shown):
        node_on = (obj.get("spec") or {}).get("nodeName") or "none"
        title = f"explain {ns}/{name} (attempt {first + i + 1} of {len(attempts)}, from {source}; "
        title += f"selected: {parsed.get('selected-node') or 'none'}; the pod is on: {node_on})"
        latest = i == len(shown) - 1 and source == "the results on the pod"
        print_attempt(console, title, parsed, message if latest else "")


@main.command("size")
@click.argument("workload", nargs=-1, required=True)
@click.option(
    "--node-template",
    "templates",
    multiple=True,
    required=True,
    metavar="FILE[:COST]",
    help="A Node manifest to add copies of, and what one costs (default 1); repeat to compare templates.",
)
@click.option("--cluster", multiple=True, help="The nodes (and pods) there already: manifests or the trace's node CSV.")
@click.option(
    "--config",
    "config_path",
    default=None,
    help="KubeSchedulerConfiguration (default: the workload's, or the defaults).",
)
@click.option(
    "--max-nodes",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="The most nodes of a template tried.",
)
@click.option(
    "--policy",
    default=None,
    help="One of replay's policies (default, Random, DotProduct, GpuClustering, GpuPacking, BestFit, FGD); "
    "a trace workload's default is 'default' (the default profile counting the pods' GPUs).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for tie-breaks.")
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--report", "report_path", default=None, metavar="FILE", help="Write an HTML report with plots.")
@_feature_gates_option
def size_command(
    workload: tuple[str, ...],
    templates: tuple[str, ...],
    cluster: tuple[str, ...],
    config_path: str | None,
    max_nodes: int,
    policy: str | None,
    seed: int,
    output: str,
    report_path: str | None,
    feature_gates: str,
) -> None:
    """How many nodes of a template WORKLOAD needs: the smallest count that leaves no pod pending
    (bisection over simulations on the virtual clock), and why one node fewer is not enough.
    WORKLOAD: pod manifests, or a trace's pod CSV or JSON Lines (every pod at once); a template
    is a Node manifest or a one-row node CSV of the trace's format."""
    import json

    from kubesched.planning.output import cheapest, print_size, size_json
    from kubesched.planning.size import load, size

    try:
        objects, tpls, config = load(list(workload), list(cluster), list(templates), policy)
        if config_path is not None:
            config = _load_config(config_path, feature_gates)
        elif feature_gates:
            from kubesched.features import FeatureGates

            config.feature_gates = FeatureGates.checked(config.feature_gates.merged(_gates(feature_gates)).overrides)
        results = [size(objects, t, config, seed=seed, max_nodes=max_nodes) for t in tpls]
        if report_path is not None:
            from kubesched.report import write_size_report

            params = {"workload": list(workload), "cluster": list(cluster), "templates": list(templates)}
            write_size_report(size_json(results), report_path, {**params, "maxNodes": max_nodes, "seed": seed})
    except InputError as exc:
        _fail(exc)
    if output == "json":
        click.echo(json.dumps(size_json(results), indent=2))
    else:
        print_size(results, max_nodes, sys.stdout)
    sys.exit(0 if cheapest(results) is not None else 1)


@main.command("drain")
@click.argument("cluster", nargs=-1, required=True)
@click.option("--node", "node_names", multiple=True, metavar="NAME", help="A node to drain; repeat for more.")
@click.option(
    "--selector", "-l", default=None, metavar="LABELS", help="Drain the nodes this label selector matches (a pool)."
)
@click.option(
    "--config",
    "config_path",
    default=None,
    help="KubeSchedulerConfiguration (default: the cluster's, or the defaults).",
)
@click.option(
    "--timeout",
    default="10m",
    show_default=True,
    help="How long (virtual time) evictions the disruption budgets refuse are retried.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for tie-breaks.")
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--report", "report_path", default=None, metavar="FILE", help="Write an HTML report with plots.")
def drain_command(
    cluster: tuple[str, ...],
    node_names: tuple[str, ...],
    selector: str | None,
    config_path: str | None,
    timeout: str,
    seed: int,
    output: str,
    report_path: str | None,
) -> None:
    """What if these nodes were drained: do their pods fit elsewhere? CLUSTER (manifests: nodes,
    workloads, pods, PodDisruptionBudgets) runs as under ``kubesched up`` on the virtual clock,
    then the nodes are drained as ``kubectl drain --ignore-daemonsets --delete-emptydir-data
    --force`` would, budgets respected. Exits 1 when some pod cannot leave or find a place."""
    import json

    from kubesched.cluster.loader import load_paths
    from kubesched.leaderelection.config import parse_duration
    from kubesched.planning.drain import build, drain, select_nodes
    from kubesched.planning.output import print_drain
    from kubesched.simulate.runner import split_config, validate_manifest

    try:
        seconds = parse_duration(timeout, "--timeout")
        if seconds <= 0:  # kubectl's 0 waits forever, which a refused budget would make endless here
            raise InputError(f"Invalid value: {timeout!r}: must be greater than 0", field="--timeout")
        manifests = load_paths(list(cluster)).manifests
        for m in manifests:
            validate_manifest(m)
        config, objects = split_config(manifests, None)
        if config_path is not None:
            config = _load_config(config_path)
        built = build(objects, config, seed)
        nodes = select_nodes(built, list(node_names), selector)
        result = drain(built, nodes, seconds, usage=report_path is not None)
        if report_path is not None:
            from kubesched.report import write_drain_report

            params = {"paths": list(cluster), "config": config_path, "timeout": timeout, "seed": seed}
            write_drain_report(result, report_path, params)
    except InputError as exc:
        _fail(exc)
    if output == "json":
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        print_drain(result, sys.stdout)
    sys.exit(0 if result.fits else 1)


@main.command("diff")
@click.argument("a")
@click.argument("b")
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--report", "report_path", default=None, metavar="FILE", help="Write an HTML report with plots.")
def diff_command(a: str, b: str, output: str, report_path: str | None) -> None:
    """What changed from run A to run B (each the JSON of ``simulate -o json`` or ``replay -o json``):
    pods moved, gone pending or placed; for replays, the curves side by side."""
    import json

    from kubesched.planning.diff import diff
    from kubesched.planning.output import print_diff

    try:
        d = diff(a, b)
        if report_path is not None:
            from kubesched.report import write_diff_report

            write_diff_report(d, report_path, {"A": a, "B": b})
    except InputError as exc:
        _fail(exc)
    if output == "json":
        click.echo(json.dumps(d.as_dict(), indent=2))
    else:
        print_diff(d, sys.stdout)


DEFAULT_UP_NODES = 3  # the nodes kubesched up makes when neither --nodes nor the manifests give any


@main.group()
def node() -> None:
    """Hollow nodes of a running ``kubesched up``: stop a node's kubelet (it goes NotReady, then
    its pods are evicted as the node lifecycle controller does), start it again."""


def _node_command(stop: bool) -> Callable[..., None]:
    @click.argument("names", nargs=-1, required=True)
    @click.option(
        "--kubeconfig",
        default=None,
        help="kubeconfig of the API server (default: $KUBECONFIG, else .kubesched/kubeconfig).",
    )
    def command(names: tuple[str, ...], kubeconfig: str | None) -> None:
        import os

        from kubesched.app.nodes import set_stopped

        path = kubeconfig or os.environ.get("KUBECONFIG") or ".kubesched/kubeconfig"
        try:
            for line in set_stopped(path, list(names), stop):
                click.echo(line)
        except InputError as exc:
            _fail(exc)

    return command


node.command("stop", help="Stop the hollow kubelet of NAMES: no Lease renewals, no pods started or stopped.")(
    _node_command(True)
)
node.command("start", help="Start the hollow kubelet of NAMES again.")(_node_command(False))


@node.command("add")
@click.argument("names", nargs=-1)
@click.option(
    "--count", type=click.IntRange(min=1), default=None, help="How many nodes (default: one per NAME, else 1)."
)
@click.option(
    "--template",
    default=None,
    metavar="FILE",
    help="A Node manifest to copy (its labels, taints, allocatable); default: 4 CPU, 32Gi, 110 pods.",
)
@click.option(
    "--kubeconfig",
    default=None,
    help="kubeconfig of the API server (default: $KUBECONFIG, else .kubesched/kubeconfig).",
)
def node_add(names: tuple[str, ...], count: int | None, template: str | None, kubeconfig: str | None) -> None:
    """Create hollow nodes in a running kubesched up (or any API server): NAMES, or the next free
    node-N names, copied from --template. Their hollow kubelet runs them at once."""
    import os

    from kubesched.app.nodes import add_nodes, load_template

    path = kubeconfig or os.environ.get("KUBECONFIG") or ".kubesched/kubeconfig"
    try:
        if names and count is not None and count != len(names):
            raise InputError(f"{len(names)} name(s) given but --count {count}", field="--count")
        base = load_template(template) if template else None
        for line in add_nodes(path, list(names), count or max(len(names), 1), base):
            click.echo(line)
    except InputError as exc:
        _fail(exc)


@main.group()
def config() -> None:
    """KubeSchedulerConfiguration files."""


@config.command("validate")
@click.argument("path")
def config_validate(path: str) -> None:
    """Check a KubeSchedulerConfiguration as kube-scheduler would: exit 0, or one line and exit 2."""
    from kubesched.scheduler.profile import build_profiles

    try:
        cfg = _load_config(path)
        build_profiles(cfg)
    except InputError as exc:
        _fail(exc)
    names = ", ".join(p.scheduler_name for p in cfg.profiles)
    click.echo(f"{path}: valid ({len(cfg.profiles)} profile(s): {names}; {len(cfg.extenders)} extender(s))")


@config.command("defaults")
@click.argument("path", required=False)
def config_defaults(path: str | None) -> None:
    """The fully defaulted configuration (of PATH, or of nothing) as YAML, as kube-scheduler's
    --write-config-to writes it."""
    import yaml

    from kubesched.scheduler.config_defaults import to_document
    from kubesched.scheduler.plugins import in_tree_registry

    try:
        cfg = _load_config(path)
    except InputError as exc:
        _fail(exc)
    click.echo(yaml.safe_dump(to_document(cfg, set(in_tree_registry())), sort_keys=False), nl=False)


def _load_config(config_path: str | None, feature_gates: str = "") -> SchedulerConfig:
    """The configuration file (or the defaults), ``--feature-gates`` over its ``featureGates``."""
    from kubesched.features import FeatureGates
    from kubesched.scheduler.config import default_config
    from kubesched.simulate.runner import split_config

    gates = _gates(feature_gates)
    if config_path is None:
        cfg = default_config()
    else:
        cfg = split_config([], config_path)[0]
        for warning in cfg.warnings:  # never silently ignored
            click.echo(f"kubesched: warning: {config_path}: {warning}", err=True)
    cfg.feature_gates = FeatureGates.checked(cfg.feature_gates.merged(gates).overrides)
    return cfg


def _logging() -> None:
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    # httpx and httpcore log every request at INFO: the web UI's writes to the API server are not
    # news (the API server's own log and audit have them)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)


def _fail(exc: InputError) -> NoReturn:
    click.echo(f"kubesched: error: {exc}", err=True)
    sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
