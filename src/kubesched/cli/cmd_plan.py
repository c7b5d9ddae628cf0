"""Planning commands: ``kubesched size``, ``kubesched drain`` and ``kubesched diff``."""

from __future__ import annotations

import sys

import click

from kubesched.cli.options import fail, feature_gates_option, load_config, parse_gates
from kubesched.errors import InputError


@click.command("size")
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
@feature_gates_option
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
            config = load_config(config_path, feature_gates)
        elif feature_gates:
            from kubesched.features import FeatureGates

            config.feature_gates = FeatureGates.checked(
                config.feature_gates.merged(parse_gates(feature_gates)).overrides
            )
        results = [size(objects, t, config, seed=seed, max_nodes=max_nodes) for t in tpls]
        if report_path is not None:
            from kubesched.report import write_size_report

            params = {"workload": list(workload), "cluster": list(cluster), "templates": list(templates)}
            write_size_report(size_json(results), report_path, {**params, "maxNodes": max_nodes, "seed": seed})
    except InputError as exc:
        fail(exc)
    if output == "json":
        click.echo(json.dumps(size_json(results), indent=2))
    else:
        print_size(results, max_nodes, sys.stdout)
    sys.exit(0 if cheapest(results) is not None else 1)


@click.command("drain")
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
    from kubesched.loading.manifests import split_config, validate_manifest
    from kubesched.planning.drain import build, drain, select_nodes
    from kubesched.planning.output import print_drain

    try:
        seconds = parse_duration(timeout, "--timeout")
        if seconds <= 0:  # kubectl's 0 waits forever, which a refused budget would make endless here
            raise InputError(f"Invalid value: {timeout!r}: must be greater than 0", field="--timeout")
        manifests = load_paths(list(cluster)).manifests
        for m in manifests:
            validate_manifest(m)
        config, objects = split_config(manifests, None)
        if config_path is not None:
            config = load_config(config_path)
        built = build(objects, config, seed)
        nodes = select_nodes(built, list(node_names), selector)
        result = drain(built, nodes, seconds, usage=report_path is not None)
        if report_path is not None:
            from kubesched.report import write_drain_report

            params = {"paths": list(cluster), "config": config_path, "timeout": timeout, "seed": seed}
            write_drain_report(result, report_path, params)
    except InputError as exc:
        fail(exc)
    if output == "json":
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        print_drain(result, sys.stdout)
    sys.exit(0 if result.fits else 1)


@click.command("diff")
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
        fail(exc)
    if output == "json":
        click.echo(json.dumps(d.as_dict(), indent=2))
    else:
        print_diff(d, sys.stdout)
