"""``kubesched scheduler``: kube-scheduler's command against any API server (kubeconfig or in-cluster),
with leader election and its flags."""

from __future__ import annotations

import sys
from typing import Any

import click

from kubesched.cli.options import (
    Verbosity,
    duration_flag,
    fail,
    feature_gates_option,
    load_config,
    results_limit_option,
    setup_logging,
)
from kubesched.errors import InputError


@click.command()
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
@duration_flag("lease-duration", "lease_duration", "15s")
@duration_flag("renew-deadline", "renew_deadline", "10s")
@duration_flag("retry-period", "retry_period", "2s")
@click.option("--leader-elect-resource-lock", "resource_lock", default=None, help="Only leases (the default).")
@click.option("--leader-elect-resource-name", "resource_name", default=None, help="Default kube-scheduler.")
@click.option("--leader-elect-resource-namespace", "resource_namespace", default=None, help="Default kube-system.")
@click.option("-v", "--v", "verbosity", type=Verbosity(min=0), default=0, help="Log verbosity (2: every binding).")
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
@results_limit_option
@feature_gates_option
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

    setup_logging()
    if verbosity >= 2:
        logging.getLogger("kubesched.scheduler").setLevel(logging.DEBUG)
    try:
        flags: dict[str, Any] = {"leader_elect": leader_elect}
        for attr, value in lease_options.items():
            if attr in ("lease_duration", "renew_deadline", "retry_period") and value is not None:
                flags[attr] = parse_duration(value, f"--leader-elect-{attr.replace('_', '-')}")
            else:
                flags[attr] = value
        cfg = load_config(config_path, feature_gates)
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
        fail(exc)
    sys.exit(code)
