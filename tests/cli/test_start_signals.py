"""Ctrl-C and SIGTERM at every moment of start-up, sent to a real `livecam run` process:
while numpy and onnxruntime are imported (a signal inside onnxruntime's pybind11 import
used to surface as ``ImportError: initialization failed`` and a traceback, exit 1), while
a model file is read and while the source video is opened. Each exits 130 / 143 with at
most one line and no traceback, through ``python -m livecam`` and the console script.

The moments are found by watching the process (its mapped libraries and open files in
/proc), not by timing; a few short delays after a marker spread the signals over the
import that follows it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import missing

REPO = Path(__file__).resolve().parents[2]
FACE = REPO / "assets" / "grace_hopper.jpg"
SCRIPT = Path(sys.executable).with_name("livecam")
#: a run that never ends by itself: only the signal stops it
ENDLESS = ["--source", "synthetic", "--size", "160x120", "--sink", "null", "-q"]


def mapped(name: str) -> Callable[[int], bool]:
    """The process has mapped a library whose path contains ``name``."""
    return lambda pid: name in Path(f"/proc/{pid}/maps").read_text()


def opened(suffix: str) -> Callable[[int], bool]:
    """The process has a file ending in ``suffix`` open."""

    def check(pid: int) -> bool:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                if os.readlink(fd).endswith(suffix):
                    return True
            except OSError:  # closed meanwhile
                continue
        return False

    return check


def signal_at(
    command: list[str], marker: Callable[[int], bool], delay: float, signum: int, tmp: Path
) -> tuple[int, str, str]:
    """Start ``command``, wait until ``marker(pid)``, wait ``delay`` s, send ``signum``;
    (exit status, stdout, stderr)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "LIVECAM_CACHE_DIR": str(tmp / "cache")}
    env.pop("DISPLAY", None)
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp
    )
    try:
        give_up = time.monotonic() + 120  # not a timing check: a hung start fails here
        while proc.poll() is None and time.monotonic() < give_up:
            try:
                if marker(proc.pid):
                    break
            except OSError:  # the process is ending
                break
            time.sleep(0.0005)
        assert proc.poll() is None, f"it ended before the marker: {proc.communicate()}"
        time.sleep(delay)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, out, err


def check_stopped(code: int, err: str, signum: int) -> None:
    assert code == 128 + signum, err
    assert "Traceback" not in err and "Error" not in err, err
    said = [line for line in err.splitlines() if line.strip() and not line.startswith("INFO ")]
    assert len(said) <= 1, err  # the start's progress lines (INFO) and one "stopped" line


@pytest.fixture(autouse=True)
def _linux() -> None:
    if not Path("/proc/self/maps").is_file():
        missing("/proc (Linux), which shows what a process has loaded and opened")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize(
    ("library", "delay"),
    [("_multiarray_umath", 0.0), ("onnxruntime_pybind11_state", 0.0)]
    + [("onnxruntime_pybind11_state", d) for d in (0.005, 0.02, 0.06)],
)
def test_a_signal_during_the_imports_exits_cleanly(
    tmp_path: Path, library: str, delay: float, signum: int
) -> None:
    command = [sys.executable, "-m", "livecam", "run", *ENDLESS]
    code, _out, err = signal_at(command, mapped(library), delay, signum, tmp_path)
    check_stopped(code, err, signum)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_console_script_stops_cleanly_during_the_imports(tmp_path: Path, signum: int) -> None:
    if not SCRIPT.is_file():
        missing(f"the console script {SCRIPT} (pip install -e .)")
    command = [str(SCRIPT), "run", *ENDLESS]
    marker = mapped("onnxruntime_pybind11_state")
    code, _out, err = signal_at(command, marker, 0.01, signum, tmp_path)
    check_stopped(code, err, signum)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_a_model_loads_exits_cleanly(tmp_path: Path, signum: int) -> None:
    """The lite preset's models (bundled: no download) are read while the run starts."""
    command = [sys.executable, "-m", "livecam", "run", *ENDLESS, "--face", str(FACE)]
    code, out, err = signal_at(command, opened(".onnx"), 0.0, signum, tmp_path)
    check_stopped(code, err, signum)
    assert "frames in" not in out


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_source_opens_exits_cleanly(
    tmp_path: Path, testdata: Path, signum: int
) -> None:
    video = testdata / "video" / "openmpf_video_01_short_h264_aac.mp4"
    command = [sys.executable, "-m", "livecam", "run", "--source", str(video), "--loop"]
    command += ["--sink", "null", "-q"]
    code, _out, err = signal_at(command, opened(video.name), 0.0, signum, tmp_path)
    check_stopped(code, err, signum)
