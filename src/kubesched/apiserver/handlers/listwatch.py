"""list and watch (kube-apiserver's ``endpoints/handlers/get.go`` ListResource and ``watch.go``):
selectors, pages with continue tokens, resourceVersion semantics (a version ahead of the store
waits or is refused, a compacted one is 410), watch streams with bookmarks, selector transitions
and a bounded queue per watcher, as the cacher bounds its watchers."""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from kubesched.api.errors import ApiError, BadRequest, Expired, Invalid
from kubesched.api.fields import fields_match
from kubesched.api.labels import labels_match
from kubesched.api.watch import ADDED, WatchEvent, selected_type
from kubesched.apiserver.context import ServerContext
from kubesched.apiserver.filters import memory
from kubesched.apiserver.filters.fairness import WATCH_INITIALIZED
from kubesched.apiserver.handlers.bodies import JSON
from kubesched.apiserver.handlers.request import Target, dumps, int_param, parse_bool, respond, wants_table
from kubesched.apiserver.handlers.tables import table
from kubesched.cluster.store import StorageError

if TYPE_CHECKING:
    pass

log = logging.getLogger("kubesched.apiserver")

MAX_LIMIT_PAGE = 500
BOOKMARK_EVERY = 30.0
# events a watcher may fall behind before it is closed (kube-apiserver's cacher closes a watcher
# whose channel stays full past its dispatch budget); the client lists and watches again
WATCH_QUEUE_LENGTH = 10_000
# events whose encoded watch lines are kept for their other watchers (the watch cache's
# cachingObject lives as long as its event in the cache's ring of recent events)
WIRE_EVENTS = 1_024
MAX_WATCH_SECONDS = 1800.0  # --min-request-timeout 1800: a watch without timeoutSeconds lasts up to this
# a watch goes out in writes of about this many bytes, each waiting for the client to take the
# previous ones (the initial list too: it is encoded as it is sent, never all at once)
WATCH_CHUNK = 64 * 1024
# a watcher whose client takes nothing for this long is closed and its buffers given back (the
# cacher's dispatch budget for a blocked watcher; HTTP/2 flow control bounds kube-apiserver's)
WATCH_WRITE_STALL = 10.0
# a list reads, filters and encodes this many objects before it lets the other requests run: one
# request of a namespace of 20,000 objects holds the event loop for a slice of that at a time. A page
# of more items than this is sent as it is encoded, as kube-apiserver streams a collection's items
# (StreamingCollectionEncodingToJSON, beta and on since v1.33)
LIST_SLICE = 500
# paged lists whose matches are kept for their next pages (``_keep_pages``)
PAGED_LISTS = 8


class _WatchEnded(Exception):
    """The watch's client stopped reading, or its timeoutSeconds ran out during a write."""


