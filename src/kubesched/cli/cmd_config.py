"""``kubesched config``: a KubeSchedulerConfiguration validated, or its defaults printed."""

from __future__ import annotations

import click

from kubesched.cli.options import fail, load_config
from kubesched.errors import InputError


@click.group()
def config() -> None:
    """KubeSchedulerConfiguration files."""


@config.command("validate")
@click.argument("path")
def config_validate(path: str) -> None:
    """Check a KubeSchedulerConfiguration as kube-scheduler would: exit 0, or one line and exit 2."""
    from kubesched.scheduler.profile import build_profiles

    try:
        cfg = load_config(path)
        build_profiles(cfg)
    except InputError as exc:
        fail(exc)
    names = ", ".join(p.scheduler_name for p in cfg.profiles)
    click.echo(f"{path}: valid ({len(cfg.profiles)} profile(s): {names}; {len(cfg.extenders)} extender(s))")


@config.command("defaults")
@click.argument("path", required=False)
def config_defaults(path: str | None) -> None:
    """The fully defaulted configuration (of PATH, or of nothing) as YAML, as kube-scheduler's
    --write-config-to writes it."""
    import yaml

    from kubesched.scheduler.config_defaults import to_document
    from kubesched.scheduler.plugins import in_tree_registry

    try:
        cfg = load_config(path)
    except InputError as exc:
        fail(exc)
    click.echo(yaml.safe_dump(to_document(cfg, set(in_tree_registry())), sort_keys=False), nl=False)
