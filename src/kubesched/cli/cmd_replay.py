"""``kubesched replay`` and ``kubesched sweep``: traces replayed through the scheduler, one or a grid."""

from __future__ import annotations

import sys

import click

from kubesched.cli.options import fail, feature_gates_option, parse_gates
from kubesched.errors import InputError


@click.command()
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
@feature_gates_option
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
        gates = parse_gates(feature_gates)
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
        fail(exc)
    if output == "json":
        click.echo(replay_json(result, timing))
    else:
        print_replay(result, sys.stdout)
        click.echo(f"wall {result.timing['wallSeconds']:.2f}s, {result.timing['podsPerSecond'] or 0:,.0f} pods/s")


@click.command()
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
            fail(InputError(f'unknown policy "{name}"; choose from {", ".join(ALL_POLICIES)}', field="--policies"))
    from kubesched.replay.gangs import GANG_MODES

    gangs = [g.strip() for g in gang_modes.split(",") if g.strip()]
    for g in gangs:
        if g not in GANG_MODES:
            fail(InputError(f'unknown gangs "{g}"; choose from {", ".join(GANG_MODES)}', field="--gangs"))
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
        fail(exc)
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
