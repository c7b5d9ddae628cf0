"""The writes (kube-apiserver's ``endpoints/handlers/{create,update,patch,delete}.go``): field
validation, optimistic concurrency, the four patch types, create-on-update for the kinds that
allow it, graceful deletion and a namespace's contents deleted with it."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kubesched.api.errors import BadRequest, Forbidden, Invalid, NotFound, UnsupportedMediaType
from kubesched.api.fields import fields_match
from kubesched.api.labels import labels_match
from kubesched.apiextensions import cleanup
from kubesched.apiextensions.cel import off_loop
from kubesched.apiserver.context import ServerContext
from kubesched.apiserver.handlers import fieldmanager
from kubesched.apiserver.handlers.bodies import check_object_size, decode_json, decode_yaml, read_body, read_object
from kubesched.apiserver.handlers.fieldmanager import manager_name
from kubesched.apiserver.handlers.patch import patched as patch_object
from kubesched.apiserver.handlers.patch import strategic_merge_patch
from kubesched.apiserver.handlers.request import Target, dry_run, int_param, parse_bool, respond, with_warnings
from kubesched.apiserver.handlers.strictpatch import go_json, go_value, strict_patch_error
from kubesched.apiserver.registry import customresources
from kubesched.apiserver.registry.ephemeral import prepare_ephemeral, validate_ephemeral
from kubesched.apiserver.registry.resize import prepare_resize, validate_resize
from kubesched.apiserver.registry.strategy import (
    StrictPatchError,
    check_meta,
    decode,
    field_validation_mode,
    prepare_for_update,
    validate,
)
from kubesched.client.object_client import StoreObjects
from kubesched.clock import rfc3339
from kubesched.cluster.admission import ResourceQuotaAdmission
from kubesched.cluster.quota import UPDATE_CHARGED

PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
# kinds whose strategy has AllowCreateOnUpdate true (pkg/registry/{coordination/lease,core/event,core/service}):
# a PUT of a missing object creates it; for every other kind it is NotFound
CREATE_ON_UPDATE = {"Lease", "Event", "Service"}
PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")
LONG_JSON_PATCH = 256  # operations from which a JSON patch is applied on a worker thread


@dataclass(frozen=True, slots=True)
class EarlyPatch:
    """A JSON patch applied off the loop to the object at ``resource_version``: the patched
    object, or the error to answer (``ok`` False)."""

    resource_version: Any
    ok: bool
    result: Any


class Writes(ServerContext):
    """The ApiServer's write handlers; a part of ``ApiServer``."""

    # -- writes ------------------------------------------------------------------------------------
    async def _create(self, request: web.Request, t: Target) -> web.Response:
        body = await read_object(request)
        self._check_kind(t, body)
        body, warnings = self._validate_fields(request, t, body)
        body = self._in(t, body)
        self._check_namespace(t, body)
        await self._rules_compiled(t, body)
        return with_warnings(lambda: self._store_create(request, t, body), warnings)

    async def _rules_compiled(self, t: Target, body: Any, *, patch: bool = False) -> None:
        """The CEL rules a write brings (a CRD's) or meets (a custom object's) compiled off the
        event loop first (``off_loop``); a CRD's whole body is checked there too, unless it is a
        patch."""
        if t.resource.stored == customresources.CRD_KIND and not t.subresource:
            checked = None if patch else off_loop.schemas(body)
            await off_loop.compiled_off_loop(off_loop.rule_texts(body), checked)
        elif t.resource.custom:
            await off_loop.compiled_off_loop(off_loop.schema_texts(self._custom(t).schema))

    def _validate_fields(
        self, request: web.Request, t: Target, body: dict[str, Any], *, patch: bool = False
    ) -> tuple[dict[str, Any], list[str]]:
        if t.resource.custom:  # a patch is pruned once applied (a merge patch's nulls delete)
            if patch:
                return body, []
            return customresources.decode(self._custom(t), body, field_validation_mode(request.query))
        return decode(t.resource, body, field_validation_mode(request.query), t.resource.version, patch=patch)

    def _manager(self, request: web.Request) -> str:
        return manager_name(request.query.get("fieldManager"), request.headers.get("User-Agent"))

    def _now(self) -> str:
        return rfc3339(self.store.clock.now())

    def _store_create(
        self, request: web.Request, t: Target, body: dict[str, Any], applied: dict[str, Any] | None = None
    ) -> web.Response:
        """A create (POST, or a PUT or apply of an object that does not exist yet): the Store's
        admission chain defaults, mutates (priority, ...), validates and checks quota on it. The
        creator owns the fields it set (an applier with an Apply entry)."""
        manager = self._manager(request)
        if applied is not None:
            body = fieldmanager.apply(
                {},
                body,
                applied,
                manager,
                t.resource.group_version,
                self._now(),
                force=True,
                kind_plural=t.resource.plural,
            )
        elif manager:
            body = fieldmanager.update(None, body, manager, t.resource.group_version, self._now())
        check_object_size(body)
        self._check_escalation(request, t, body)
        try:
            created = self.store.create(t.resource.stored, body, dry_run=dry_run(request))
        except Forbidden as exc:
            raise _admission_forbidden(t, body, exc) from None
        return respond(self._out(t, created), 201)

    def _store_update(
        self, request: web.Request, t: Target, body: dict[str, Any], old: dict[str, Any], *, applied: bool = False
    ) -> web.Response:
        """Validation and the write of an update (PUT or PATCH, main resource or ``/status``); an
        update of the main resource records its manager's fields (an apply has done so)."""
        if t.resource.custom:
            cr = self._custom(t)
            new = customresources.prepare_update(cr, customresources.pruned(cr, body), old, t.subresource)
        elif t.subresource == "resize":
            new = prepare_resize({**body, "apiVersion": "v1", "kind": "Pod"}, old)
        elif t.subresource == "ephemeralcontainers":
            new = prepare_ephemeral({**body, "apiVersion": "v1", "kind": "Pod"}, old)
        else:
            new = prepare_for_update(t.resource, body, old, t.subresource, self.store)
        manager = self._manager(request)
        if applied:
            new["metadata"]["managedFields"] = (body.get("metadata") or {}).get("managedFields") or []
        elif not t.subresource and (manager or (body.get("metadata") or {}).get("managedFields")):
            new = fieldmanager.update(old, new, manager, t.resource.group_version, self._now())
        elif "managedFields" in old["metadata"]:
            new["metadata"]["managedFields"] = old["metadata"]["managedFields"]
        if not t.resource.custom:  # prepare_update has validated a custom resource
            check_meta(t.resource, new)
            if t.subresource == "resize":
                validate_resize(new, old)
            elif t.subresource == "ephemeralcontainers":
                validate_ephemeral(new, old)
            validate(t.resource, new, meta=False, old=old)
        check_object_size(new)
        if not t.subresource:
            self._check_escalation(request, t, new)
        kind = t.resource.kind
        if (kind in UPDATE_CHARGED and not t.subresource and kind != "Pod") or t.subresource == "resize":
            try:  # the ResourceQuota plugin on an update (``Handles``: these kinds and a pod's resize)
                ResourceQuotaAdmission(self.store).check(kind, new, old)
            except Forbidden as exc:
                raise _admission_forbidden(t, new, exc) from None
        if dry_run(request):
            return respond(self._out(t, new))
        if _unchanged(new, old):  # GuaranteedUpdate: past the precondition, the same bytes are not written
            return respond(self._out(t, old))
        return respond(self._out(t, self.store.update(t.resource.stored, new)))

    async def _update(self, request: web.Request, t: Target) -> web.Response:
        body = await read_object(request)
        self._check_kind(t, body)
        body, warnings = self._validate_fields(request, t, body)
        await self._rules_compiled(t, body)
        return with_warnings(lambda: self._update_with(request, t, body), warnings)

    def _update_with(self, request: web.Request, t: Target, body: dict[str, Any]) -> web.Response:
        body = self._in(t, body)
        self._check_namespace(t, body)
        name = (body.get("metadata") or {}).get("name")
        if name != t.name:
            raise BadRequest(f"the name of the object ({name}) does not match the name on the URL ({t.name})")
        old = self.store.try_get(t.resource.stored, self._ns(t), t.name or "")
        if old is None:
            if t.subresource or t.resource.kind not in CREATE_ON_UPDATE:
                self._get(t)  # NotFound, as upstream for resources without AllowCreateOnUpdate
            return self._store_create(request, t, body)
        return self._store_update(request, t, body, old)

    async def _patch(self, request: web.Request, t: Target) -> web.Response:
        ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        accepted = customresources.PATCH_TYPES if t.resource.custom else PATCH_TYPES
        if ctype not in accepted:
            raise UnsupportedMediaType(
                "the body of the request was in an unknown format - accepted media types include: "
                + ", ".join(accepted)
            )
        data = await read_body(request)
        patch = decode_yaml(data) if ctype == "application/apply-patch+yaml" else decode_json(data)
        warnings: list[str] = []
        if isinstance(patch, dict):  # a merge, strategic or apply patch has the object's shape
            try:
                patch, warnings = self._validate_fields(request, t, patch, patch=True)
            except StrictPatchError as exc:
                raise self._strict_patch_error(t, ctype, patch, exc.message) from None
        await self._rules_compiled(t, patch, patch=ctype != "application/apply-patch+yaml")
        early = await self._json_patched_off_loop(t, ctype, patch)
        return with_warnings(lambda: self._patch_with(request, t, ctype, patch, early), warnings)

    async def _json_patched_off_loop(self, t: Target, ctype: str, patch: Any) -> EarlyPatch | None:
        """A long JSON patch applied to the stored object on a worker thread (thousands of
        operations take the ``jsonpatch`` package a tenth of a second, which would hold every other
        client); the write uses it if the object has not changed meanwhile, as GuaranteedUpdate
        applies a patch again to an object that changed under it."""
        if ctype != "application/json-patch+json" or not isinstance(patch, list) or len(patch) < LONG_JSON_PATCH:
            return None
        stored = self.store.try_get(t.resource.stored, self._ns(t), t.name or "")
        if stored is None:
            return None
        current = self._out(t, stored)

        def apply() -> tuple[bool, Any]:
            try:
                return True, patch_object(ctype, current, patch)
            except (BadRequest, Invalid) as exc:
                return False, exc

        return EarlyPatch(stored["metadata"].get("resourceVersion"), *await asyncio.to_thread(apply))

    def _strict_patch_error(self, t: Target, ctype: str, patch: dict[str, Any], reason: str) -> Exception:
        """What patch.go answers: the decoded patch (strategic) or the patched object (merge)."""
        if ctype == "application/strategic-merge-patch+json":
            return strict_patch_error(go_value(patch), reason)
        if ctype == "application/merge-patch+json":
            stored = self.store.try_get(t.resource.stored, self._ns(t), t.name or "")
            if stored is not None:
                patched = patch_object(ctype, self._out(t, stored), patch)
                return strict_patch_error(go_json(patched, patch), reason)
        return BadRequest(reason)

    def _patch_with(
        self, request: web.Request, t: Target, ctype: str, patch: Any, early: EarlyPatch | None = None
    ) -> web.Response:
        stored = self.store.try_get(t.resource.stored, self._ns(t), t.name or "")
        applying = ctype == "application/apply-patch+yaml"
        if applying:
            if not request.query.get("fieldManager"):
                raise Invalid(
                    'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
                    details={"group": "meta.k8s.io", "kind": "PatchOptions"},
                )
            if not isinstance(patch, dict):
                raise BadRequest("the apply body must be an object")
        elif request.query.get("force"):
            raise Invalid(
                'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
                details={"group": "meta.k8s.io", "kind": "PatchOptions"},
            )
        if stored is None:
            if applying and not t.subresource:
                self._check_kind(t, patch)
                body = self._in(t, patch)
                self._check_namespace(t, body)
                if (body.get("metadata") or {}).get("name") != t.name:
                    raise BadRequest("the name of the object does not match the name on the URL")
                return self._store_create(request, t, body, applied=patch)
            self._get(t)
        assert stored is not None
        current = self._out(t, stored)
        if early is not None and early.resource_version == stored["metadata"].get("resourceVersion"):
            if not early.ok:
                raise early.result
            patched = early.result
        elif not applying:
            patched = patch_object(ctype, current, patch)
        else:
            assert isinstance(patch, dict)
            self._check_kind(t, patch)
            config = {k: v for k, v in patch.items() if k not in ("apiVersion", "kind")}
            patched = strategic_merge_patch(current, config)
            if not t.subresource:
                patched = fieldmanager.apply(
                    current,
                    patched,
                    config,
                    self._manager(request),
                    t.resource.group_version,
                    self._now(),
                    force=parse_bool(request.query.get("force")),
                    kind_plural=t.resource.plural,
                )
        if not isinstance(patched, dict):
            raise BadRequest("the patched object must be an object")
        patched = self._in(t, patched)
        patched.setdefault("metadata", {})
        meta = patched["metadata"]
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be an object")
        rv_in_patch = patch_resource_version(patch)
        meta["resourceVersion"] = rv_in_patch if rv_in_patch else stored["metadata"].get("resourceVersion")
        check_name(meta, t.name or "", self._ns(t) if t.resource.namespaced else "")
        if not t.resource.namespaced:
            meta.pop("namespace", None)
        return self._store_update(request, t, patched, stored, applied=applying and not t.subresource)

    async def _delete_options(self, request: web.Request) -> dict[str, Any]:
        data = await read_body(request)
        opts = decode_json(data) if data.strip() else {}
        if not isinstance(opts, dict):
            raise BadRequest("DeleteOptions must be an object")
        q = request.query
        if q.get("gracePeriodSeconds"):
            opts["gracePeriodSeconds"] = int_param(q["gracePeriodSeconds"], "gracePeriodSeconds")
        grace = opts.get("gracePeriodSeconds")
        if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
            raise BadRequest("gracePeriodSeconds must be an integer")
        pre = opts.get("preconditions") or {}
        if not isinstance(pre, dict):
            raise BadRequest("preconditions must be an object")
        if q.get("propagationPolicy"):
            opts["propagationPolicy"] = q["propagationPolicy"]
        if opts.get("orphanDependents") is not None and opts.get("propagationPolicy") is None:
            opts["propagationPolicy"] = "Orphan" if opts["orphanDependents"] else "Background"
        policy = opts.get("propagationPolicy")
        if policy is not None and policy not in PROPAGATION_POLICIES:
            # ValidateDeleteOptions
            raise Invalid(
                f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "{policy}": '
                'supported values: "Foreground", "Background", "Orphan", "nil"',
                details={"kind": "DeleteOptions", "group": "meta.k8s.io"},
            )
        return opts

    async def _delete(self, request: web.Request, t: Target) -> web.Response:
        opts = await self._delete_options(request)
        self._get(t)
        pre = opts.get("preconditions") or {}
        if dry_run(request):
            return respond(self._get(t))
        kind = t.resource.stored
        gone = self.store.delete(
            kind,
            self._ns(t),
            t.name or "",
            opts.get("gracePeriodSeconds"),
            uid=pre.get("uid"),
            resource_version=pre.get("resourceVersion"),
            propagation=opts.get("propagationPolicy"),
        )
        if kind == customresources.CRD_KIND:  # the CRD finalizer's first sync, at once
            cleanup.finalize(StoreObjects(self.store), t.name or "", self.store.clock.now())
        # 200 with the object while it lingers (graceful, finalizers), else 200 with it as deleted
        return respond(self._out(t, gone))

    async def _delete_collection(self, request: web.Request, t: Target) -> web.Response:
        opts = await self._delete_options(request)
        labels, fields = self._selectors(request, t)
        objs, _ = self.store.list(t.resource.stored, self._ns(t) if t.namespace is not None else None)
        gone = []
        for o in [o for o in objs if labels_match(labels, o) and fields_match(fields, o)]:
            if dry_run(request):
                gone.append(o)
                continue
            with contextlib.suppress(NotFound):
                gone.append(
                    self.store.delete(
                        t.resource.stored,
                        o["metadata"].get("namespace") or "",
                        o["metadata"]["name"],
                        opts.get("gracePeriodSeconds"),
                        propagation=opts.get("propagationPolicy"),
                    )
                )
            if t.resource.stored == customresources.CRD_KIND:
                cleanup.finalize(StoreObjects(self.store), o["metadata"]["name"], self.store.clock.now())
        return respond(
            {
                "kind": f"{t.resource.kind}List",
                "apiVersion": t.resource.group_version,
                "metadata": {"resourceVersion": str(self.store.resource_version)},
                "items": [self._out(t, o) for o in gone],
            }
        )


