"""Run from a source checkout: the package's src/ on the path (an installed package needs nothing)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