class ListWatch(ServerContext):
    """The ApiServer's list and watch handlers; a part of ``ApiServer``."""

    # -- list and watch -----------------------------------------------------------------------------
    def _keep_lines(self, ev: WatchEvent) -> dict[Any, bytes]:
        """A new map for ``ev``'s encoded watch lines, kept while it is among the last
        ``WIRE_EVENTS`` events encoded: the watchers of one event read it within moments of
        each other, and the store's log keeps events far longer (100,000 of them), which with
        their lines held would grow the server by every line ever sent."""
        self._encoded.append(ev)
        if len(self._encoded) > WIRE_EVENTS:
            self._encoded.popleft().wire = None
        return {}

    async def _list(self, request: web.Request, t: Target) -> web.StreamResponse:
        labels, fields = self._selectors(request, t)
        q = request.query
        check_list_options(q)
        exact: int | None = None
        if q.get("resourceVersion"):
            asked = resource_version(q["resourceVersion"])
            if asked > self.store.resource_version:  # storage.NewTooLargeResourceVersionError
                raise TooLargeResourceVersion(asked, self.store.resource_version)
            if q.get("resourceVersionMatch") == "Exact":
                exact = asked
        token = q.get("continue")
        start, at = decode_continue(token, self.store.compacted_rev) if token else (0, exact)
        namespace = self._ns(t) if t.namespace is not None else None
        selected = (t.resource.stored, namespace, q.get("labelSelector") or "", q.get("fieldSelector") or "")
        matched = self._paged.get((*selected, at)) if token else None
        if matched is not None:  # the next page of a list whose matches are kept: no list, no sort
            rv = at if at is not None else self.store.resource_version
        else:
            matched, rv = await self._matched(t.resource.stored, namespace, at, labels, fields)
        list_rv = rv
        limit_text = q.get("limit")
        limit = int_param(limit_text, "limit") if limit_text else 0
        cont = None
        if limit and limit > 0 and start + limit < len(matched):
            cont = encode_continue(list_rv, start + limit)
            page = matched[start : start + limit]
            self._keep_pages((*selected, list_rv), matched)
        else:
            page = matched[start:]
        if wants_table(request.headers.get("Accept", "")):
            return respond(
                table(
                    t.resource.stored,
                    [self._out(t, o) for o in page],
                    self.store.clock.now(),
                    str(list_rv),
                    cont,
                    include=q.get("includeObject"),
                    printer=self._printer(t),
                )
            )
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if cont:
            meta["continue"] = cont
        head = {"kind": f"{t.resource.kind}List", "apiVersion": t.resource.group_version, "metadata": meta}
        if len(page) <= LIST_SLICE or request.method == "HEAD":
            return respond({**head, "items": [self._out(t, o) for o in page]})
        return await self._stream_list(request, t, head, page)

    async def _matched(
        self, kind: str, namespace: str | None, at: int | None, labels: Any, fields: Any
    ) -> tuple[list[dict[str, Any]], int]:
        """The objects a list selects, by namespace and name, and the revision they are of. The
        objects as of that revision: a write while the list is read replaces an object in the
        store, never changes the one this list holds. A list at an older revision (Exact, or the
        next page of a list, which kube-apiserver reads from etcd at the first page's revision)
        is the store's state then."""
        if at is not None and at < self.store.resource_version:
            objs, rv = self.store.list_at(kind, namespace, at), at
        else:
            objs, rv = self.store.list(kind, namespace)
        matched: list[dict[str, Any]] = []
        for i in range(0, len(objs), LIST_SLICE):
            if i:
                await asyncio.sleep(0)
            matched += [o for o in objs[i : i + LIST_SLICE] if labels_match(labels, o) and fields_match(fields, o)]
        matched.sort(key=lambda o: ((o.get("metadata") or {}).get("namespace") or "", o["metadata"].get("name", "")))
        return matched, rv

    def _keep_pages(self, key: tuple[Any, ...], matched: list[dict[str, Any]]) -> None:
        """Keep a paged list's matches for its next pages (as etcd serves each page as a range
        read from the last key, not by listing and sorting everything again): the last
        ``PAGED_LISTS`` lists, each a list of the objects it holds (no copies)."""
        self._paged[key] = matched
        self._paged.move_to_end(key)
        while len(self._paged) > PAGED_LISTS:
            self._paged.popitem(last=False)

    async def _stream_list(
        self, request: web.Request, t: Target, head: dict[str, Any], page: list[dict[str, Any]]
    ) -> web.StreamResponse:
        """A long page sent as it is encoded, ``LIST_SLICE`` items at a time: the same document
        ``respond`` would send, with the loop let go between slices."""
        resp = web.StreamResponse(status=200)
        resp.headers["Content-Type"] = JSON
        await resp.prepare(request)
        await resp.write(dumps(head)[:-1] + b',"items":[')
        for i in range(0, len(page), LIST_SLICE):
            chunk = b",".join(dumps(self._out(t, o)) for o in page[i : i + LIST_SLICE])
            await resp.write(chunk if not i else b"," + chunk)
            await asyncio.sleep(0)
        await resp.write(b"]}")
        await resp.write_eof()
        return resp

    async def _watch(self, request: web.Request, t: Target) -> web.StreamResponse:
        q = request.query
        labels, fields = self._selectors(request, t)
        as_table = wants_table(request.headers.get("Accept", ""))
        bookmarks = parse_bool(q.get("allowWatchBookmarks"))
        timeout = (
            float(int_param(q["timeoutSeconds"], "timeoutSeconds")) if q.get("timeoutSeconds") else MAX_WATCH_SECONDS
        )
        rv_text = q.get("resourceVersion") or ""
        if q.get("sendInitialEvents"):
            raise BadRequest("sendInitialEvents is not supported by this server; list, then watch")
        namespace = self._ns(t) if t.namespace is not None else None
        kind = t.resource.stored
        wake = asyncio.Event()
        self._wakes.add(wake)
        initial: list[dict[str, Any]] = []
        expired: Expired | None = None
        watch = None
        try:
            if rv_text in ("", "0"):
                objs, _ = self.store.list(kind, namespace)
                initial = [o for o in objs if labels_match(labels, o) and fields_match(fields, o)]
                watch = self.store.watch([kind], self.store.resource_version, notify=wake.set)
            else:
                watch = self.store.watch([kind], resource_version(rv_text), notify=wake.set)
        except Expired as exc:
            expired = exc
        resp = web.StreamResponse(status=200)
        resp.headers["Content-Type"] = JSON
        resp.enable_chunked_encoding()
        await resp.prepare(request)

        printer = self._printer(t)

        def line(type_: str, obj: dict[str, Any]) -> bytes:
            if as_table and type_ not in ("ERROR", "BOOKMARK"):
                obj = table(kind, [obj], self.store.clock.now(), None, include=q.get("includeObject"), printer=printer)
            return dumps({"type": type_, "object": obj}) + b"\n"

        transport = request.transport
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout

        async def write(data: bytes) -> None:
            """One write, bounded in time: the client takes it within WATCH_WRITE_STALL seconds and
            before the watch's timeoutSeconds, or the connection is closed (freeing what it buffered)."""
            budget = min(WATCH_WRITE_STALL, deadline - loop.time())
            try:
                await asyncio.wait_for(resp.write(data), max(budget, 0.001))
            except TimeoutError:
                log.info("closing a watch of %s whose client stopped reading or ran out of time", t.resource.plural)
                abort = getattr(transport, "abort", None)
                if callable(abort):
                    abort()
                raise _WatchEnded from None

        async def write_lines(lines: Any) -> None:
            """Lines in writes of about WATCH_CHUNK bytes."""
            chunk: list[bytes] = []
            size = 0
            for data in lines:
                chunk.append(data)
                size += len(data)
                if size >= WATCH_CHUNK:
                    await write(b"".join(chunk))
                    chunk, size = [], 0
            if chunk:
                await write(b"".join(chunk))

        async def send(type_: str, obj: dict[str, Any]) -> None:
            await write(line(type_, obj))

        # the request's APF seat is held until the watch is initialized (its initial events out)
        initialized = request.get(WATCH_INITIALIZED)
        if expired is not None:
            self._wakes.discard(wake)
            await send("ERROR", expired.status())
            return resp
        assert watch is not None
        watch.limit = self.watch_queue_length
        ended = asyncio.Event()

        def fell_behind() -> None:
            """The client reads slower than events come: end the watch (gracefully if the
            handler gets to run, else by closing the connection), as the cacher does."""
            log.info("closing a watch of %s that fell %d events behind", t.resource.plural, watch.limit)
            wake.set()
            if transport is not None:
                asyncio.get_running_loop().call_later(2.0, abort_unless, ended, transport)

        watch.on_overflow = fell_behind
        last_sent = self.store.resource_version
        aborted = False
        try:
            try:
                await self.commit.durable()  # the initial list holds only what is stored
            except StorageError as exc:
                await send("ERROR", exc.status())
                return resp
            await write_lines(line(ADDED, self._out(t, o)) for o in initial)
            initial = []
            if initialized is not None:
                initialized()
            while not self._closing.is_set() and not watch.overflowed:
                # the events that piled up since the last wake-up go out in one chunk: one TLS
                # record and one read on the other side instead of one per event
                batch = []
                for ev in watch.drain():
                    out = visible(ev, namespace, labels, fields)
                    if out is not None:
                        if as_table:
                            batch.append(line(out[0], self._out(t, out[1])))
                        else:  # the same line for every watcher of this version
                            wire = ev.wire
                            if wire is None:
                                wire = ev.wire = self._keep_lines(ev)
                            key = (out[0], t.resource.group_version)  # as this version serves it
                            data = wire.get(key)
                            if data is None:
                                data = wire[key] = line(out[0], self._out(t, out[1]))
                            batch.append(data)
                    last_sent = ev.resource_version
                if watch.overflowed:
                    break
                if batch:  # the store hands watchers committed events only
                    await write_lines(batch)
                    batch = []
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                wake.clear()
                if watch:
                    continue
                try:
                    await asyncio.wait_for(wake.wait(), min(remaining, BOOKMARK_EVERY))
                except TimeoutError:
                    if bookmarks and not watch:
                        rv = max(last_sent, self.store.resource_version)
                        await send(
                            "BOOKMARK",
                            {
                                "kind": t.resource.kind,
                                "apiVersion": t.resource.group_version,
                                "metadata": {"resourceVersion": str(rv)},
                            },
                        )
        except _WatchEnded:
            aborted = True
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            ended.set()
            self.store.stop_watch(watch)
            self._wakes.discard(wake)
            memory.release_soon()  # what its writes buffered goes back to the system
        if not aborted:
            with contextlib.suppress(ConnectionResetError, TimeoutError):
                await asyncio.wait_for(resp.write_eof(), WATCH_WRITE_STALL)
        return resp


