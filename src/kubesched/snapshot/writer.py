"""A snapshot as one file of manifests: a header of comments saying where, when and at which
revision it was taken and what it holds, then every object in create order; any planning command
reads it as it reads manifests (``simulate SNAPSHOT EXTRA.yaml``)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import IO, Any

import yaml

from kubesched.snapshot.normalize import for_create
from kubesched.snapshot.reader import Snapshot

_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
TERMINAL = ("Succeeded", "Failed")


def header(snap: Snapshot) -> list[str]:
    taken = datetime.datetime.fromtimestamp(snap.taken, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    at = f"resourceVersion {snap.resource_version}" if snap.resource_version else "each list's newest revision"
    counts = [f"{len(objs)} {listed.plural}" for listed, objs in snap.objects.items() if objs]
    pods = next((objs for listed, objs in snap.objects.items() if listed.plural == "pods"), [])
    finished = sum(1 for p in pods if (p.get("status") or {}).get("phase") in TERMINAL)
    lines = [
        f"kubesched snapshot of {snap.server} ({snap.server_version}), taken {taken} at {at}",
        ", ".join(counts) + (f" ({finished} pods finished: the scheduler does not count them)" if finished else ""),
    ]
    if snap.skipped:
        lines.append("not in the snapshot: " + ", ".join(f"{r} ({why})" for r, why in snap.skipped.items()))
    return lines


def documents(snap: Snapshot) -> Iterator[dict[str, Any]]:
    for objs in snap.objects.values():
        for obj in objs:
            yield for_create(obj)


def write(snap: Snapshot, out: IO[str]) -> int:
    """Write the file; the number of objects written."""
    for line in header(snap):
        out.write(f"# {line}\n")
    n = 0
    for doc in documents(snap):
        out.write("---\n")
        out.write(yaml.dump(doc, Dumper=_DUMPER, sort_keys=False, default_flow_style=False, allow_unicode=True))
        n += 1
    return n
