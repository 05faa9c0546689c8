"""What a SIGKILL leaves of a recording: frames kept out of frames sent, per kill point.

    python bench/bench_killed_recording.py [--kill-at 100,200,300,500] [--suffix .mp4]

A child process feeds LiveCam's recorder (``RecorderSink``) the frames of a test-data
clip (liveportrait_d6.mp4, 480x480, 30 fps, at the clip's own timestamps) and prints the
count after each frame; it is killed with SIGKILL once it has sent ``--kill-at`` frames.
The hidden temporary file it leaves is then read as the next run's recovery reads it
(frames that decode, and the seconds they span), and recovered by a new recorder into
the folder. .mp4/.mov are fragmented (a fragment per second), so the loss is the
fragment being filled plus the encoder's lookahead (about 1.3 s at most); .mkv loses as
much (a cluster per keyframe); .avi (MJPEG, no lookahead) plays without its index to the
last frame written.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import REPO

from livecam.sinks import RecorderSink
from livecam.sinks.recording.recovery import playable

CHILD = """
import sys, av
from livecam.sinks import RecorderSink
sink = RecorderSink(sys.argv[1])
with av.open(sys.argv[2]) as clip:
    for n, picture in enumerate(clip.decode(video=0), 1):
        frame = picture.to_ndarray(format="bgr24")
        if n == 1:
            sink.open(frame.shape[1], frame.shape[0], 30.0)
        sink.send(frame, round(float(picture.time) * 1e9))
        print(n, flush=True)
"""


def clip_path() -> Path:
    for root in [p / "shared" / "testdata" for p in REPO.parents]:
        clip = root / "video" / "liveportrait_d6.mp4"
        if clip.is_file():
            return clip
    raise SystemExit("liveportrait_d6.mp4 not found in ../shared/testdata")


def killed_after(folder: Path, suffix: str, sent: int) -> tuple[int, float] | None:
    """Kill a recorder child after ``sent`` frames; (frames, seconds) its file keeps."""
    out = folder / f"killed{suffix}"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(out), str(clip_path())],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    for line in child.stdout:
        if int(line) >= sent:
            break
    child.send_signal(signal.SIGKILL)
    child.wait()
    [temp] = folder.glob(f".killed.recording-*{suffix}")
    return playable(temp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kill-at", default="100,200,300,500")
    parser.add_argument("--suffix", default=".mp4")
    args = parser.parse_args()
    for sent in (int(n) for n in args.kill_at.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            kept = killed_after(folder, args.suffix, sent)
            frames, seconds = kept if kept is not None else (0, 0.0)
            sink = RecorderSink(folder / "next.mp4")  # its open recovers the killed one
            sink.open(64, 48, 30.0)
            sink.close()
            recovered = playable(folder / f"killed{args.suffix}")
            print(
                f"killed after {sent} frames sent: {frames} kept ({seconds:.1f} s, "
                f"{sent - frames} lost); recovered under its name: "
                f"{recovered[0] if recovered else 0} frames"
            )


if __name__ == "__main__":
    main()
