"""The command blocks of the README and docs/: parsed, run, and their output compared in shape.

A fenced block whose info string is ``console`` is run: each ``$ `` line is a command (a line ending
in ``\\`` continues it), the lines after it up to the next command are its expected output. In the
expected output, a line that is only ``…`` stands for any number of lines, and ``…`` within a line for
any text; trailing spaces do not count. A command exits 0 unless it ends with ``# exit N``. Blocks of
other languages that show ``$ kubesched`` are not run and must say why, in an HTML comment
``<!-- not run: REASON -->`` on the line before the fence.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ELLIPSIS = "…"
FENCE = re.compile(r"^(\s*)(```+)(\S*)")
EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")


@dataclass
class Command:
    line: int  # 1-based line of the page
    text: str
    expected: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        m = EXIT.search(self.text)
        return int(m.group(1)) if m else 0


@dataclass
class Block:
    page: Path
    line: int
    language: str
    lines: list[str]
    reason: str = ""  # from <!-- not run: ... -->

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def commands(self) -> list[Command]:
        out: list[Command] = []
        pending = ""
        for offset, raw in enumerate(self.lines):
            if pending:
                pending += "\n" + raw
                if not raw.endswith("\\"):
                    out[-1].text = pending
                    pending = ""
                continue
            if raw.startswith("$ "):
                out.append(Command(self.line + 1 + offset, raw[2:]))
                if raw.endswith("\\"):
                    pending = raw[2:]
            elif out:
                out[-1].expected.append(raw)
        return out


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(text):
        m = FENCE.match(text[i])
        if not m:
            i += 1
            continue
        fence, language = m.group(2), m.group(3)
        start = i
        i += 1
        body = []
        while i < len(text) and not text[i].lstrip().startswith(fence):
            body.append(text[i])
            i += 1
        before = text[start - 1].strip() if start else ""
        reason = before[len("<!-- not run:") : -len("-->")].strip() if before.startswith("<!-- not run:") else ""
        out.append(Block(page, start + 1, language, body, reason))
        i += 1
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` has ``expected``'s shape (``…`` lines and ``…`` within lines)."""
    exp = [e.rstrip() for e in expected]
    act = [a.rstrip() for a in actual]
    while exp and not exp[-1]:
        exp.pop()
    while act and not act[-1]:
        act.pop()
    patterns = [None if e.strip() == ELLIPSIS else _line(e) for e in exp]
    memo: dict[tuple[int, int], bool] = {}

    def go(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[i, j]
        if i == len(patterns):
            ok = j == len(act)
        elif patterns[i] is None:
            ok = go(i + 1, j) or (j < len(act) and go(i, j + 1))
        else:
            pattern = patterns[i]
            assert pattern is not None
            ok = j < len(act) and pattern.fullmatch(act[j]) is not None and go(i + 1, j + 1)
        memo[i, j] = ok
        return ok

    return go(0, 0)


def _line(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.split(ELLIPSIS)))


def environment() -> dict[str, str]:
    """kubesched on PATH (this interpreter's), a wide terminal for rich's tables, no colour."""
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "COLUMNS": "200",
        "NO_COLOR": "1",
        "TERM": "dumb",
    }


def workdir(tmp: Path) -> Path:
    """A directory where the examples are where the docs say (``examples/``), and writes land apart."""
    (tmp / "examples").symlink_to(ROOT / "examples")
    return tmp


def run(command: Command, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", "set -o pipefail; " + command.text],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
