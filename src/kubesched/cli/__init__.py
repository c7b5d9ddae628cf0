"""The ``kubesched`` command line: the ``main`` group, each command in a module of its own
(``cmd_*``), the options they share declared once (``options``)."""

from __future__ import annotations

import click

from kubesched import __version__, compiled
from kubesched.cli import (
    cmd_config,
    cmd_explain,
    cmd_node,
    cmd_plan,
    cmd_replay,
    cmd_scheduler,
    cmd_servers,
    cmd_simulate,
    cmd_snapshot,
)


@click.group()
@click.version_option(__version__, prog_name="kubesched", message=f"%(prog)s, version %(version)s ({compiled.state})")
def main() -> None:
    """kubesched: the Kubernetes scheduler (v1.37 semantics) in Python."""
    from kubesched.app import gc_settings

    gc_settings.tune()


for command in (
    cmd_simulate.simulate,
    cmd_replay.replay,
    cmd_replay.sweep,
    cmd_servers.apiserver,
    cmd_servers.up,
    cmd_servers.down,
    cmd_scheduler.scheduler,
    cmd_explain.explain,
    cmd_plan.size_command,
    cmd_plan.drain_command,
    cmd_plan.diff_command,
    cmd_snapshot.snapshot,
    cmd_node.node,
    cmd_config.config,
):
    main.add_command(command)