def check_list_options(q: Any) -> None:
    """``ValidateListOptions`` for a list: resourceVersionMatch only with a resourceVersion, never
    with continue, Exact or NotOlderThan, and Exact not at "0"; a 422 on ``ListOptions.meta.k8s.io``."""
    match = q.get("resourceVersionMatch")
    if not match:
        return
    causes: list[tuple[str, str]] = []
    if not q.get("resourceVersion"):
        causes.append(
            ("FieldValueForbidden", "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided")
        )
    if q.get("continue"):
        causes.append(("FieldValueForbidden", "Forbidden: resourceVersionMatch is forbidden when continue is provided"))
    if match not in ("Exact", "NotOlderThan"):
        supported = 'supported values: "Exact", "NotOlderThan", ""'
        causes.append(("FieldValueNotSupported", f"Unsupported value: {json.dumps(match)}: {supported}"))
    if match == "Exact" and q.get("resourceVersion") == "0":
        causes.append(
            ("FieldValueForbidden", 'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"')
        )
    if not causes:
        return
    listed = [f"resourceVersionMatch: {m}" for _, m in causes]
    shown = listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]"
    raise Invalid(
        f'ListOptions.meta.k8s.io "" is invalid: {shown}',
        details={
            "group": "meta.k8s.io",
            "kind": "ListOptions",
            "causes": [{"reason": r, "message": m, "field": "resourceVersionMatch"} for r, m in causes],
        },
    )


