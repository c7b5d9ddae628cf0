"""``kubesched simulate``: a cluster's state scheduled on virtual time."""

from __future__ import annotations

import sys

import click

from kubesched.cli.options import fail, feature_gates_option, load_config, parse_gates
from kubesched.errors import InputError


@click.command()
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
@click.option(
    "--reschedule",
    is_flag=True,
    help="Take every running pod the profiles schedule off its node and schedule them all again "
    "(a configuration judged on a whole cluster, a snapshot's).",
)
@click.option("--report", "report_path", default=None, metavar="FILE", help="Write an HTML report with plots.")
@feature_gates_option
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
    reschedule: bool,
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
            fail(InputError(f"--explain takes NAMESPACE/NAME, got {key!r}"))
    show_progress = output != "json" and sys.stderr.isatty()
    try:
        gates = parse_gates(feature_gates)
        if config_path is not None:
            load_config(config_path)  # its warnings first (fields read but not acted on)
        with Progress(enabled=show_progress) as progress:
            result = run(
                list(paths),
                feature_gates=gates,
                config_path=config_path,
                seed=seed,
                explain=list(explain),
                field_validation=field_validation.capitalize(),
                progress=progress.update if show_progress else None,
                reschedule=reschedule,
            )
        if report_path is not None:
            from kubesched.report import write_simulate_report

            settings = {"paths": list(paths), "config": config_path, "seed": seed, "reschedule": reschedule}
            write_simulate_report(result, report_path, settings)
    except InputError as exc:
        fail(exc)
    known = {f"{p['namespace']}/{p['name']}": p for p in result.pods}
    for key in explain:
        if key not in known:
            fail(InputError(f"--explain {key}: no such pod in the input"))
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
