"""The invisible mark (livecam/stream/watermark.py): invisibility, cost, robustness and
false alarms, on the test data's real clips and photos.

    .venv/bin/python bench/bench_watermark.py [--frames N] [--clips d6,s18,...]
        [--skip-null] [--image docs/images/watermark_flat.png]

* cost: ``Watermarker.embed`` p50 / p90 at 1280x720 and 1920x1080 (a real frame; the
  pattern is built before timing, as the output thread does once per size);
* invisibility: PSNR of marked vs unmarked over every bench frame;
* robustness: the talking-head and street clips (each centre-cropped to 16:9 and scaled to
  1280x720, up to ``--frames`` frames each, 0 = all), marked, then sent through each
  transform; every frame is detected, and each clip is cut into 2-second windows (60
  frames; a shorter last one counts when it holds at least 30): the share of windows
  marked (majority of their frames) and of frames marked, and the share of windows whose
  payload (read from the window alone) is the embedded one;
* false alarms: every frame of every test-data video at its own size and every photo,
  unmarked: how many are detected (must be none), the largest score against the threshold,
  and the tail of the per-hypothesis null scores against the Gaussian the threshold assumes;
* ``--image``: a flat grey patch and a flat patch of a real frame, unmarked | marked |
  difference x 24 (+128), at 1:1 pixels, into one PNG.

Timings are taken on the machine as it is (say how loaded it was: the load average is
printed).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import codec_roundtrip as codec  # noqa: E402
from conftest import find_testdata  # noqa: E402

from livecam.stream import watermark as wm  # noqa: E402

Frame = np.ndarray
CLIPS = ("d13", "d6", "s18", "s29", "s32", "openmpf_01", "hikers")
CLIP_FILES = {
    "d13": "liveportrait_d13.mp4",
    "d6": "liveportrait_d6.mp4",
    "s18": "liveportrait_s18.mp4",
    "s29": "liveportrait_s29.mp4",
    "s32": "liveportrait_s32.mp4",
    "openmpf_01": "openmpf_video_01.mp4",
    "hikers": "openmpf_video_02_hikers.mp4",
}
WINDOW = 60  # 2 s at 30 fps
SIZE = (1280, 720)

Transform = Callable[[list[Frame]], list[Frame]]
TRANSFORMS: dict[str, Transform] = {
    "H.264 1 Mbit/s 1280x720": lambda fs: codec.encode_decode(fs, 1_000_000),
    "H.264 500 kbit/s 640x360": lambda fs: codec.encode_decode(fs, 500_000, size=(640, 360)),
    "VP8 1 Mbit/s 1280x720": lambda fs: codec.encode_decode(fs, 1_000_000, codec="libvpx"),
    "JPEG q70 (each frame)": lambda fs: [codec.jpeg(f, 70) for f in fs],
    "crop 10 % (1152x648, off-centre)": lambda fs: [codec.crop(f) for f in fs],
    "screenshot of a 1100x700 preview": lambda fs: [codec.screenshot(f, (1100, 700)) for f in fs],
}


def read_clip(path: Path, limit: int, size: tuple[int, int] | None) -> list[Frame]:
    """Up to ``limit`` frames (0: all) of ``path``; with ``size``, centre-cropped to its
    aspect and scaled to it."""
    cap = cv2.VideoCapture(str(path))
    frames: list[Frame] = []
    while limit == 0 or len(frames) < limit:
        ok, frame = cap.read()
        if not ok:
            break
        if size is not None:
            frame = fit(frame, size)
        frames.append(frame)
    cap.release()
    return frames


def fit(frame: Frame, size: tuple[int, int]) -> Frame:
    """``frame`` centre-cropped to the aspect of ``size`` and scaled to it."""
    h, w = frame.shape[:2]
    width, height = size
    if w * height > h * width:
        cw = h * width // height
        frame = frame[:, (w - cw) // 2 : (w - cw) // 2 + cw]
    else:
        ch = w * height // width
        frame = frame[(h - ch) // 2 : (h - ch) // 2 + ch]
    return np.ascontiguousarray(cv2.resize(frame, size, interpolation=cv2.INTER_AREA))


def psnr(a: Sequence[Frame], b: Sequence[Frame]) -> float:
    mse = np.mean([np.mean((x.astype(np.float64) - y) ** 2) for x, y in zip(a, b, strict=True)])
    return float(10 * math.log10(255.0**2 / mse))


def cost(frame: Frame) -> dict[str, tuple[float, float]]:
    """embed p50 and p90 in ms at 720p and 1080p (pattern prepared first)."""
    out = {}
    for size in ((1280, 720), (1920, 1080)):
        image = fit(frame, size)
        marker = wm.Watermarker(wm.new_session_payload())
        marker.prepare(*size)
        times = []
        for _ in range(300):
            t0 = time.perf_counter()
            marker.embed(image)
            times.append((time.perf_counter() - t0) * 1e3)
        p50, p90 = np.percentile(times, [50, 90])
        out[f"{size[0]}x{size[1]}"] = (float(p50), float(p90))
    return out


def windows(frames: list[Frame]) -> list[list[Frame]]:
    """2-second windows of a clip (a shorter last one when it holds half a window)."""
    chunks = [frames[i : i + WINDOW] for i in range(0, len(frames), WINDOW)]
    return [c for c in chunks if len(c) * 2 >= WINDOW]


def robustness(clips: dict[str, list[Frame]]) -> list[tuple[str, int, int, int, int, int]]:
    """Per transform: (name, frames marked, frames, windows marked, windows, payloads)."""
    detector = wm.Detector()
    marked: dict[str, tuple[wm.Payload, list[Frame]]] = {}
    for name, frames in clips.items():
        payload = wm.new_session_payload()
        marker = wm.Watermarker(payload)
        marked[name] = (payload, [marker.embed(f) for f in frames])
    rows = []
    for label, transform in TRANSFORMS.items():
        f_hit = f_all = w_hit = w_all = w_payload = 0
        missed: list[str] = []
        t0 = time.perf_counter()
        for name, (payload, frames) in marked.items():
            for chunk in windows(transform(frames)):
                result = detector.frames(chunk, window=len(chunk))
                f_hit += result.frames_marked
                f_all += result.frames_total
                w_hit += result.windows_marked
                w_all += result.windows_total
                w_payload += result.payload == payload
                if not result.windows_marked:
                    missed.append(f"{name} ({result.frames_marked}/{result.frames_total} frames)")
        rows.append((label, f_hit, f_all, w_hit, w_all, w_payload))
        misses = f", windows missed: {', '.join(missed)}" if missed else ""
        print(f"  {label}: done in {time.perf_counter() - t0:.0f} s{misses}", flush=True)
    return rows


def null_frames(root: Path) -> list[tuple[str, list[Frame]]]:
    """Every frame of every test-data video (own size) and every photo, unmarked."""
    out = []
    for path in sorted((root / "video").iterdir()):
        out.append((path.name, read_clip(path, 0, None)))
    photos = []
    for path in sorted((root / "faces").iterdir()):
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is not None:
            photos.append(image)
    out.append(("photos", photos))
    return out


def false_alarms(root: Path) -> None:
    detector = wm.Detector()
    total = hits = 0
    worst = (-1.0, "")
    tails = {3.0: 0, 4.0: 0, 4.5: 0, 5.0: 0, 5.5: 0}
    values = 0
    for name, frames in null_frames(root):
        for index, frame in enumerate(frames):
            result = detector.frame(frame)
            total += 1
            hits += result.marked
            if result.score > worst[0]:
                worst = (result.score, f"{name} frame {index}")
            # the nominal scale's whole surface: 4096 null hypotheses per frame
            hit = detector.correlate(detector.prepare(frame), 1.0)
            surface = wm._z(detector._correlation(hit.spectrum, detector._sync))
            values += surface.size
            for z in tails:
                tails[z] += int(np.count_nonzero(surface > z))
    print(f"unmarked frames and photos: {total}, detected: {hits}")
    print(f"largest score: {worst[0]:.2f} ({worst[1]}), threshold {wm.THRESHOLD:.2f}")
    print(f"null per-hypothesis tail at the nominal scale, {values} values:")
    print("| z | share above | Gaussian Q(z) |\n|---|---|---|")
    for z, count in tails.items():
        print(f"| {z} | {count / values:.2e} | {0.5 * math.erfc(z / math.sqrt(2)):.2e} |")


def flattest(frame: Frame, side: int) -> tuple[int, int]:
    """(y, x) of the ``side`` x ``side`` block of ``frame`` with the least detail (on a
    grid of ``side // 6`` pixels)."""
    step = side // 6
    luma = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY).astype(np.float32)
    detail = np.abs(cv2.Laplacian(cv2.GaussianBlur(luma, (0, 0), 1.0), -1))
    h, w = luma.shape
    grid = cv2.resize(detail, (w // step, h // step), interpolation=cv2.INTER_AREA)
    sums = cv2.boxFilter(grid, -1, (6, 6), anchor=(0, 0), normalize=False)
    sums = sums[: grid.shape[0] - 5, : grid.shape[1] - 5]
    by, bx = np.unravel_index(int(np.argmin(sums)), sums.shape)
    return int(by) * step, int(bx) * step


def flat_image(path: Path, frame: Frame) -> None:
    """Unmarked | marked | difference x 24 + 128, for a flat grey patch and the flattest
    patch of ``frame``, at 1:1 pixels."""
    side = 192
    grey = np.full_like(frame, 128)
    y0, x0 = flattest(frame, side)
    marker = wm.Watermarker(wm.new_session_payload())
    rows = []
    for image, (y, x) in ((grey, (264, 544)), (frame, (y0, x0))):
        marked = marker.embed(image)
        a, b = image[y : y + side, x : x + side], marked[y : y + side, x : x + side]
        diff = np.clip((b.astype(np.int16) - a) * 24 + 128, 0, 255).astype(np.uint8)
        gap = np.full((side, 8, 3), 255, np.uint8)
        rows.append(np.hstack([a, gap, b, gap, diff]))
    sheet = np.vstack([rows[0], np.full((8, rows[0].shape[1], 3), 255, np.uint8), rows[1]])
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), sheet)
    print(f"flat-area crops: {path} (grey; frame patch at x={x0}, y={y0})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=0, help="frames per clip (0: all)")
    parser.add_argument("--clips", default=",".join(CLIPS))
    parser.add_argument("--skip-null", action="store_true")
    parser.add_argument("--image", type=Path, default=None)
    args = parser.parse_args()
    root = find_testdata()
    if root is None:
        raise SystemExit("no test data (set LIVECAM_TESTDATA)")
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(
        f"threshold: {len(wm.SCALES)} scales x {wm.DET_TILE}x{wm.DET_TILE} offsets = "
        f"{wm.HYPOTHESES} hypotheses per frame; p_frame = 1e-6 / 2 (Markov over a window's "
        f"majority); z solves {wm.HYPOTHESES} * Q(z) = 5e-7: z = {wm.THRESHOLD:.3f}"
    )
    clips = {
        name: read_clip(root / "video" / CLIP_FILES[name], args.frames, SIZE)
        for name in args.clips.split(",")
    }
    first = next(iter(clips.values()))[0]
    for size, (p50, p90) in cost(first).items():
        print(f"embed {size}: p50 {p50:.3f} ms, p90 {p90:.3f} ms")
    marker = wm.Watermarker(wm.new_session_payload())
    every = [f for frames in clips.values() for f in frames]
    print(f"PSNR marked vs unmarked over {len(every)} frames: ", end="")
    print(f"{psnr([marker.embed(f) for f in every], every):.2f} dB")
    if args.image is not None:
        flat_image(args.image, first)
    print(f"robustness over {len(every)} frames of {len(clips)} clips at 1280x720:")
    rows = robustness(clips)
    print("| transform | windows detected | frames detected | windows with the payload |")
    print("|---|---|---|---|")
    for label, f_hit, f_all, w_hit, w_all, w_payload in rows:
        print(
            f"| {label} | {w_hit}/{w_all} ({100 * w_hit / w_all:.1f} %) | "
            f"{f_hit}/{f_all} ({100 * f_hit / f_all:.1f} %) | {w_payload}/{w_all} |"
        )
    if not args.skip_null:
        false_alarms(root)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