def resource_version(text: str) -> int:
    """A resourceVersion is an unsigned revision (``storage.APIObjectVersioner.ParseResourceVersion``);
    anything else is the storage layer's InvalidError, which list and watch answer with 400."""
    if not (text.isascii() and text.isdigit()) or int(text) >= 1 << 64:
        why = "value out of range" if text.isascii() and text.isdigit() else "invalid syntax"
        raise BadRequest(
            f"resourceVersion: Invalid value: {json.dumps(text)}: strconv.ParseUint: parsing {json.dumps(text)}: {why}"
        )
    return int(text)


class TooLargeResourceVersion(ApiError):
    """A list at a revision the store has not reached: 504 Timeout, as the watch cache answers
    once its wait for that revision runs out (``storage.NewTooLargeResourceVersionError``)."""

    code = 504
    reason = "Timeout"

    def __init__(self, asked: int, current: int) -> None:
        super().__init__(
            f"Timeout: Too large resource version: {asked}, current: {current}",
            details={
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1,
            },
        )


def encode_continue(rv: int, start: int) -> str:
    return base64.urlsafe_b64encode(dumps({"rv": rv, "start": start})).decode()


def decode_continue(token: str, compacted: int) -> tuple[int, int]:
    try:
        value = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        rv, start = int(value["rv"]), int(value["start"])
    except (binascii.Error, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        raise BadRequest(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        ) from None
    if rv < compacted:
        raise Expired(
            "The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter."
        )
    return start, rv


def visible(ev: WatchEvent, namespace: str | None, labels: Any, fields: Any) -> tuple[str, dict[str, Any]] | None:
    """The event a watcher with these selectors sees (``selected_type``)."""
    obj = ev.obj
    if namespace is not None and ((obj.get("metadata") or {}).get("namespace") or "") != namespace:
        return None
    if not labels and not fields:
        return ev.type, obj
    seen = selected_type(ev.type, obj, ev.old, lambda o: labels_match(labels, o) and fields_match(fields, o))
    return None if seen is None else (seen, obj)


def abort_unless(ended: asyncio.Event, transport: asyncio.BaseTransport) -> None:
    """Abort a watch's connection unless its handler ended the response meanwhile."""
    # a write transport, though not always a subclass of asyncio's (uvloop's TLS transport)
    abort = getattr(transport, "abort", None)
    if not ended.is_set() and callable(abort):
        abort()
