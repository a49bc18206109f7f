"""Make the shared wire-model strategies (tests/wire/wire_strategies.py) importable here."""

import sys
from pathlib import Path

_WIRE_TESTS = str(Path(__file__).resolve().parents[1] / "wire")
if _WIRE_TESTS not in sys.path:
    sys.path.insert(0, _WIRE_TESTS)
