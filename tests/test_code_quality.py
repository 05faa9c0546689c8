"""The code gates of the house, run with the suite so that one command (the README's, which
`.ci/run` runs) checks everything: ruff's lint and format rules and mypy over livecam, ui,
tests and bench (the product held to --strict's flags, see pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TREES = ["livecam", "ui", "tests", "bench"]


@pytest.mark.parametrize(
    "gate",
    [
        pytest.param(["ruff", "check", *TREES], id="ruff-check"),
        pytest.param(["ruff", "format", "--check", *TREES], id="ruff-format"),
        pytest.param(["mypy", *TREES], id="mypy"),
    ],
)
@pytest.mark.timeout(660)  # a cold mypy of the whole tree on 2 loaded cores
def test_the_code_passes_the_gate(gate: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", *gate], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{' '.join(gate)} failed:\n{done.stdout}{done.stderr}"
