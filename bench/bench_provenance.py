"""What signed provenance costs: C2PA signing of a still (done on the output thread at
each image write), of a finished recording (once, at close) and the .mkv tag remux, and
reading a manifest back (``livecam verify``).

    python bench/bench_provenance.py [--seconds 10] [--size 1280x720] [--repeats 5]

The frames are a real clip of the test data (liveportrait_d6.mp4, scaled to ``--size``,
looped to ``--seconds`` at 30 fps), recorded with LiveCam's own recorder (H.264, crf 21)
first; then each step is timed on its own and the medians are printed with the file sizes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from functools import partial
from pathlib import Path

import av
import cv2
import numpy as np
from timing import REPO, median_ms

from livecam.app import swap_details
from livecam.config.schema import Config
from livecam.models.store import ModelStore
from livecam.sinks.recording.provenance import FileFacts, Provenance, read_provenance
from livecam.sinks.recording.video import RecorderSink


def clip_frames(size: tuple[int, int], count: int) -> list[np.ndarray]:
    roots = [p / "shared" / "testdata" for p in REPO.parents]
    clip = next((r / "video" / "liveportrait_d6.mp4" for r in roots if r.is_dir()), None)
    if clip is None or not clip.is_file():
        sys.exit("the test data clip liveportrait_d6.mp4 was not found")
    with av.open(str(clip)) as container:
        base = [cv2.resize(f.to_ndarray(format="bgr24"), size) for f in container.decode(video=0)]
    return [base[i % len(base)] for i in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    w, h = (int(v) for v in args.size.split("x"))
    frames = clip_frames((w, h), round(args.seconds * 30))
    cfg = Config.from_dict({"source": {"spec": "camera:0"}, "pipeline": {"stages": ["swap"]}})
    store = ModelStore()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        provenance = Provenance(lambda: swap_details(cfg, store), key_folder=folder / "key")
        recorder = RecorderSink(folder / "clip.mp4")  # unsigned: the input of the timings
        recorder.open(w, h, 30.0)
        for i, frame in enumerate(frames):
            recorder.send(frame, i * 33_333_333)
        recorder.close()
        mp4 = folder / "clip.mp4"
        facts = FileFacts("clip.mp4", len(frames), len(frames))
        print(f"{len(frames)} frames {w}x{h}, H.264 {mp4.stat().st_size / 1e6:.1f} MB")
        for suffix in (".png", ".jpg"):
            ok, data = cv2.imencode(suffix, frames[0])
            assert ok
            raw = data.tobytes()
            sign = partial(provenance.sign_bytes, raw, suffix, facts)
            ms = median_ms(sign, args.repeats)
            print(f"sign a {suffix} still ({len(raw) / 1e3:.0f} kB): {ms:.1f} ms (median)")
        signed = folder / "signed.mp4"
        ms = median_ms(lambda: provenance.finish_file(mp4, signed, facts), args.repeats)
        print(f"sign the .mp4 recording: {ms:.1f} ms (median)")
        ms = median_ms(lambda: read_provenance(signed), args.repeats)
        print(f"read its manifest back (c2pa Reader, validation): {ms:.1f} ms (median)")
        mkv_in = folder / "clip.mkv"
        with av.open(str(mp4)) as inp, av.open(str(mkv_in), "w", format="matroska") as out:
            stream = out.add_stream_from_template(inp.streams.video[0])
            for packet in inp.demux(inp.streams.video[0]):
                if packet.size:
                    packet.stream = stream
                    out.mux(packet)
        tagged = folder / "tagged.mkv"
        ms = median_ms(lambda: provenance.finish_file(mkv_in, tagged, facts), args.repeats)
        print(f"remux the .mkv recording with its tag: {ms:.1f} ms (median)")


if __name__ == "__main__":
    main()
