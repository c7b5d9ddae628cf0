"""``kubesched explain``: why a pod is where it is, or pending, plugin by plugin."""

from __future__ import annotations

import click

from kubesched.cli.options import fail, load_config
from kubesched.errors import InputError


@click.command()
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
    from kubesched.attempt_table import pending_message, print_attempt

    ns, _, name = pod.rpartition("/")
    ns = ns or namespace or "default"
    path = kubeconfig or os.environ.get("KUBECONFIG") or ".kubesched/kubeconfig"
    try:
        cfg = load_config(config_path) if dry_run or config_path else None
        obj, objects = live.fetch(path, ns, name, snapshot=True)
        attempts = [] if dry_run else live.from_annotations(obj)
        source = "the results on the pod"
        if not attempts:
            attempts = [live.dry_run(obj, objects, cfg or load_config(None))]
            source = "a dry scheduling cycle against the cluster as it is now"
    except InputError as exc:
        fail(exc)
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
