"""A snapshot as one file every planning command reads (``simulate SNAPSHOT EXTRA.yaml``),
written page by page as the lists are read: YAML documents after a header of comments saying where,
when and at which revision it was taken (what it holds closes the file), or, for a ``.json``
file, one ``List`` (decoded in one call when read: the fast form for large clusters)."""

from __future__ import annotations

import datetime
from typing import IO, Any

import orjson
import yaml

from kubesched.snapshot.anonymize import Anonymizer
from kubesched.snapshot.normalize import for_create
from kubesched.snapshot.reader import Listed, Snapshot

_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def origin(snap: Snapshot) -> str:
    taken = datetime.datetime.fromtimestamp(snap.taken, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    at = f"resourceVersion {snap.resource_version}" if snap.resource_version else "the newest revision"
    return f"kubesched snapshot of {snap.server} ({snap.server_version}), taken {taken} at {at}"


def summary(snap: Snapshot) -> list[str]:
    """What the snapshot holds, and what it lacks."""
    counts = ", ".join(f"{n} {plural}" for plural, n in snap.counts.items() if n)
    if snap.finished_pods:
        counts += f" ({snap.finished_pods} pods finished: the scheduler does not count them)"
    lines = [counts]
    if not snap.consistent:
        lines.append(
            f"the server no longer held resourceVersion {snap.resource_version}: "
            "some lists were read at their newest revision"
        )
    if snap.skipped:
        lines.append("not in the snapshot: " + ", ".join(f"{r} ({why})" for r, why in snap.skipped.items()))
    return lines


class Writer:
    """Writes pages to ``out`` as they are read; ``close`` ends the file."""

    def __init__(
        self,
        out: IO[str],
        as_json: bool = False,
        anonymizer: Anonymizer | None = None,
        first: list[dict[str, Any]] | None = None,
    ) -> None:
        self.out = out
        self.as_json = as_json
        self.anonymizer = anonymizer
        self.first = first or []  # documents before the cluster's (the scheduler's configuration)
        self.written = 0
        self._started = False

    def page(self, snap: Snapshot, listed: Listed, items: list[dict[str, Any]]) -> None:
        if not self._started:
            self._started = True
            if self.as_json:
                self.out.write('{"apiVersion":"v1","kind":"List","items":[\n')
            else:
                self.out.write(f"# {origin(snap)}\n")
            for doc in self.first:
                self._write(doc)
        for obj in items:
            doc = for_create(obj)
            if self.anonymizer is not None:
                doc = self.anonymizer.apply(doc)
            self._write(doc)

    def _write(self, doc: dict[str, Any]) -> None:
        if self.as_json:
            self.out.write(("," if self.written else "") + orjson.dumps(doc).decode() + "\n")
        else:
            self.out.write("---\n")
            self.out.write(yaml.dump(doc, Dumper=_DUMPER, sort_keys=False, allow_unicode=True))
        self.written += 1

    def close(self, snap: Snapshot) -> None:
        if self.as_json:
            if not self._started:
                self.out.write('{"apiVersion":"v1","kind":"List","items":[\n')
            meta = {"resourceVersion": snap.resource_version} if snap.consistent else {}
            said = {"origin": origin(snap), "summary": summary(snap)}
            self.out.write(f'],"metadata":{orjson.dumps(meta).decode()},"snapshot":{orjson.dumps(said).decode()}}}\n')
        else:
            if not self._started:
                self.out.write(f"# {origin(snap)}\n")
            for line in summary(snap):
                self.out.write(f"# {line}\n")
