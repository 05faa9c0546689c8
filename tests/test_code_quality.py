"""The code gates of the house, run with the suite so that one command (the README's, which
`.ci/run` runs) checks everything: ruff's lint and format rules and mypy over livecam, ui,
tests and bench (the product held to --strict's flags, see pyproject.toml). The gates start
as soon as the suite is collected and run beside it (tests/code_gates.py)."""

from __future__ import annotations

import code_gates
import pytest


@pytest.mark.parametrize("gate", list(code_gates.GATES))
@pytest.mark.timeout(660)  # a cold mypy of the whole tree on 2 loaded cores
def test_the_code_passes_the_gate(gate: str, pytestconfig: pytest.Config) -> None:
    code, output = code_gates.result(pytestconfig, gate)
    assert code == 0, f"{' '.join(code_gates.GATES[gate])} failed:\n{output}"
