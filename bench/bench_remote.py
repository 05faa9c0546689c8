"""The remote swap (`livecam run --remote`) against a real `livecam serve` on 127.0.0.1.

    python bench/bench_remote.py [--width 128] [--frames 90] [--streams 1,2,4,8]
                                 [--delays 0,50,150] [--provider cpu] [--json PATH]
                                 [--parts latency,delays,bytes,streams]
                                 [--response-compression low]

The server is `livecam serve` (NVIDIA Triton through PyTriton) in a child process serving
the narrow synthetic inswapper (``inswapper_like(width)``: inswapper's I/O, random weights;
never a quality figure); the client is the RemoteSwapper in this process, one aligned
128x128 crop of a real portrait per frame (the face moves a pixel a frame). Frames come at
30 fps like a camera. Prints:

* added latency, remote against local: per frame, the time from the crop to its swapped
  crop (the client waits for its own answer: what a LAN gives), p50 and p99, and the
  client's CPU per frame (process CPU time: this process only, not the server's);
* fps with 0 / 50 / 150 ms added each way by a delay proxy on 127.0.0.1 (3 in flight):
  fps out, round trip p50, the share of faces the server swapped;
* bytes per frame and Mbit/s per stream at 30 fps, up and down, counted on the wire by the
  proxy, without and with the client's gRPC gzip compression (the default), the server
  compressing its answers at ``--response-compression`` (`livecam serve`'s default: low);
* 1 / 2 / 4 / 8 streams against one server (each at 30 fps): faces/s the server swapped in
  all, the mean batch size (Triton's metrics), and each stream's round trip p99.

``--provider cuda --width 1024 --fp16`` (bench/gpu_check.sh's remote case) serves the
inswapper-sized model on the GPU; the client's local swapper (the fallback, and the
"local" of the latency figure) uses the same provider.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import cv2
import numpy as np
from timing import default_face

from livecam.benchmark.remote_rig import DelayProxy, ServeChild
from livecam.benchmark.synthetic_models import inswapper_like
from livecam.config.remote import Compression, RemoteConfig, ServerAddress
from livecam.config.swap import SwapConfig
from livecam.face.build import build_swapper
from livecam.face.crops.align import ARCFACE_112
from livecam.face.swap.neural import NeuralSwapper
from livecam.models.presets import resolve_preset
from livecam.models.store import ModelStore
from livecam.remote import wire
from livecam.remote.link import RemoteLink
from livecam.remote.swapper import RemoteSwapper
from livecam.sources.image import load_image_bgr
from livecam.types import Face, FaceWork, FrameContext

FPS = 30.0
PARTS = ("latency", "delays", "bytes", "streams")


def local_swapper(model: Path, data: Path, provider: str = "cpu") -> NeuralSwapper:
    cfg = SwapConfig.of(preset="standard", provider=provider, swapper_model=str(model))
    store = ModelStore(data_dir=data)
    swapper = build_swapper(resolve_preset("standard", store, cfg), cfg, store)
    assert isinstance(swapper, NeuralSwapper)
    return swapper


class Clip:
    """A real portrait with the face's 5 points, moving a pixel a frame."""

    def __init__(self, face: Path) -> None:
        photo = load_image_bgr(face)
        self.image = np.asarray(
            cv2.resize(photo, (320, 400), interpolation=cv2.INTER_AREA), np.uint8
        )
        self.kps = np.asarray(ARCFACE_112, np.float32) * 1.3 + np.array([88, 110], np.float32)

    def frame(self, n: int) -> tuple[FrameContext, FaceWork]:
        shift = np.array([n % 8, (n // 8) % 4], np.float32)
        face = Face(
            bbox=np.array([60, 80, 260, 330], np.float32),
            score=0.99,
            kps=(self.kps + shift).astype(np.float32),
            track_id=1,
        )
        return FrameContext(self.image, seq=n), FaceWork(0, n, face, source_index=0)


def latent(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(512).astype(np.float32)
    return v / np.linalg.norm(v)


def remote(
    local: NeuralSwapper,
    port: int,
    *,
    wait_ms: int = 20,
    timeout_ms: int = 1500,
    compression: Compression | None = None,
) -> RemoteSwapper:
    """A warmed RemoteSwapper on 127.0.0.1:``port`` (``compression`` None: the default)."""
    cfg = RemoteConfig(url=f"grpc://127.0.0.1:{port}", wait_ms=wait_ms, timeout_ms=timeout_ms)
    compression = compression or cfg.compression
    link = RemoteLink(
        ServerAddress("127.0.0.1", port), compression=compression, timeout_s=timeout_ms / 1000
    )
    swapper = RemoteSwapper(local, link, cfg, close_local=False)
    swapper.warmup()
    if swapper.lost is not None:
        raise SystemExit(f"the server is not usable: {swapper.lost}")
    return swapper


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def per_frame(swap: RemoteSwapper | NeuralSwapper, clip: Clip, frames: int) -> dict[str, float]:
    """ms and CPU ms per frame, one frame at a time (no pacing: each waits for its face)."""
    vector = latent(1)
    wall, cpu = [], []
    for n in range(frames):
        frame, work = clip.frame(n)
        t0, c0 = time.perf_counter(), time.process_time()
        [done] = swap.swap([frame], [work], [vector])
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        assert done.output is not None
    return {"p50_ms": pct(wall, 50), "p99_ms": pct(wall, 99), "cpu_ms": statistics.median(cpu)}


def paced(swapper: RemoteSwapper, clip: Clip, frames: int, seed: int = 2) -> float:
    """fps out with frames arriving at 30 fps, each swapped on arrival."""
    vector = latent(seed)
    start = time.monotonic()
    for n in range(frames):
        due = start + n / FPS
        now = time.monotonic()
        if now < due:
            time.sleep(due - now)  # the camera's pace
        frame, work = clip.frame(n)
        [done] = swapper.swap([frame], [work], [vector])
        assert done.output is not None
    return frames / (time.monotonic() - start)


def bench_latency(
    local: NeuralSwapper, srv: ServeChild, clip: Clip, frames: int, compression: Compression
) -> dict:
    here = per_frame(local, clip, frames)
    swapper = remote(local, srv.port, wait_ms=1000, timeout_ms=3000, compression=compression)
    try:
        there = per_frame(swapper, clip, frames)
        stats = swapper.stats()
    finally:
        swapper.close()
    return {
        "local": here,
        "remote": there,
        "added_p50_ms": there["p50_ms"] - here["p50_ms"],
        "added_p99_ms": there["p99_ms"] - here["p99_ms"],
        "compression": compression,
        "remote_faces": stats.faces_remote,
        "local_faces": stats.faces_local,
    }


def bench_delays(
    local: NeuralSwapper, srv: ServeChild, clip: Clip, frames: int, delays: list[int]
) -> dict:
    found = {}
    for delay in delays:
        with DelayProxy(srv.port, delay / 1000) as proxy:
            swapper = remote(local, proxy.port)
            try:
                fps = paced(swapper, clip, frames)
                s = swapper.stats()
            finally:
                swapper.close()
        faces = max(s.faces_remote + s.faces_local, 1)
        found[delay] = {
            "fps": fps,
            "rtt_p50_ms": s.rtt_p50_ms,
            "remote_share": s.faces_remote / faces,
            "late": s.late,
            "skipped": s.skipped,
        }
    base = float(found[delays[0]]["fps"] or 1.0)
    for row in found.values():
        row["fps_ratio"] = float(row["fps"] or 0.0) / base
    return found


def bench_bytes(local: NeuralSwapper, srv: ServeChild, clip: Clip, frames: int) -> dict:
    found = {}
    compressions: tuple[Compression, ...] = ("none", "gzip")
    for compression in compressions:
        with DelayProxy(srv.port, 0.0) as proxy:
            swapper = remote(local, proxy.port, wait_ms=1000, compression=compression)
            up0, down0 = proxy.bytes_up, proxy.bytes_down
            try:
                per_frame(swapper, clip, frames)
                sent = swapper.stats().sent
            finally:
                swapper.close()
            up = (proxy.bytes_up - up0) / sent
            down = (proxy.bytes_down - down0) / sent
        found[compression] = {
            "bytes_up_per_frame": up,
            "bytes_down_per_frame": down,
            "mbit_up_at_30fps": up * 8 * FPS / 1e6,
            "mbit_down_at_30fps": down * 8 * FPS / 1e6,
        }
    return found


def bench_streams(
    local_model: Path,
    data: Path,
    srv: ServeChild,
    clip: Clip,
    seconds: float,
    counts: list[int],
    provider: str,
) -> dict:
    found = {}
    locals_ = [local_swapper(local_model, data / f"s{i}", provider) for i in range(max(counts))]
    try:
        for n in counts:
            before = srv.metrics()
            swappers = [remote(locals_[i], srv.port) for i in range(n)]
            frames = int(seconds * FPS)
            fps: list[float] = [0.0] * n

            def stream(
                i: int, fps: list[float] = fps, swappers: list = swappers, frames: int = frames
            ) -> None:
                fps[i] = paced(swappers[i], clip, frames, seed=10 + i)

            threads = [threading.Thread(target=stream, args=(i,)) for i in range(n)]
            start = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.monotonic() - start
            after = srv.metrics()
            stats = [s.stats() for s in swappers]
            for s in swappers:
                s.close()
            executions = after["nv_inference_exec_count"] - before["nv_inference_exec_count"]
            inferences = after["nv_inference_count"] - before["nv_inference_count"]
            found[n] = {
                "faces_per_s_remote": sum(s.faces_remote for s in stats) / elapsed,
                "fps_per_stream_min": min(fps),
                "mean_batch": inferences / executions if executions else None,
                "rtt_p99_ms_worst_stream": max((s.rtt_p99_ms or 0.0) for s in stats),
                "remote_share": sum(s.faces_remote for s in stats)
                / max(sum(s.faces_remote + s.faces_local for s in stats), 1),
            }
    finally:
        for swapper in locals_:
            swapper.close()
    return found


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--width", type=int, default=128, help="the synthetic swapper's width")
    p.add_argument("--fp16", action="store_true", help="the swapper in float16 (GPU)")
    p.add_argument("--frames", type=int, default=90)
    p.add_argument("--seconds", type=float, default=4.0, help="per stream count")
    p.add_argument("--streams", default="1,2,4,8")
    p.add_argument("--delays", default="0,50,150", help="ms added each way")
    p.add_argument("--provider", default="cpu", help="the server's provider (cpu, cuda)")
    p.add_argument("--face", type=Path, default=None)
    p.add_argument("--json", type=Path, help="also write the figures here")
    p.add_argument("--parts", default=",".join(PARTS), help="which figures to measure")
    p.add_argument(
        "--compression",
        default=RemoteConfig().compression,
        choices=("none", "gzip", "deflate"),
        help="the client's compression for the latency figures (default: [remote]'s)",
    )
    p.add_argument(
        "--response-compression",
        default="low",
        choices=wire.RESPONSE_COMPRESSION,
        help="the server's compression of its answers (livecam serve --response-compression)",
    )
    args = p.parse_args()
    parts = set(args.parts.split(","))
    clip = Clip(args.face or default_face())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model = folder / f"inswapper_like_w{args.width}.onnx"
        inswapper_like(model, args.width, fp16=args.fp16)
        local = local_swapper(model, folder / "data", args.provider)
        srv = ServeChild(
            model,
            folder / "serve.log",
            provider=args.provider,
            response_compression=args.response_compression,
        )
        srv.start()
        figures: dict = {
            "width": args.width,
            "fp16": args.fp16,
            "server_provider": args.provider,
            "response_compression": args.response_compression,
        }
        try:
            if "latency" in parts:
                figures["latency"] = bench_latency(local, srv, clip, args.frames, args.compression)
            if "delays" in parts:
                delays = [int(d) for d in args.delays.split(",")]
                figures["delays"] = bench_delays(local, srv, clip, args.frames, delays)
            if "bytes" in parts:
                figures["bytes"] = bench_bytes(local, srv, clip, min(args.frames, 30))
            if "streams" in parts:
                counts = [int(n) for n in args.streams.split(",")]
                figures["streams"] = bench_streams(
                    model, folder, srv, clip, args.seconds, counts, args.provider
                )
        finally:
            srv.kill()
            local.close()
    report(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


def report(f: dict) -> None:
    print(
        f"remote swap on 127.0.0.1, narrow synthetic inswapper (width {f['width']}), server "
        f"answers compressed {f['response_compression']}"
    )
    if "latency" in f:
        lat = f["latency"]
        print(
            f"per frame (client compression {lat['compression']}): local p50 "
            f"{lat['local']['p50_ms']:.1f} ms p99 "
            f"{lat['local']['p99_ms']:.1f} ms | remote p50 {lat['remote']['p50_ms']:.1f} ms p99 "
            f"{lat['remote']['p99_ms']:.1f} ms | added p50 {lat['added_p50_ms']:.1f} ms p99 "
            f"{lat['added_p99_ms']:.1f} ms"
        )
        here, there = lat["local"]["cpu_ms"], lat["remote"]["cpu_ms"]
        print(
            f"client CPU per frame: local {here:.1f} ms, remote {there:.1f} ms "
            f"(ratio {there / here:.2f})"
        )
    for delay, row in f.get("delays", {}).items():
        print(
            f"+{delay} ms each way: {row['fps']:.1f} fps (x{row['fps_ratio']:.2f}), rtt p50 "
            f"{row['rtt_p50_ms'] or float('nan'):.0f} ms, server swapped {row['remote_share']:.0%}"
            f", late {row['late']}, skipped {row['skipped']}"
        )
    for name, row in f.get("bytes", {}).items():
        print(
            f"client compression {name}: up {row['bytes_up_per_frame']:.0f} B/frame "
            f"({row['mbit_up_at_30fps']:.1f} Mbit/s at 30 fps), down "
            f"{row['bytes_down_per_frame']:.0f} B/frame ({row['mbit_down_at_30fps']:.1f} Mbit/s)"
        )
    for n, row in f.get("streams", {}).items():
        batch = row["mean_batch"]
        print(
            f"{n} stream(s): {row['faces_per_s_remote']:.0f} faces/s from the server, "
            f"mean batch {batch if batch is None else round(batch, 2)}, slowest stream "
            f"{row['fps_per_stream_min']:.1f} fps, worst p99 rtt "
            f"{row['rtt_p99_ms_worst_stream']:.0f} ms, server share {row['remote_share']:.0%}"
        )


if __name__ == "__main__":
    sys.exit(main())
