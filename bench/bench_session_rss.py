"""RSS of a long live session with a change every 30 s (issue 26: RSS crept 6-7 MB a
minute in the panel, +62 MB in 9 minutes).

A real-time stream of a looping talking-head clip (testdata) through the lite swap into
the null sink and a recording, as the panel runs it; every ``--every`` seconds one live
change, in turn: another source face, Blank on/off, Freeze on/off, a quality setting, the
selection. RSS is sampled every ``--sample`` seconds on its own clock; it prints the RSS at
each change, then the figure of the goal (flat within 2 %): the median RSS over the
``--window`` minutes right after the warm-up (the first ``--warmup`` minutes) against the
median over the last ``--window`` minutes, their ratio (goal <= 1.02), and the
least-squares line over every sample after the warm-up: its slope in MB per minute and
its end against its start. Medians and a line, not single samples: RSS saws up between
two trims and down at each. With ``--trim`` also the line through the RSS right after each
trim (what the process keeps) and right before it (the top of the saw). ``--samples FILE``
keeps every sample.

    nice -n 19 .venv/bin/python bench/bench_session_rss.py [--minutes 20] [--every 30]
        [--size 1280x720] [--clip liveportrait_s18.mp4] [--warmup 2] [--window 3]
        [--sample 5] [--memory low|balanced|high] [--trace] [--trim] [--trim-every 30]
        [--arenas 4] [--mmap-threshold MB] [--samples FILE]

Finding where it goes: ``--trace`` runs tracemalloc and prints, at the end, Python's own
allocations then against after the warm-up (total and the 12 lines that grew most): growth
there is Python objects; RSS growth without it is native (ONNX Runtime, OpenCV, PyAV,
glibc's heaps). ``--trim`` calls glibc's malloc_trim every ``--trim-every`` seconds
(default the panel's ``TRIM_MS``, 30 s) on its own clock, as the panel's timer does, and
prints the RSS before and after it and how long it took: memory it gives back was freed
but kept by malloc (fragmentation), not leaked. ``--memory low`` runs ONNX Runtime
without its CPU arena on every provider (the other strategies: on a GPU only).
``--arenas 4 --trim`` is what the panel does (arenas capped at its start, a trim every
30 s while running). ``--mmap-threshold`` fixes glibc's mmap threshold (large blocks
unmapped at once when freed; it costs a page fault per 4 KB of each new frame buffer).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import find_testdata  # noqa: E402

from livecam.app import App  # noqa: E402
from livecam.config.schema import Config  # noqa: E402
from livecam.control.controls import Change, Controls  # noqa: E402
from ui.stream import TRIM_MS, limit_malloc_arenas, trim_malloc  # noqa: E402

M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


def rss_mb() -> float:
    """This process's resident set size in MB (Linux ``/proc``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status (Linux only)")


class RssSampler:
    """RSS every ``every`` s on its own thread from ``start`` (time.monotonic()); with
    ``trim_every`` > 0 a malloc_trim that often, as the panel's timer does (the RSS just
    before and after it printed). ``samples``: (minutes, MB)."""

    def __init__(self, start: float, every: float, trim_every: float) -> None:
        self.start, self.every, self.trim_every = start, every, trim_every
        self.samples: list[tuple[float, float]] = []
        self.trims: list[tuple[float, float, float]] = []  # (minutes, MB before, MB after)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        tick, next_trim = 0, self.trim_every
        while not self._done.wait(max(0.0, self.start + tick * self.every - time.monotonic())):
            now = time.monotonic() - self.start
            self.samples.append((now / 60, rss_mb()))
            if self.trim_every > 0 and now >= next_trim:
                next_trim += self.trim_every
                before, t0 = self.samples[-1][1], time.perf_counter()
                trim_malloc()
                took = (time.perf_counter() - t0) * 1e3
                after = rss_mb()
                self.trims.append((now / 60, before, after))
                print(
                    f"{now / 60:6.2f} min  trim {before:7.1f} -> {after:7.1f} MB ({took:.1f} ms)",
                    flush=True,
                )
            tick += 1

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def face_change(face: Path) -> Callable[[Controls], Change]:
    return lambda c: c.set_face(face)


