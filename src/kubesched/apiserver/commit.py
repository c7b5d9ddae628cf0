"""Group commit: the writes of one event-loop iteration are committed to the backend together,
and no request is answered before what it wrote (or read) is durable."""

from __future__ import annotations

import asyncio
import logging

from kubesched.cluster.store import StorageError, Store

log = logging.getLogger("kubesched.apiserver")


class GroupCommit:
    """Commits a Store's backend once per loop iteration that wrote; ``durable`` waits for it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._commit: asyncio.Future[None] | None = None
        if store.backend is not None:
            store.commit_soon = self._schedule

    def _schedule(self) -> None:
        """The backend recorded a first write since its last commit: commit once the writes
        of this loop iteration are in (every handler that is ready runs first)."""
        asyncio.get_running_loop().call_soon(self._run)

    def _run(self) -> None:
        waiter, self._commit = self._commit, None
        try:
            self.store.commit()
        except StorageError as exc:  # the disk failed: the writes are not acknowledged
            log.error("committing to the backend failed: %s", exc.__cause__)
            if waiter is not None and not waiter.done():
                waiter.set_exception(exc)
            return
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def durable(self) -> None:
        """Wait until every write made so far is committed (StorageError if the commit failed)."""
        if not self.store.pending():
            return
        if self._commit is None:
            self._commit = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._commit)
