"""Manifests as every command reads them: each decoded and validated as kube-apiserver would a
create (``cluster.validation``), with kubectl's ``--validate`` modes for unknown fields, and the
KubeSchedulerConfiguration among them (or given with ``--config``) set apart."""

from __future__ import annotations

from kubesched.api import schema
from kubesched.api.kinds import builtin_kind
from kubesched.cluster import validation as object_validation
from kubesched.cluster.loader import Manifest, load_paths, warn
from kubesched.errors import InputError
from kubesched.scheduler.config import API_VERSION, KIND, SchedulerConfig, default_config, parse_config


def validate_manifest(m: Manifest, field_validation: str = "Strict") -> list[str]:
    """Decode and validate a manifest as kube-apiserver would a create (``cluster.validation``),
    with kubectl's ``--validate`` modes for unknown fields: Strict refuses them, Warn returns
    them as warnings, Ignore drops them. Kinds the scheduler does not use are only decoded."""
    try:
        if schema.type_of(object_validation.group_of(m.obj), m.kind) is None:
            schema.check_depth(m.obj)
        obj, unknown = object_validation.decode(object_validation.group_of(m.obj), m.kind, m.obj)
        if unknown and field_validation == "Strict":
            raise InputError(schema.unknown_field_message(unknown), field=unknown[0])
        m.obj = obj
        if builtin_kind(object_validation.group_of(m.obj), m.kind) is not None:
            meta = m.obj.get("metadata") or {}
            if not meta.get("name") and meta.get("generateName"):
                check = {**m.obj, "metadata": {**meta, "name": f"{meta['generateName']}x"}}
            else:
                check = m.obj
            object_validation.validate(m.kind, check)
    except InputError as exc:
        raise exc.located(file=m.file, obj=m.ref) from None
    if field_validation == "Warn":
        return [f'{m.file}: {m.ref}: unknown field "{p}"' for p in unknown]
    return []


def split_config(manifests: list[Manifest], config_path: str | None) -> tuple[SchedulerConfig, list[Manifest]]:
    """The KubeSchedulerConfiguration (``config_path``'s, else the one among ``manifests``, else
    the defaults) and the other objects; shared by simulate, size, drain and the CLI's --config."""
    objects = [m for m in manifests if m.kind != KIND]
    configs = [m for m in manifests if m.kind == KIND]
    if config_path is not None:
        loaded = load_paths([config_path]).manifests
        docs = [m for m in loaded if m.kind == KIND]
        if len(docs) != 1:
            raise InputError(f"expected exactly one {KIND} document, found {len(docs)}", file=config_path)
        if configs:
            warn(f"--config {config_path} overrides the {KIND} found in {configs[0].file}")
        return parse_config(docs[0].obj, config_path), objects
    if len(configs) > 1:
        raise InputError(f"more than one {KIND} in the input", file=configs[1].file)
    if configs:
        if configs[0].obj.get("apiVersion") != API_VERSION:
            raise InputError(
                f"unsupported apiVersion {configs[0].obj.get('apiVersion')!r}, expected {API_VERSION}",
                file=configs[0].file,
                obj=KIND,
                field="apiVersion",
            )
        return parse_config(configs[0].obj, configs[0].file), objects
    return default_config(), objects
