"""Random `livecam run` command lines, each run as a real child process: how many end
cleanly (exit 0), with a one-line error (exit 2, one ``error:`` line and at most a
``fix:`` line), with exit 1 and a clean message (an output failed), a signal status, a
traceback, or a hang (no end within --timeout seconds).

Usage: python bench/fuzz_cli.py [--runs N] [--seed S] [--timeout SECONDS] [--jobs J]

The options and their choices come from the real parser (``livecam run``'s every option,
the debug knobs included); values are drawn from the option's choices and from a pool
of good and hostile values (numbers at and past the edges, NaN, empty and blank strings,
300-character names, folders, devices, missing folders, real photos and clips from
../shared/testdata when present). Every run gets ``--frames 1..3`` unless it draws its
own, and the synthetic source, a 160x120 size and the null sink unless it draws another
one. Runs have no display, stdin from /dev/null, and their own cache and data folders
(a drawn --accept-licence writes there, never into the user's). Prints the counts and
every command line that ended in a traceback, a hang or another unexpected way.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from livecam.cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
TESTDATA = Path(os.environ.get("LIVECAM_TESTDATA", REPO.parent / "shared" / "testdata"))
LONG = "a" * 300
#: values any option may draw ({tmp} etc. are filled in per run)
POOL = [
    "0", "1", "2", "3", "-1", "30", "60", "1000000001", "0.5", "1e-300", "1e300", "nan",
    "inf", "x", "", " ", LONG, "160x120", "15x15", "0,0,0,101", "{tmp}", "{tmp}/o.mp4",
    "{tmp}/o.png", "{tmp}/s.json", "{tmp}/s.txt", "{tmp}/missing/deeper/o.mp4",
    "{tmp}/new/o.mkv", "{tmp}/garbage.jpg", "{face}", "{image}", "{video}", "/dev/null",
    "/dev/zero", "-", "synthetic", "null", "camera:7", "screen", "{face}={face}", "=",
]  # fmt: skip
#: options every run has unless it draws its own
BASE = {"--source": "synthetic", "--size": "160x120", "--sink": "null"}
#: options left out: they would wait for a person (stdin commands read /dev/null and end;
#: hotkeys and the help are fine but add nothing)
LEFT_OUT = {"-h", "--help", "--help-debug", "--hotkeys"}


def run_options() -> list[tuple[str, bool, list[str] | None]]:
    """(option, takes a value, its choices or None) of every option of `livecam run`."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    run = sub.choices["run"]
    found = []
    for action in run._actions:
        for option in action.option_strings:
            if option.startswith("--") and option not in LEFT_OUT:
                choices = [str(c) for c in action.choices] if action.choices else None
                found.append((option, action.nargs != 0, choices))
    return found


def draw(rng: random.Random, options: list[tuple[str, bool, list[str] | None]]) -> list[str]:
    """One command line (with placeholders)."""
    picked = rng.sample(options, rng.randint(1, 4))
    args = ["run", "-q"]
    given = {o for o, _, _ in picked}
    if "--frames" not in given:
        args += ["--frames", rng.choice(["1", "2", "3"])]
    for option, value in BASE.items():
        if option not in given:
            args += [option, value]
    for option, takes, choices in picked:
        if not takes:
            args.append(option)
        elif choices and rng.random() < 0.7:
            args += [option, rng.choice(choices)]
        else:
            args += [option, rng.choice(POOL)]
    return args


def classify(code: int | None, err: str) -> str:
    if code is None:
        return "hang"
    if "Traceback" in err or "unexpected" in err:
        return "traceback"
    lines = [line for line in err.splitlines() if not line.startswith(("INFO ", "WARNING "))]
    errors = [i for i, line in enumerate(lines) if line.startswith("error:")]
    if code == 0:
        return "ok" if not errors else "other"
    if code in (2, 1) and len(errors) == 1:
        tail = lines[errors[0] + 1 :]
        clean = all(line.startswith(("  fix: ", "- ")) for line in tail)
        return ("clean error" if code == 2 else "exit 1, clean") if clean else "other"
    if code == 1 and errors:  # a run whose outputs failed lists each
        return "exit 1, clean"
    return "other"


def run_one(args: list[str], timeout: float) -> tuple[list[str], str, str]:
    with tempfile.TemporaryDirectory(prefix="livecam-fuzz-") as tmp:
        (Path(tmp) / "garbage.jpg").write_bytes(b"not an image")
        places = {
            "{tmp}": tmp,
            "{face}": str(REPO / "assets" / "grace_hopper.jpg"),
            "{image}": str(TESTDATA / "faces" / "obama_small_320x240.jpg"),
            "{video}": str(TESTDATA / "video" / "openmpf_video_01_short_h264_aac.mp4"),
        }
        argv = []
        for a in args:
            for key, value in places.items():
                a = a.replace(key, value)
            argv.append(a)
        env = {
            **os.environ,
            "LIVECAM_CACHE_DIR": str(Path(tmp) / "cache"),
            "XDG_DATA_HOME": str(Path(tmp) / "data"),
        }
        for name in ("DISPLAY", "WAYLAND_DISPLAY"):
            env.pop(name, None)
        command = [sys.executable, "-m", "livecam", *argv]
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
            kind, err = classify(done.returncode, done.stderr), done.stderr
        except subprocess.TimeoutExpired as e:
            stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else ""
            kind, err = "hang", stderr or ""
        return argv, kind, err


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=250)
    p.add_argument("--seed", type=int, default=19)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--jobs", type=int, default=2)
    a = p.parse_args()
    rng = random.Random(a.seed)
    options = run_options()
    cases = [draw(rng, options) for _ in range(a.runs)]
    counts: Counter[str] = Counter()
    odd: list[str] = []
    with ThreadPoolExecutor(a.jobs) as pool:
        for argv, kind, err in pool.map(lambda c: run_one(c, a.timeout), cases):
            counts[kind] += 1
            if kind in ("traceback", "hang", "other"):
                odd.append(f"[{kind}] livecam {shlex.join(argv)}\n{err[-1500:]}")
    print(f"{a.runs} random `livecam run` command lines ({len(options)} options, seed {a.seed})")
    for kind in ("ok", "clean error", "exit 1, clean", "traceback", "hang", "other"):
        print(f"  {kind}: {counts[kind]}")
    for text in odd:
        print(text)


if __name__ == "__main__":
    main()