def changes(faces: list[Path]) -> list[Callable[[Controls], Change]]:
    """The live changes made in turn, one every ``--every`` seconds."""
    out: list[Callable[[Controls], Change]] = []
    for face in faces:
        out += [
            face_change(face),
            lambda c: c.set_blank(True),
            lambda c: c.set_blank(False),
            lambda c: c.set_freeze(True),
            lambda c: c.set_freeze(False),
            lambda c: c.update_swap(blend="seamless"),
            lambda c: c.update_swap(blend="feather"),
            lambda c: c.set_selection("all"),
            lambda c: c.set_selection("one"),
        ]
    return out


def goal_figure(
    samples: list[tuple[float, float]], warmup: float, window: float, minutes: float
) -> str:
    """The goal's figure: the median RSS over ``window`` minutes after the warm-up against
    the median over the last ``window`` minutes, their ratio, and the least-squares line
    over all samples after the warm-up: its slope and its end against its start (the
    trend without the saw of the trims)."""
    kept = [(t, r) for t, r in samples if t >= warmup]
    first = [r for t, r in kept if t < warmup + window]
    last = [r for t, r in kept if t >= minutes - window]
    if len(kept) < 2 or not first or not last:
        return "too short to tell"
    t, r = np.array(kept).T
    slope, intercept = (float(v) for v in np.polyfit(t, r, 1))
    a, b = float(np.median(first)), float(np.median(last))
    line_start, line_end = intercept + slope * t[0], intercept + slope * t[-1]
    return (
        f"median RSS minutes {warmup:g}-{warmup + window:g} {a:.1f} MB, minutes "
        f"{minutes - window:g}-{minutes:g} {b:.1f} MB: ratio {b / a:.3f} (goal <= 1.02); "
        f"least-squares line over {len(kept)} samples: slope {slope:+.2f} MB/min, "
        f"{line_start:.1f} -> {line_end:.1f} MB, ratio {line_end / line_start:.3f}; "
        f"min {r.min():.1f}, max {r.max():.1f} MB"
    )


