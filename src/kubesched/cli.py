"""The ``kubesched`` command line."""

from __future__ import annotations

import sys

import click
from rich.console import Console

from kubesched import __version__
from kubesched.errors import InputError


@click.group()
@click.version_option(__version__, prog_name="kubesched")
def main() -> None:
    """kubesched: the Kubernetes scheduler (v1.36 semantics) in Python."""


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
@click.option("--output", "output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option(
    "--explain",
    "explain",
    multiple=True,
    metavar="NS/NAME",
    help="Show per-node filter verdicts and scores of this pod's first attempt.",
)
def simulate(paths: tuple[str, ...], config_path: str | None, seed: int, output: str, explain: tuple[str, ...]) -> None:
    """Schedule the pods in PATHS (YAML/JSON files or directories) until nothing more can change."""
    from kubesched.simulate.output import print_table, to_json
    from kubesched.simulate.runner import simulate as run

    for key in explain:
        if key.count("/") != 1:
            _fail(InputError(f"--explain takes NAMESPACE/NAME, got {key!r}"))
    try:
        result = run(list(paths), config_path=config_path, seed=seed, explain=list(explain))
    except InputError as exc:
        _fail(exc)
    if output == "json":
        click.echo(to_json(result))
    else:
        print_table(result, Console())


def _fail(exc: InputError) -> None:
    click.echo(f"kubesched: error: {exc}", err=True)
    sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
