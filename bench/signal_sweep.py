"""Ctrl-C and SIGTERM delivered at many moments of a real `livecam run`'s start-up and
first seconds: how many end cleanly (exit 130 / 143, at most one line that is not INFO,
no traceback, within --grace seconds of the signal), how many ran on as if no signal
came (a swallowed signal), ended by another signal (a crash such as SIGSEGV), printed a
traceback or hung.

Usage: python bench/signal_sweep.py [--runs N] [--until SECONDS] [--jobs J] [--seed S]

Run i gets its signal at ``(i + jitter) / runs * until`` seconds after the process
started (SIGINT and SIGTERM alternate), so the deliveries cover the imports, the model
loads (the lite preset's bundled models, a face photo) and the stream's first frames.
The run itself would last 20 s (600 frames at 30 fps): only the signal ends it early.
Prints the counts and every run that did not end cleanly.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FACE = REPO / "assets" / "grace_hopper.jpg"
COMMAND = ["run", "--source", "synthetic", "--size", "160x120", "--sink", "null", "-q"]
COMMAND += ["--face", str(FACE), "--frames", "600"]


def classify(code: int | None, err: str, signum: int) -> str:
    if code is None:
        return "hang"
    if "Traceback" in err or "unexpected" in err:
        return "traceback"
    if code == 0:
        return "ran on"
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    said = [line for line in err.splitlines() if line.strip() and not line.startswith("INFO ")]
    if code == 128 + signum and len(said) <= 1:
        return "clean"
    return "other"


def default_signals() -> None:
    """The child starts with the default SIGINT and SIGTERM actions: a sweep started in
    the background of a shell would hand down an ignored SIGINT, and a signal before
    LiveCam's handlers would then be ignored (counted as a hang) instead of ending it."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


def deliver(at_s: float, signum: int, grace: float) -> tuple[str, str]:
    with tempfile.TemporaryDirectory(prefix="livecam-signals-") as tmp:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "LIVECAM_CACHE_DIR": f"{tmp}/cache"}
        env.pop("DISPLAY", None)
        proc = subprocess.Popen(
            [sys.executable, "-m", "livecam", *COMMAND],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=tmp,
            preexec_fn=default_signals,
        )
        try:
            try:
                proc.wait(at_s)  # it may end first (it should not: 20 s of frames)
            except subprocess.TimeoutExpired:
                proc.send_signal(signum)
            try:
                _out, err = proc.communicate(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                _out, err = proc.communicate()
                return "hang", err
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return classify(proc.returncode, err, signum), err


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=168)
    p.add_argument("--until", type=float, default=4.0, help="the last delivery, seconds")
    p.add_argument("--grace", type=float, default=30.0, help="seconds a run may take to end")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=27)
    a = p.parse_args()
    rng = random.Random(a.seed)
    plan = [
        ((i + rng.random()) / a.runs * a.until, (signal.SIGINT, signal.SIGTERM)[i % 2])
        for i in range(a.runs)
    ]
    started = time.monotonic()
    counts: Counter[str] = Counter()
    odd: list[str] = []
    with ThreadPoolExecutor(a.jobs) as pool:
        results = pool.map(lambda d: deliver(d[0], d[1], a.grace), plan)
        for (at_s, signum), (kind, err) in zip(plan, results, strict=True):
            counts[kind] += 1
            if kind != "clean":
                name = signal.Signals(signum).name
                odd.append(f"[{kind}] {name} at {at_s:.3f} s\n{err[-1200:]}")
    print(
        f"{a.runs} signals in the first {a.until:g} s of `livecam {' '.join(COMMAND[:3])} ...` "
        f"({time.monotonic() - started:.0f} s)"
    )
    for kind, n in sorted(counts.items(), key=lambda kv: (kv[0] != "clean", kv[0])):
        print(f"  {kind}: {n}")
    for text in odd:
        print(text)


if __name__ == "__main__":
    main()
