"""What the README and docs/ say works: every ``console`` block's commands run from a directory
where ``examples/`` is, exit as shown and print output of the shape shown; a block not run says
why; the guide builds as a site with every internal link resolved (MkDocs ``--strict``); the README
stays one or two screens and its links point at files that exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from docs_blocks import ROOT, Block, blocks, matches, pages, run, workdir

CONSOLE = [b for p in pages() for b in blocks(p) if b.language == "console"]
README_MAX_LINES = 200


@pytest.mark.parametrize("block", CONSOLE, ids=[b.where for b in CONSOLE])
def test_console_block(block: Block, tmp_path: Path) -> None:
    commands = block.commands()
    assert commands, f"{block.where}: a console block with no '$ ' command"
    cwd = workdir(tmp_path)
    for command in commands:
        done = run(command, cwd)
        where = f"{block.page.relative_to(ROOT)}:{command.line}: $ {command.text}"
        assert done.returncode == command.exit_code, f"{where}\nexit {done.returncode}\n{done.stderr}"
        actual = (done.stdout + done.stderr).splitlines()
        assert matches(command.expected, actual), (
            f"{where}\n--- the page shows:\n" + "\n".join(command.expected) + "\n--- it printed:\n" + "\n".join(actual)
        )


def test_blocks_not_run_say_why() -> None:
    silent = [
        b.where
        for p in pages()
        for b in blocks(p)
        if b.language != "console" and any(line.startswith("$ ") for line in b.lines) and not b.reason
    ]
    assert silent == [], "blocks with commands that are neither run (console) nor say why they are not"


def test_some_blocks_run() -> None:
    """The README's tour is run, not only described (a renamed fence would silently skip it)."""
    readme = [b for b in CONSOLE if b.page.name == "README.md"]
    assert len(readme) >= 3 and len(CONSOLE) >= 10


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        (["a", "b"], ["a", "b"], True),
        (["a", "b"], ["a", "c"], False),
        (["a", "…"], ["a", "b", "c"], True),
        (["a", "…", "d"], ["a", "d"], True),
        (["a", "…", "d"], ["a", "b", "c"], False),
        (["wall …, … pods/s"], ["wall 0.01s, 1,956 pods/s"], True),
        (["wall …s"], ["wall 0.01s extra"], False),
        (["a  "], ["a"], True),
        (["a"], ["a", "b"], False),
        (["a", ""], ["a"], True),
    ],
)
def test_the_shape_matcher(expected: list[str], actual: list[str], ok: bool) -> None:
    assert matches(expected, actual) is ok


def test_the_site_builds_with_every_link_resolved(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "planning" / "index.html").exists()


def test_the_readme_is_short_and_its_links_exist() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    missing = [
        target
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
        if "://" not in target and not (ROOT / target).exists()
    ]
    assert missing == []
