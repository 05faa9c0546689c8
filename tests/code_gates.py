"""The code gates (ruff's lint and format rules, mypy) as child processes that start when
pytest has collected the suite and run beside the other tests, niced, so that a cold mypy
of the whole tree (about 100 s on 2 cores) overlaps tests that mostly wait on servers,
windows and clocks. `tests/test_code_quality.py` collects their results; run alone, it
starts them itself."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

REPO = Path(__file__).resolve().parents[1]
TREES = ["livecam", "ui", "tests", "bench"]
GATES: dict[str, list[str]] = {
    "ruff-check": ["ruff", "check", *TREES],
    "ruff-format": ["ruff", "format", "--check", *TREES],
    "mypy": ["mypy", *TREES],
}
TIMEOUT_S = 600


@dataclass
class RunningGate:
    """One gate's child process and the file that takes its output."""

    command: list[str]
    process: subprocess.Popen[bytes]
    output: IO[bytes]

    def result(self) -> tuple[int, str]:
        """Wait for the gate (up to TIMEOUT_S) and give its exit status and output."""
        try:
            code = self.process.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return -1, f"{' '.join(self.command)} ran past {TIMEOUT_S} s"
        self.output.seek(0)
        text = self.output.read().decode(errors="replace")
        self.output.close()
        return code, text


def start(name: str) -> RunningGate:
    """Start one gate over the repository, niced below the tests it runs beside."""
    command = GATES[name]
    output = tempfile.TemporaryFile()  # noqa: SIM115 (closed by result or stop_unfinished)
    process = subprocess.Popen(
        [sys.executable, "-m", *command],
        cwd=REPO,
        stdout=output,
        stderr=subprocess.STDOUT,
        preexec_fn=lambda: os.nice(10),
    )
    return RunningGate(command, process, output)


STARTED = pytest.StashKey[dict[str, RunningGate]]()


def start_if_selected(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start the gates at once when the session will run their test."""
    if any(Path(str(item.path)).name == "test_code_quality.py" for item in items):
        config.stash[STARTED] = {name: start(name) for name in GATES}


def result(config: pytest.Config, name: str) -> tuple[int, str]:
    """The gate's exit status and output, from the run started with the session if any."""
    started = config.stash.get(STARTED, {})
    gate = started.pop(name, None) or start(name)
    return gate.result()


def stop_unfinished(config: pytest.Config) -> None:
    """End the gates whose test did not run (a session stopped early, a deselection)."""
    for gate in config.stash.get(STARTED, {}).values():
        gate.process.kill()
        gate.process.wait()
        gate.output.close()
