"""LiveCam and a real OBS Studio: does the audio offset LiveCam sets follow the latency,
and does OBS cost the stream anything?

    python bench/bench_obs.py [--seconds 60] [--pacing-seconds 10] [--rounds 3]

Starts Debian's OBS (obs-websocket 5) on a private Xvfb and HOME (tests/obs_studio.py),
with a microphone input in its scene.

1. Lip sync: a ``--seconds`` run of a time-stamped synthetic source (the capture time
   written into the pixels) at 30 fps with ``obs.sync_audio`` on. A stage stands in for
   the preset: it takes 40 ms per frame, then from half-time 120 ms (a heavier preset).
   The sink reads each new frame's pixel stamp when it is sent (glass-to-glass latency
   measured from the picture, not from LiveCam's own telemetry), and the bench reads the
   offset back from OBS (GetInputAudioSyncOffset) every 0.25 s. Per phase it prints the
   stamp latency's median plus one frame period (what the offset should be), the offset
   OBS holds at the phase's end, the error in frame periods, and how long after the change
   the offset came within one frame period of the new figure.
2. Pacing: the same stream (40 ms stage), ``--rounds`` times ``--pacing-seconds`` with the
   OBS link off, then on (lip sync on), while OBS records throughout (its own CPU load the
   same in both): the p99 interval between frames handed to the sink, and the ratio on/off.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fakes import SlowStage  # noqa: E402
from obs_studio import ObsStudio, obs_studio  # noqa: E402

from livecam.app import App  # noqa: E402
from livecam.config.schema import Config  # noqa: E402
from livecam.obs.client import Session  # noqa: E402
from livecam.sinks.null import NullSink  # noqa: E402
from livecam.sources.synthetic.stamp import read_stamp  # noqa: E402
from livecam.types import Frame  # noqa: E402

FPS = 30.0
PERIOD_MS = 1000.0 / FPS
LIGHT_S, HEAVY_S = 0.040, 0.120


class StampSink(NullSink):
    """Every send's time; each new frame's latency read from its pixel stamp."""

    name = "stamps"
    wants_repeats = True

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.sent: list[float] = []  # perf_counter seconds of every send
        self.latency: list[tuple[float, float]] = []  # (sent s, ms) of new frames
        self._last_stamp: int | None = None

    def send(self, frame: Frame, t_capture_ns: int | None = None, swapped: bool = False) -> None:
        now_ns = time.perf_counter_ns()
        stamp = read_stamp(frame)
        with self.lock:
            self.sent.append(now_ns / 1e9)
            if stamp is not None and stamp != self._last_stamp:
                self.latency.append((now_ns / 1e9, (now_ns - stamp) / 1e6))
            self._last_stamp = stamp


def config(obs: ObsStudio, linked: bool, sync: bool) -> Config:
    return Config.from_dict(
        {
            "source": {"spec": "synthetic", "size": [320, 240], "fps": FPS, "stamp": True},
            "output": {"sinks": ["null"]},
            "obs": {
                "enabled": linked,
                "host": "127.0.0.1",
                "port": obs.port,
                "sync_audio": sync,
            },
        }
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def lip_sync(obs: ObsStudio, session: Session, seconds: float) -> None:
    stage, sink = SlowStage(LIGHT_S), StampSink()
    app = App(config(obs, True, True), stages=[stage], sinks=[sink])
    readings: list[tuple[float, int]] = []
    app.start()
    t0 = time.perf_counter()
    change_at = t0 + seconds / 2
    try:
        while (now := time.perf_counter()) < t0 + seconds:
            if stage.process_s == LIGHT_S and now >= change_at:
                stage.process_s = HEAVY_S  # the "preset change"
            readings.append((now, obs.offset(session)))
            time.sleep(0.25)
        link = app.obs
        events = [e.message for e in app.telemetry.recent_events() if e.origin == "obs"]
    finally:
        app.stop()
    assert link is not None
    print(f"lip sync over {seconds:.0f} s at {FPS:.0f} fps (frame period {PERIOD_MS:.1f} ms):")
    for name, start, end in (
        ("40 ms stage", t0, change_at),
        ("120 ms stage", change_at, t0 + seconds),
    ):
        # the phase's settled latency: its second half (the first holds the change)
        settle = start + (end - start) / 2
        with sink.lock:
            stamps = [ms for t, ms in sink.latency if settle <= t < end]
        ideal = statistics.median(stamps) + PERIOD_MS
        held = [ms for t, ms in readings if start <= t < end]
        final = held[-1]
        within = next(
            (t - start for t, ms in readings if start <= t < end and abs(ms - ideal) <= PERIOD_MS),
            None,
        )
        when = f"{within:.1f} s after the phase began" if within is not None else "never"
        print(
            f"  {name}: stamp latency p50 {statistics.median(stamps):.1f} ms + period = "
            f"{ideal:.1f} ms; OBS offset at the end {final} ms; error {final - ideal:+.1f} ms "
            f"({(final - ideal) / PERIOD_MS:+.2f} periods); within one period {when}"
        )
    sets = [m for m in events if m.startswith("audio delayed by")]
    print(f"  offsets set: {len(sets)}; put back at the end: {obs.offset(session)} ms")


def pacing(obs: ObsStudio, session: Session, seconds: float, rounds: int) -> None:
    """Link off and on in turn, ``rounds`` times, with OBS recording throughout (OBS's own
    load on the CPU is the same in both, so the ratio is the link's cost)."""
    gaps: dict[bool, list[float]] = {False: [], True: []}
    session.call("StartRecord")
    try:
        for _ in range(rounds):
            for linked in (False, True):
                sink = StampSink()
                cfg = config(obs, linked, linked)
                app = App(cfg, stages=[SlowStage(LIGHT_S)], sinks=[sink])
                app.start()
                try:
                    time.sleep(seconds)
                finally:
                    app.stop()
                with sink.lock:
                    sent = sink.sent[int(FPS) :]  # the first second warms up
                gaps[linked] += [(b - a) * 1000 for a, b in zip(sent, sent[1:], strict=False)]
    finally:
        session.call("StopRecord")
    p99 = {linked: percentile(values, 0.99) for linked, values in gaps.items()}
    for linked, values in gaps.items():
        print(
            f"  OBS link {'on ' if linked else 'off'}: {len(values)} intervals, p50 "
            f"{statistics.median(values):.2f} ms, p99 {p99[linked]:.2f} ms, "
            f"max {max(values):.2f} ms"
        )
    print(f"  p99 frame interval ratio, OBS link on / off: {p99[True] / p99[False]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--pacing-seconds", type=float, default=10.0, help="per run")
    parser.add_argument("--rounds", type=int, default=3, help="pacing runs with the link off/on")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home, obs_studio(Path(home)) as obs:
        if obs is None:
            raise SystemExit("obs-studio and Xvfb are needed (apt-get install obs-studio xvfb)")
        os.environ["LIVECAM_OBS_PASSWORD"] = obs.password
        session = obs.prepared()
        try:
            lip_sync(obs, session, args.seconds)
            print("frame pacing (the sink's send times):")
            pacing(obs, session, args.pacing_seconds, args.rounds)
        finally:
            session.close()


if __name__ == "__main__":
    main()
