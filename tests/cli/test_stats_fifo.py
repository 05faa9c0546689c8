"""``--stats-json`` naming a FIFO: with a reader the stats go through it; with nobody
reading, the run still ends at once with one line saying so (it used to block after the
run, without its summary, until a reader appeared)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from livecam.cli.main import main

RUN = ["run", "--source", "synthetic", "--size", "160x120", "--frames", "3", "--sink", "null"]


def test_stats_into_a_fifo_nobody_reads_end_the_run_with_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "stats"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "livecam", *RUN, "-q", "--stats-json", str(fifo)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,  # a run that waits for a reader fails here
    )
    assert done.returncode == 1, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert str(fifo) in line and "a pipe (FIFO) that nobody reads" in line, line


def test_stats_into_a_fifo_with_a_reader_go_through(tmp_path: Path) -> None:
    fifo = tmp_path / "stats"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as f:  # opened before the run ends: a reader is there
            got.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert main([*RUN, "-q", "--stats-json", str(fifo)]) == 0
    reader.join(30)
    assert json.loads(got[0])["frames_out"] >= 3
