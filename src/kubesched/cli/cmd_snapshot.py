"""``kubesched snapshot``: a live cluster's state, as kube-scheduler reads it, into one file."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from kubesched.cli.options import fail, load_config
from kubesched.errors import InputError


@click.command("snapshot")
@click.option("--kubeconfig", default=None, help="The cluster's kubeconfig (default: $KUBECONFIG, ~/.kube/config).")
@click.option("--context", default=None, help="The kubeconfig context to read (default: its current one).")
@click.option(
    "-o",
    "--output",
    "output",
    default="-",
    show_default=True,
    help="The file to write (YAML; a .json name writes one List, faster to read back); - for stdout.",
)
@click.option(
    "--page",
    "page_size",
    type=click.IntRange(min=1),
    default=500,
    show_default=True,
    help="Objects per list request (paged with continue tokens, as kubectl's --chunk-size).",
)
@click.option(
    "--anonymize",
    is_flag=True,
    help="Names of namespaces, nodes, objects and images as stable hashes; what the scheduler does not read "
    "(annotations, commands, environments, addresses) dropped; labels kept.",
)
@click.option(
    "--anonymize-labels",
    is_flag=True,
    help="--anonymize, and label values too: stable hashes alike in labels and in every selector, "
    "affinity and node selector (integers kept: Gt and Lt compare them).",
)
@click.option(
    "--config",
    "config_path",
    default=None,
    help="The cluster's KubeSchedulerConfiguration: checked, and written first, so planning commands use it.",
)
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
def snapshot(
    kubeconfig: str | None,
    context: str | None,
    output: str,
    page_size: int,
    anonymize: bool,
    anonymize_labels: bool,
    config_path: str | None,
    quiet: bool,
) -> None:
    """Read everything the scheduler reads from a cluster (nodes, pods, namespaces, priority and
    runtime classes, budgets, storage, DRA, the owners topology spread looks at) at one
    resourceVersion, and write it as manifests every planning command reads:
    ``kubesched simulate SNAPSHOT EXTRA.yaml``."""
    import os

    from rich.progress import Progress, TextColumn

    from kubesched.snapshot import reader, writer
    from kubesched.snapshot.anonymize import Anonymizer

    if kubeconfig is None:
        kubeconfig = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or str(Path.home() / ".kube" / "config")
    first = []
    if config_path is not None:  # checked before the cluster is read: a bad one is one line, no file
        from kubesched.cluster.loader import load_paths
        from kubesched.scheduler.config import KIND

        try:
            load_config(config_path)
            first = [m.obj for m in load_paths([config_path]).manifests if m.kind == KIND]
        except InputError as exc:
            fail(exc)
    bar = Progress(TextColumn("{task.description}"), transient=True, disable=quiet or not sys.stderr.isatty())
    task = bar.add_task("connecting")
    partial = f"{output}.part"  # renamed when complete: a failed read leaves no half a snapshot
    try:
        target = contextlib.nullcontext(sys.stdout) if output == "-" else open(partial, "w", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        fail(InputError(f"cannot write the snapshot: {exc.strerror}", file=output))
    with target as out:
        anonymizer = Anonymizer(labels=anonymize_labels) if anonymize or anonymize_labels else None
        sink = writer.Writer(out, output.endswith(".json"), anonymizer, first)

        def page(snap: reader.Snapshot, listed: reader.Listed, items: list[dict[str, object]]) -> None:
            sink.page(snap, listed, items)
            bar.update(task, description=f"listing {listed.plural}: {snap.counts[listed.plural]}")

        try:
            with bar:
                snap = reader.take(kubeconfig, context, page, page=page_size)
        except InputError as exc:
            if output != "-":
                out.close()
                os.unlink(partial)
            fail(exc)
        sink.close(snap)
    if output != "-":
        os.replace(partial, output)
    if not quiet:
        for line in [writer.origin(snap), *writer.summary(snap)]:
            click.echo(line, err=True)
        if output != "-":
            click.echo(f"{sink.written} objects written to {output}", err=True)
