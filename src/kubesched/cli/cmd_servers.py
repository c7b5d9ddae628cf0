"""``kubesched apiserver`` and ``kubesched up``: the embedded API server, alone or with the scheduler,
its hollow kubelets, controllers and web UI; the server options declared once for both."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from kubesched.cli.options import fail, feature_gates_option, load_config, setup_logging
from kubesched.errors import InputError

DEFAULT_UP_NODES = 3  # the nodes kubesched up makes when neither --nodes nor the manifests give any


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
        "--detach",
        is_flag=True,
        default=False,
        help="Run in the background once it is up (its output in DATA_DIR/server.log); `kubesched down` stops it.",
    ),
    click.option(
        "--fault-injection",
        is_flag=True,
        default=False,
        help="For tests: accept latency, failures, drops and pauses set at /debug/kubesched/faults (loopback).",
    ),
]


results_limit_option = click.option(
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
    results_node_limit: int | None = None,
    ui_port: int = 0,
    **flags: Any,
) -> None:
    from pathlib import Path

    from kubesched.apiserver.filters.limits import Limits
    from kubesched.app.apiserver import ServerOptions, run
    from kubesched.controllers.manager import select as select_controllers
    from kubesched.features import FeatureGates
    from kubesched.scheduler.resultstore import NODE_LIMIT

    if flags.pop("detach"):
        from kubesched.app.detach import run_detached

        argv = [a for a in sys.argv[1:] if a != "--detach"]
        try:
            for line in run_detached(Path(flags["data_dir"]), argv):
                click.echo(line)
        except InputError as exc:
            fail(exc)
        return
    setup_logging()
    try:
        scheduler = load_config(config_path, feature_gates) if with_scheduler else None
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
            results_node_limit=NODE_LIMIT if results_node_limit is None else results_node_limit,
            ui_port=ui_port,
        )
        run(opts)
    except InputError as exc:
        fail(exc)


@click.command()
@_with_server_flags
@click.argument("paths", nargs=-1)
@feature_gates_option
def apiserver(paths: tuple[str, ...], feature_gates: str, **flags: Any) -> None:
    """The embedded Kubernetes API server (with hollow kubelets and the PDB controller), no scheduler."""
    _serve(None, paths, with_scheduler=False, feature_gates=feature_gates, **flags)


@click.command()
@_with_server_flags
@click.option("--config", "config_path", default=None, help="KubeSchedulerConfiguration file.")
@click.option(
    "--results/--no-results",
    default=True,
    show_default=True,
    help="Write each attempt's per-plugin results on the pod (kube-scheduler-simulator's annotations).",
)
@results_limit_option
@click.option(
    "--ui-port",
    type=click.IntRange(0, 65535),
    default=3000,
    show_default=True,
    help="Port of the web UI (on --host, behind the same token; 0: no UI).",
)
@feature_gates_option
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


@click.command()
@click.option("--data-dir", default=".kubesched", show_default=True, help="The data directory of the server to stop.")
@click.option("--delete", is_flag=True, help="Also remove the data directory: the next `up` starts an empty cluster.")
def down(data_dir: str, delete: bool) -> None:
    """Stop the `kubesched up` (or `apiserver`) running on --data-dir, as Ctrl-C would; with
    --delete, remove its state, kubeconfig and keys too, as `kind delete cluster` does."""
    from pathlib import Path

    from kubesched.app import datadir

    path = Path(data_dir)
    try:
        pid = datadir.stop_server(path)
        click.echo(f"kubesched: stopped process {pid} on {path}" if pid else f"kubesched: no server runs on {path}")
        if delete:
            gone = datadir.delete(path)
            click.echo(f"kubesched: deleted {path}" if gone else f"kubesched: {path} does not exist")
    except InputError as exc:
        fail(exc)
