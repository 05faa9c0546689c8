"""A signal at any of many points of a run's start-up stops the run: SIGTERM is sent to
this process (a timer, in process: no new interpreter per delivery) at 300 moments spread
evenly over a warm in-process `livecam run`'s start-up (the config, the app, the source,
the sinks, up to the stream running), enough to catch a signal lost one time in 300
(seen: raised inside a weakref callback, where Python discards it, the run went on for
all its frames). Each run must end with 143 before its last frame, without a traceback.
The imports themselves are covered by test_start_signals (real processes)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from livecam.app import App
from livecam.cli.main import main
from livecam.cli.signals import stop_behind, stop_signals

FRAMES = 90  # 3 s at 30 fps: a run whose signal was lost delivers them all
DELIVERIES = int(os.environ.get("SWEEP_DELIVERIES", "300"))


def run_args(stats: Path) -> list[str]:
    return ["run", "--source", "synthetic", "--size", "64x48", "--sink", "null", "-q"] + [
        "--frames",
        str(FRAMES),
        "--stats-json",
        str(stats),
    ]


def seconds_of_a_start(stats: Path, monkeypatch: pytest.MonkeyPatch) -> float:
    """How long `livecam run` takes from its call until the stream runs (the main
    thread's first wait for the end), warm (a first run imports what later runs reuse)."""
    started: list[float] = []
    wait = App.wait

    def first_wait(app: App, timeout: float | None = None) -> bool:
        started.append(time.perf_counter())
        return wait(app, timeout)

    monkeypatch.setattr(App, "wait", first_wait)
    for _ in range(2):
        started.clear()
        begin = time.perf_counter()
        assert main([*run_args(stats)[:-4], "--frames", "2"]) == 0
    monkeypatch.setattr(App, "wait", wait)
    return started[0] - begin


def run_as_the_entry_point(args: list[str], after_s: float) -> int:
    """``main(args)`` as ``python -m livecam`` runs it (its signal handlers from the first
    call on), with SIGTERM sent to this process ``after_s`` seconds in; the exit status."""
    with stop_signals():
        try:
            signal.setitimer(signal.ITIMER_REAL, after_s)
            try:
                return main(args)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException as e:
            stop = stop_behind(e)
            if stop is None:
                raise
            return stop.exit_code


@pytest.mark.timeout(900)
def test_sigterm_at_any_of_300_points_of_the_start_stops_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stats = tmp_path / "stats.json"
    start_s = seconds_of_a_start(stats, monkeypatch)
    previous = signal.signal(signal.SIGALRM, lambda *_: os.kill(os.getpid(), signal.SIGTERM))
    failures = []
    try:
        for i in range(DELIVERIES):
            at_s = (i + 0.5) / DELIVERIES * start_s
            stats.unlink(missing_ok=True)
            code = run_as_the_entry_point(run_args(stats), at_s)
            err = capsys.readouterr().err
            frames = json.loads(stats.read_text())["frames_out"] if stats.exists() else 0
            if code != 143 or frames >= FRAMES or "Traceback" in err:
                failures.append(
                    f"at {at_s * 1000:.1f} of {start_s * 1000:.0f} ms: exit {code}, "
                    f"{frames} frames\n{err}"
                )
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not failures, f"{len(failures)} of {DELIVERIES}:\n" + "\n".join(failures[:5])