def trim_figure(trims: list[tuple[float, float, float]], warmup: float) -> str:
    """The least-squares line of the RSS right after each trim (what the process keeps)
    and right before it (the top of the saw: heap freed since the last trim) after the
    warm-up: slope and end against start of each."""
    kept = [t for t in trims if t[0] >= warmup]
    if len(kept) < 2:
        return "too few trims to tell"
    t, before, after = np.array(kept).T
    parts = []
    for name, rss in (("after", after), ("before", before)):
        slope, intercept = (float(v) for v in np.polyfit(t, rss, 1))
        start, end = intercept + slope * t[0], intercept + slope * t[-1]
        parts.append(
            f"{name} them {slope:+.2f} MB/min, {start:.1f} -> {end:.1f} MB, ratio {end / start:.3f}"
        )
    return f"RSS at the {len(kept)} trims after the warm-up (least squares): " + "; ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between changes")
    parser.add_argument("--warmup", type=float, default=2.0, help="minutes left out of the goal")
    parser.add_argument("--window", type=float, default=3.0, help="minutes of each median")
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between RSS samples")
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--clip", default="liveportrait_s18.mp4")
    parser.add_argument("--memory", choices=("low", "balanced", "high"), default=None)
    parser.add_argument("--trace", action="store_true", help="tracemalloc: Python's share")
    parser.add_argument("--trim", action="store_true", help="malloc_trim as the panel does")
    parser.add_argument(
        "--trim-every", type=float, default=TRIM_MS / 1000, help="seconds between trims"
    )
    parser.add_argument("--samples", type=Path, help="write each RSS sample (minutes, MB) here")
    parser.add_argument("--arenas", type=int, default=0, help="cap glibc's arenas (the panel: 4)")
    parser.add_argument(
        "--mmap-threshold", type=float, default=0.0, help="MB: glibc's fixed mmap threshold"
    )
    args = parser.parse_args()
    if args.arenas:
        limit_malloc_arenas(args.arenas)
    if args.mmap_threshold:  # blocks this large mmapped, unmapped when freed (no dynamic rise)
        ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, int(args.mmap_threshold * 2**20))
    if args.trace:
        tracemalloc.start(1)
    testdata = find_testdata()
    if testdata is None:
        print("the test data (../shared/testdata) is needed")
        return 2
    w, h = (int(v) for v in args.size.split("x"))
    faces = [
        REPO / "assets" / "astronaut.png",
        testdata / "faces" / "obama_official_portrait_2012.jpg",
        REPO / "assets" / "grace_hopper.jpg",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Config.from_dict(
            {
                "source": {
                    "spec": str(testdata / "video" / args.clip),
                    "loop": True,
                    "size": [w, h],
                },
                "output": {"sinks": ["null", str(Path(tmp) / "session.mkv")]},
                "pipeline": {"stages": ["swap"]},
                "swap": {"face": str(faces[-1]), "preset": "lite"},
            }
        )
        if args.memory is not None:
            cfg = cfg.with_fields({"swap.runtime.memory": args.memory})
        app = App(cfg)
        app.start()
        start = time.monotonic()
        sampler = RssSampler(start, args.sample, args.trim_every if args.trim else 0.0)
        todo = changes(faces)
        at_change: list[float] = []
        first: tracemalloc.Snapshot | None = None
        try:
            step = 0
            while (now := time.monotonic() - start) < args.minutes * 60:
                app.controls  # noqa: B018 (raises when the stream ended)
                change = todo[step % len(todo)](app.controls)
                change.wait(60)
                at_change.append(rss_mb())
                traced = ""
                if args.trace:
                    traced = f"  python {tracemalloc.get_traced_memory()[0] / 1e6:6.1f} MB"
                    if first is None and now / 60 >= args.warmup:
                        first = tracemalloc.take_snapshot()
                print(
                    f"{now / 60:6.2f} min  rss {at_change[-1]:7.1f} MB{traced}  {change.command}",
                    flush=True,
                )
                step += 1
                time.sleep(max(0.0, start + step * args.every - time.monotonic()))
            if first is not None:
                grown = tracemalloc.take_snapshot().compare_to(first, "lineno")
                total = sum(d.size_diff for d in grown) / 1e6
                print(f"python allocations since the warm-up: {total:+.1f} MB; grew most:")
                for diff in sorted(grown, key=lambda d: d.size_diff, reverse=True)[:12]:
                    print(
                        f"  {diff.size_diff / 1e6:+7.2f} MB {diff.count_diff:+6d}  {diff.traceback}"
                    )
        finally:
            sampler.stop()
            app.stop()
            out = app.snapshot()
    cycle = len(todo)  # the same change a cycle later: the models and faces are all loaded
    later = [at_change[i + cycle] - at_change[i] for i in range(len(at_change) - cycle)]
    if later:
        minutes = cycle * args.every / 60
        print(
            f"the same change {minutes:g} min later (a whole cycle of {cycle} changes): "
            f"RSS {float(np.median(later)):+.1f} MB median over {len(later)} changes "
            f"({float(np.median(later)) / minutes:+.2f} MB/min)"
        )
    print(f"frames out {out.frames_out}, changes {len(at_change)}; pid {os.getpid()}")
    if args.samples is not None:
        args.samples.write_text("".join(f"{t:.4f} {r:.1f}\n" for t, r in sampler.samples))
    print(goal_figure(sampler.samples, args.warmup, args.window, args.minutes))
    if sampler.trims:
        print(trim_figure(sampler.trims, args.warmup))
    return 0


if __name__ == "__main__":
    sys.exit(main())
