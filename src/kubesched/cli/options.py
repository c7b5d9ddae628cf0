"""What the commands share: the options declared once (feature gates, results, durations, klog's
``-v``), the scheduler configuration as every command reads it, logging, and the one-line failure."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import click

from kubesched.errors import InputError

if TYPE_CHECKING:
    from kubesched.features import FeatureGates
    from kubesched.scheduler.config import SchedulerConfig


def feature_gates_option(fn: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--feature-gates",
        "feature_gates",
        default="",
        metavar="NAME=BOOL,...",
        help="Feature gates, as kube-scheduler v1.37's flag: every gate it knows, with its defaults and locks "
        "(docs/feature-gates.md).",
    )(fn)


def parse_gates(text: str) -> FeatureGates:
    from kubesched.features import FeatureGates

    gates = FeatureGates.parse(text)
    warn_ignored(gates)
    return gates


def warn_ignored(gates: FeatureGates) -> None:
    """Say so when a gate set on the command line changes kube-scheduler but not kubesched."""
    from kubesched.features import what_kubesched_does

    for name in gates.ignored():
        click.echo(f"kubesched: warning: feature gate {name}: {what_kubesched_does(name)}", err=True)


results_limit_option = click.option(
    "--results-node-limit",
    type=click.IntRange(min=1),
    default=10,  # resultstore.NODE_LIMIT, the one default (not imported: numpy would slow every command's start)
    show_default=True,
    help="Nodes listed one by one in a pod's results; past it the best-scored feasible nodes are listed and the "
    "rest counted per reason in kubesched.io/filter-result-groups.",
)


def duration_flag(name: str, attr: str, default: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option(
        f"--leader-elect-{name}",
        attr,
        default=None,
        metavar="DURATION",
        help=f"Overrides leaderElection.{camel(name)} (default {default}).",
    )


def camel(name: str) -> str:
    head, *rest = name.split("-")
    return head + "".join(p.title() for p in rest)


class Verbosity(click.IntRange):
    """klog's ``-v`` as pflag reads it: ``-v=4`` (shorthand with ``=``, as kube-scheduler manifests
    write it) as well as ``-v 4`` and ``--v=4``."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.startswith("="):
            value = value[1:]
        return super().convert(value, param, ctx)


def load_config(config_path: str | None, feature_gates: str = "") -> SchedulerConfig:
    """The configuration file (or the defaults), ``--feature-gates`` over its ``featureGates``."""
    from kubesched.features import FeatureGates
    from kubesched.loading.manifests import split_config
    from kubesched.scheduler.config import default_config

    gates = parse_gates(feature_gates)
    if config_path is None:
        cfg = default_config()
    else:
        cfg = split_config([], config_path)[0]
        for warning in cfg.warnings:  # never silently ignored
            click.echo(f"kubesched: warning: {config_path}: {warning}", err=True)
    cfg.feature_gates = FeatureGates.checked(cfg.feature_gates.merged(gates).overrides)
    return cfg


def setup_logging() -> None:
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    # httpx and httpcore log every request at INFO: the web UI's writes to the API server are not
    # news (the API server's own log and audit have them)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)


def fail(exc: InputError) -> NoReturn:
    click.echo(f"kubesched: error: {exc}", err=True)
    sys.exit(2)