def check_name(meta: dict[str, Any], name: str, namespace: str) -> None:
    """patch.go's ``checkName``: a patch may not rename an object or move it to another namespace
    (nor drop either)."""
    if meta.get("name") != name:
        given = meta.get("name") or ""
        raise BadRequest(f"the name of the object ({given}) does not match the name on the URL ({name})")
    if namespace and meta.get("namespace") != namespace:
        raise BadRequest(
            f"the namespace of the object ({meta.get('namespace') or ''}) does not match the namespace on the URL "
            f"({namespace})"
        )


def patch_resource_version(patch: Any) -> str | None:
    if isinstance(patch, dict):
        rv = (patch.get("metadata") or {}).get("resourceVersion") if isinstance(patch.get("metadata"), dict) else None
        return str(rv) if rv else None
    return None


def _unchanged(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether an update leaves the object as it is (its resourceVersion aside)."""

    def content(obj: dict[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
        return {**obj, "metadata": meta}

    sent = (new.get("metadata") or {}).get("resourceVersion")
    if sent and sent != (old.get("metadata") or {}).get("resourceVersion"):
        return False  # a stale version: the store answers 409 Conflict
    return content(new) == content(old)


def _admission_forbidden(t: Target, body: dict[str, Any], exc: Forbidden) -> Forbidden:
    """An admission plugin's refusal as ``admission.NewForbidden`` words it: the object named
    before the plugin's reason (``pods "p" is forbidden: pod rejected: ...``)."""
    if " is forbidden: " in exc.message:
        return exc  # already worded for the request (NamespaceLifecycle, RBAC)
    name = str((body.get("metadata") or {}).get("name") or "")
    details = {"name": name, "kind": t.resource.plural}
    if t.resource.group:  # (omitempty)
        details["group"] = t.resource.group
    return Forbidden(f'{t.resource.qualified} "{name}" is forbidden: {exc.message}', details=details)
