"""Print a pip constraints file pinning every direct dependency (and the test and docs extras) to the
lowest version pyproject.toml allows, for checking that those lower bounds are true:

    python scripts/lowest_constraints.py > /tmp/lowest.txt
    python -m venv /tmp/low && /tmp/low/bin/pip install -c /tmp/lowest.txt -e '.[test,docs]' -e plugins/gpushare
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
extras = project["optional-dependencies"]
for requirement in [*project["dependencies"], *extras["test"], *extras["docs"]]:
    match = re.fullmatch(r"([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*>=\s*([0-9][^,;\s]*)", requirement.strip())
    if match:
        print(f"{match.group(1)}=={match.group(2)}")
