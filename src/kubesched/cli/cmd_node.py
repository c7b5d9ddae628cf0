"""``kubesched node``: hollow nodes of a running ``kubesched up`` stopped, started and added."""

from __future__ import annotations

from collections.abc import Callable

import click

from kubesched.cli.options import fail
from kubesched.errors import InputError


@click.group()
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
            fail(exc)

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
        fail(exc)
