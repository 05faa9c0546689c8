"""Device check (issue 10): the full-size synthetic swapper on CUDA/TensorRT, measured.

Run by bench/gpu_check.sh (which installs the carried onnxruntime-gpu first). Writes JSON
under ``--out``: ``env.json`` (Python, ORT, providers, torch, GPU), ``probe.json`` (a real
session on each GPU provider), ``cases.json`` (one row per measured case) and, always,
``summary.json`` (what ran, what was skipped and why, the headline figures).

The matrix (``build_cases``), in priority order: the swapper alone on CUDA fp16/fp32 at
batch 1/4/8 (faces/s, host in/out through pinned buffers and device-resident), the device
path (crop, normalise, swap, decode, one download) for 720p/1080p frames with 1 and 4
faces and a batch limit of 1/4/8 frames, on ORT's own stream and on a LiveCam stage stream,
the naive loop (one face at a time, host round trips, no IO binding) for the ratio,
TensorRT if it loads, and ``livecam bench`` (cache on/off, overlap on/off) when it exists.
When ORT's CUDA provider cannot run, the swapper is run by torch (``TorchGraph``: the ONNX
graph executed op by op with torch on the GPU) and every row says so. ``plan_matrix`` keeps
the cases that fit the time budget; the rest are listed as skipped.

    python bench/gpu_check.py --out DIR [--budget-s 420] [--dry-run]

``--dry-run`` (no GPU): CPU provider, a narrow model, few runs: every part that needs no
CUDA runs and writes its JSON.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/: also when loaded by path
from timing import median_ms  # noqa: E402

SIZES = {"720p": (1280, 720), "1080p": (1920, 1080)}


@dataclass(frozen=True)
class Case:
    """One measurement: ``kind`` (swapper, frames, naive, trt, bench), its parameters, the
    estimated seconds it takes (model load and warm-up included) and its priority (lower
    runs first)."""

    name: str
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    est_s: float = 5.0
    priority: int = 50


def plan_matrix(
    cases: list[Case], budget_s: float, reserve_s: float = 15.0
) -> tuple[list[Case], list[Case]]:
    """(planned, skipped): the cases in priority order (stable) whose estimates fit in
    ``budget_s`` less ``reserve_s`` (kept for the summary); a case that does not fit is
    skipped and smaller later ones may still fit."""
    left = budget_s - reserve_s
    planned: list[Case] = []
    skipped: list[Case] = []
    for case in sorted(cases, key=lambda c: c.priority):
        if case.est_s <= left:
            planned.append(case)
            left -= case.est_s
        else:
            skipped.append(case)
    return planned, skipped


class Budget:
    """A wall-clock deadline."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()


def build_cases(engines: list[str], dry: bool, has_bench: bool) -> list[Case]:
    """The matrix for ``engines`` (ort-cuda, ort-cpu, torch), priority first. Estimates are
    for the full-size model on an H200 (a dry run uses a narrow model, seconds each)."""
    cases: list[Case] = []
    scale = 0.3 if dry else 1.0
    main = engines[0]
    for e, engine in enumerate(engines):
        for p, precision in enumerate(("fp16", "fp32")):
            for batch in (1, 4, 8):
                cases.append(
                    Case(
                        f"swapper/{engine}/{precision}/b{batch}",
                        "swapper",
                        {"engine": engine, "precision": precision, "batch": batch},
                        est_s=8 * scale,
                        priority=10 + 10 * e + p,
                    )
                )
    if main != "torch":
        for size in SIZES:
            for faces in (1, 4):
                for limit in (1, 4, 8):
                    for stream in ("ort", "stage"):
                        if stream == "stage" and (main != "ort-cuda" or limit != 1):
                            continue  # a stage stream exists only on CUDA; one limit is enough
                        first = size == "1080p" and faces == 1 and limit == 1
                        cases.append(
                            Case(
                                f"frames/{main}/fp16/{size}/f{faces}/bl{limit}/{stream}",
                                "frames",
                                {
                                    "engine": main,
                                    "precision": "fp16",
                                    "size": size,
                                    "faces": faces,
                                    "batch_limit": limit,
                                    "stream": stream,
                                },
                                est_s=10 * scale,
                                priority=5 if first else 30 + limit,
                            )
                        )
            for faces in (1, 4):
                cases.append(
                    Case(
                        f"naive/{main}/fp32/{size}/f{faces}",
                        "naive",
                        {"engine": main, "precision": "fp32", "size": size, "faces": faces},
                        est_s=10 * scale,
                        priority=6 if faces == 1 else 40,
                    )
                )
    if main == "ort-cuda":
        cases.append(Case("trt/fp16/b4", "trt", {"batch": 4}, est_s=240, priority=60))
    if has_bench:
        # the live pipeline (`livecam bench`): the issue's headline case first (cache off,
        # overlap on), then overlap off, the cache on, and the low memory strategy
        for name, params, priority in (
            ("cache-off/overlap-on", {"cache": "off", "overlap": "on"}, 3),
            ("cache-off/overlap-off", {"cache": "off", "overlap": "off"}, 8),
            ("cache-on/overlap-on", {"cache": "on", "overlap": "on"}, 9),
            ("memory-low", {"cache": "off", "overlap": "on", "memory": "low"}, 9),
        ):
            cases.append(Case(f"bench/{name}", "bench", params, 45 * scale, priority))
    return cases


# ---------------------------------------------------------------- torch fallback


class TorchGraph:
    """The synthetic swappers' ONNX graph run op by op with torch (the fallback when ORT
    cannot use CUDA): Conv, Pad (reflect), LeakyRelu, Relu, Tanh, InstanceNormalization,
    Gemm, Unsqueeze, Add, Mul, Resize (nearest) and Identity."""

    def __init__(self, path: Path, device: str) -> None:
        import onnx
        import torch
        from onnx import numpy_helper

        model = onnx.load(str(path))
        self.torch = torch
        self.device = device
        self.values = {
            i.name: torch.from_numpy(numpy_helper.to_array(i).copy()).to(device)
            for i in model.graph.initializer
        }
        self.nodes = list(model.graph.node)
        self.inputs = [i.name for i in model.graph.input]
        self.outputs = [o.name for o in model.graph.output]

    def __call__(self, feeds: dict[str, Any]) -> list[Any]:
        import onnx

        torch, f = self.torch, self.torch.nn.functional
        env = dict(self.values)
        env.update(feeds)
        for node in self.nodes:
            a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
            x: list[Any] = [env[i] if i else None for i in node.input]
            op = node.op_type
            if op == "Conv":
                pads = list(a.get("pads", [0, 0, 0, 0]))
                y = f.conv2d(x[0], x[1], x[2], stride=list(a["strides"]), padding=pads[:2])
            elif op == "Pad":
                p = [int(v) for v in x[1].tolist()]
                y = f.pad(x[0], (p[3], p[7], p[2], p[6]), mode="reflect")
            elif op == "LeakyRelu":
                y = f.leaky_relu(x[0], a.get("alpha", 0.01))
            elif op == "Relu":
                y = torch.relu(x[0])
            elif op == "Tanh":
                y = torch.tanh(x[0])
            elif op == "InstanceNormalization":
                y = f.instance_norm(x[0], weight=x[1], bias=x[2], eps=a.get("epsilon", 1e-5))
            elif op == "Gemm":
                y = x[0] @ x[1] + x[2]
            elif op == "Unsqueeze":
                y = x[0]
                for axis in sorted(int(v) for v in x[1].tolist()):
                    y = y.unsqueeze(axis)
            elif op == "Add":
                y = x[0] + x[1]
            elif op == "Mul":
                y = x[0] * x[1]
            elif op == "Resize":
                scale = [float(v) for v in x[2].tolist()]
                y = f.interpolate(x[0], scale_factor=scale[2:], mode="nearest")
            elif op == "Identity":
                y = x[0]
            else:
                raise NotImplementedError(f"op {op} is not in TorchGraph")
            env[node.output[0]] = y
        return [env[o] for o in self.outputs]


# ---------------------------------------------------------------- measurements


class Checker:
    """Holds the models and sessions the cases share, and runs one case at a time."""

    def __init__(self, args: argparse.Namespace, out: Path) -> None:
        self.args = args
        self.out = out
        self.dry = bool(args.dry_run)
        self.runs = 5 if self.dry else 20
        self.width = args.width
        self.models: dict[str, Path] = {}
        self.sessions: dict[tuple[str, str, str], Any] = {}
        self.streams: dict[str, Any] = {}

    def model_path(self, precision: str) -> Path:
        from livecam.benchmark.synthetic_models import inswapper_like

        if precision not in self.models:
            path = Path(self.args.work) / f"inswapper_like_w{self.width}_{precision}.onnx"
            if not path.exists():
                t0 = time.perf_counter()
                stats = inswapper_like(path, self.width, fp16=precision == "fp16")
                print(f"built {path.name}: {stats} in {time.perf_counter() - t0:.1f} s")
            self.models[precision] = path
        return self.models[precision]

    def session(self, engine: str, precision: str, stream: str = "ort") -> Any:
        """An OnnxModel (ORT engines) or TorchGraph for ``engine`` and ``precision``."""
        key = (engine, precision, stream)
        if key in self.sessions:
            return self.sessions[key]
        path = self.model_path(precision)
        if engine == "torch":
            model: Any = TorchGraph(path, "cuda:0" if not self.dry else "cpu")
        else:
            from livecam.runtime.cuda import StageStream
            from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions

            provider = {"ort-cuda": "cuda", "ort-cpu": "cpu", "ort-trt": "tensorrt"}[engine]
            handle = None
            if stream == "stage":
                self.streams[engine] = StageStream("cuda:0")
                handle = self.streams[engine].handle
            options = RuntimeOptions(
                provider=provider,  # type: ignore[arg-type]
                cache_dir=Path(self.args.work) / "cache",
                tensorrt_fp16=precision == "fp16",
            )
            model = OnnxModel(path, options, compute_stream=handle)
        self.sessions[key] = model
        return model

    def feeds(self, batch: int, precision: str) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(0)
        dtype = np.float16 if precision == "fp16" else np.float32
        latent = rng.standard_normal((batch, 512)).astype(np.float32)
        latent /= np.linalg.norm(latent, axis=1, keepdims=True)
        return {
            "target": rng.random((batch, 3, 128, 128)).astype(dtype),
            "source": latent.astype(dtype),
        }

    def run_case(self, case: Case) -> dict[str, Any]:
        fn = getattr(self, f"case_{case.kind}")
        row: dict[str, Any] = {"name": case.name, **case.params}
        t0 = time.perf_counter()
        row.update(fn(**case.params))
        row["wall_s"] = round(time.perf_counter() - t0, 2)
        return row

    def case_swapper(self, engine: str, precision: str, batch: int) -> dict[str, Any]:
        model = self.session(engine, precision)
        feeds = self.feeds(batch, precision)
        row: dict[str, Any] = {}
        if engine == "torch":
            import torch

            on = "cpu" if self.dry else "cuda:0"
            dev = {k: torch.from_numpy(v).to(on) for k, v in feeds.items()}

            def run_torch() -> None:
                model(dev)
                if on != "cpu":
                    torch.cuda.synchronize()

            with torch.inference_mode():
                ms = median_ms(run_torch, self.runs, warmup=2)
            row.update(ms_device=round(ms, 3), faces_per_s_device=round(batch * 1e3 / ms, 1))
            return row
        row["provider"] = model.providers.used[0]
        ms = median_ms(lambda: model.run(feeds), self.runs, warmup=2)
        row.update(ms_host_io=round(ms, 3), faces_per_s_host_io=round(batch * 1e3 / ms, 1))
        if model.device == "cuda":
            import torch

            dev = {k: torch.from_numpy(v).to("cuda:0") for k, v in feeds.items()}
            ms = median_ms(lambda: model.run_torch(dev), self.runs, warmup=2)
            row.update(ms_device=round(ms, 3), faces_per_s_device=round(batch * 1e3 / ms, 1))
            free, total = torch.cuda.mem_get_info()  # ORT's arena included (torch's own
            row["vram_used_mb"] = round((total - free) / 2**20, 1)  # counters miss it)
        return row

    def scene(self, size: str, faces: int, frames: int) -> tuple[list[Any], list[int], list[Any]]:
        """``frames`` noise frames of ``size`` with ``faces`` face boxes each: (frame
        contexts, frame index per face, crop affine per face)."""
        from livecam.types import FrameContext

        w, h = SIZES[size]
        rng = np.random.default_rng(1)
        contexts = [
            FrameContext(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), i) for i in range(frames)
        ]
        index: list[int] = []
        affines: list[Any] = []
        box = h // 3
        for i in range(frames):
            for k in range(faces):
                x0, y0 = (k % 2) * w // 2 + w // 8, (k // 2) * h // 2 + h // 12
                s = 128 / box
                affines.append(np.array([[s, 0, -x0 * s], [0, s, -y0 * s]], np.float32))
                index.append(i)
        return contexts, index, affines

    def case_frames(
        self, engine: str, precision: str, size: str, faces: int, batch_limit: int, stream: str
    ) -> dict[str, Any]:
        from livecam.runtime.torch_path import Contract, swap_crops

        model = self.session(engine, precision, stream)
        contexts, index, affines = self.scene(size, faces, batch_limit)
        vectors = self.feeds(len(index), "fp32")["source"]
        contract = Contract.of("target", 128, 0.0, 255.0, "rgb")

        def run() -> None:
            swap_crops(
                model,
                contexts,
                index,
                affines,
                vectors,
                contract=contract,
                pixel_boost=1,
                source="source",
            )

        ms = median_ms(run, self.runs, warmup=2)
        return {
            "provider": model.providers.used[0],
            "user_stream": model.has_user_compute_stream,
            "ms_per_call": round(ms, 3),
            "frames_per_s": round(batch_limit * 1e3 / ms, 1),
            "faces_per_s": round(len(index) * 1e3 / ms, 1),
            "what": "upload, crop, normalise, swap, decode, one download (no paste-back)",
        }

    def case_naive(self, engine: str, precision: str, size: str, faces: int) -> dict[str, Any]:
        import cv2

        model = self.session(engine, precision)
        contexts, index, affines = self.scene(size, faces, 1)
        vectors = self.feeds(len(index), "fp32")["source"]

        def run() -> None:
            for i, affine in enumerate(affines):  # one face at a time, host round trips
                crop = cv2.warpAffine(contexts[index[i]].image, affine, (128, 128))
                x = (crop[..., ::-1].astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
                out = model.session.run(None, {"target": x, "source": vectors[i : i + 1]})[0]
                np.clip(out[0].transpose(1, 2, 0) * 255, 0, 255).astype(np.uint8)

        ms = median_ms(run, self.runs, warmup=2)
        return {
            "provider": model.providers.used[0],
            "ms_per_frame": round(ms, 3),
            "frames_per_s": round(1e3 / ms, 1),
            "faces_per_s": round(faces * 1e3 / ms, 1),
        }

    def case_trt(self, batch: int) -> dict[str, Any]:
        model = self.session("ort-trt", "fp16")
        if model.providers.used[0] != "tensorrt":
            return {"skipped": f"TensorRT did not load: {model.fallback_reason}"}
        return self.case_swapper("ort-trt", "fp16", batch)

    def case_bench(self, cache: str, overlap: str, memory: str = "balanced") -> dict[str, Any]:
        models = self.args.models_dir
        if not models or not Path(models).is_dir():
            return {"skipped": "no --models-dir with scrfd_2.5g_kps.onnx and mobilefacenet.onnx"}
        target = self.out / f"bench_cache_{cache}_overlap_{overlap}_{memory}.json"
        # the issue's target case: the full-size synthetic swapper (with the real SCRFD 2.5G
        # and MobileFaceNet-based recognizer from --models-dir), 1080p, one face, a source
        # at 240 fps so the live rate is the pipeline's, not the camera's
        cmd = [sys.executable, "-m", "livecam", "bench", "--compare", "naive", "--faces", "1"]
        if self.args.dry_run:  # a CPU: the narrow swapper, a small clip
            cmd += ["--synthetic", "narrow", "--size", "640x480", "--frames", "40"]
            cmd += ["--naive-frames", "5"]
        else:
            cmd += ["--synthetic", "full", "--size", "1080p", "--frames", "720", "--fps", "240"]
        cmd += ["--cache", cache, "--overlap", overlap, "--memory", memory]
        cmd += ["--json", str(target), "--overwrite"]
        env = {**os.environ, "LIVECAM_MODELS_DIR": str(models)}
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
        row: dict[str, Any] = {"rc": done.returncode, "tail": done.stderr[-800:]}
        if target.exists():
            row["result"] = json.loads(target.read_text())
        return row


# ---------------------------------------------------------------- environment


def environment(dry: bool) -> tuple[dict[str, Any], list[str]]:
    """(facts, engines to measure): ORT build and providers, torch and its GPU, and which
    engines work here (a real CUDA session decides ort-cuda, else torch on CUDA)."""
    facts: dict[str, Any] = {"python": platform.python_version(), "dry_run": dry}
    try:
        import torch  # first: ORT then finds CUDA/cuDNN in torch's NVIDIA wheels

        facts["torch"] = torch.__version__
        facts["torch_cuda"] = bool(torch.cuda.is_available())
        if facts["torch_cuda"]:
            facts["gpu"] = torch.cuda.get_device_name(0)
            facts["compute_capability"] = ".".join(map(str, torch.cuda.get_device_capability(0)))
    except Exception as e:
        facts["torch"] = f"unavailable: {e!r}"
        facts["torch_cuda"] = False
    import onnxruntime as ort

    facts["ort"] = ort.__version__
    facts["ort_file"] = ort.__file__
    if hasattr(ort, "preload_dlls") and not dry:
        try:
            ort.preload_dlls()
            facts["preload_dlls"] = "ok"
        except Exception as e:
            facts["preload_dlls"] = repr(e)
    facts["available_providers"] = ort.get_available_providers()
    print("onnxruntime", ort.__version__, "providers:", facts["available_providers"])
    from livecam.runtime.providers import CUDA, TENSORRT, probe_providers

    probes = probe_providers([CUDA, TENSORRT])
    facts["probes"] = [asdict(p) for p in probes]
    for p in probes:
        print(f"probe {p.name}: {'works' if p.works else 'FAILS'}: {p.detail}")
    if dry:
        return facts, ["ort-cpu"]
    if probes[0].works:
        return facts, ["ort-cuda"]
    if facts["torch_cuda"]:
        print("ORT's CUDA provider does not work here: the swapper is run by torch instead")
        return facts, ["torch"]
    return facts, ["ort-cpu"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "out/gpu_check"))
    parser.add_argument("--work", default="/tmp/livecam_gpu_check")
    parser.add_argument("--budget-s", type=float, default=420.0)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--width", type=int, default=None, help="model width (1024: full)")
    parser.add_argument("--models-dir", default=None, help="lite models for `livecam bench`")
    args = parser.parse_args(argv)
    args.width = args.width or (32 if args.dry_run else 1024)
    budget = Budget(args.budget_s)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    Path(args.work).mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"budget_s": args.budget_s, "width": args.width}
    rows: list[dict[str, Any]] = []
    try:
        facts, engines = environment(args.dry_run)
        (out / "env.json").write_text(json.dumps(facts, indent=1, default=str))
        summary["engines"] = engines
        if engines == ["torch"]:
            summary["note"] = "ORT CUDA failed: swapper figures are torch running the graph"
        has_bench = importlib.util.find_spec("livecam.benchmark") is not None
        checker = Checker(args, out)
        for precision in ("fp16", "fp32"):  # built up front: their cost is not a case's
            checker.model_path(precision)
        cases = build_cases(engines, args.dry_run, has_bench)
        planned, skipped = plan_matrix(cases, budget.left())
        summary["skipped_by_plan"] = [c.name for c in skipped]
        for case in planned:
            if budget.left() < case.est_s * 0.5 + 10:
                summary.setdefault("skipped_for_time", []).append(case.name)
                continue
            try:
                row = checker.run_case(case)
            except Exception as e:
                row = {"name": case.name, "error": repr(e), "trace": traceback.format_exc()[-600:]}
            print(json.dumps({k: v for k, v in row.items() if k != "trace"}))
            rows.append(row)
            (out / "cases.json").write_text(json.dumps(rows, indent=1, default=str))
        summary["headline"] = headline(rows)
    except Exception as e:
        summary["error"] = repr(e)
        summary["trace"] = traceback.format_exc()[-1500:]
        print("gpu_check failed:", repr(e))
    finally:
        summary["cases_run"] = len(rows)
        summary["seconds_left"] = round(budget.left(), 1)
        (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
        print(json.dumps({k: v for k, v in summary.items() if k != "trace"}, indent=1))
    return 0 if "error" not in summary else 1


def headline(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures the issue's targets name: best swapper faces/s, 1080p one-face fps on
    the device path and its ratio to the naive loop, and each live `livecam bench` run
    (fps out, glass-to-glass p50/p99, its ratio to the naive loop, peak VRAM)."""
    best = max((r.get("faces_per_s_device", 0) for r in rows), default=0)
    out: dict[str, Any] = {"best_swapper_faces_per_s_device": best}
    for r in rows:
        if r["name"].startswith("frames/") and "/1080p/f1/bl1/" in r["name"] and "ms_per_call" in r:
            out[f"fps_1080p_1face_{r['stream']}"] = r["frames_per_s"]
    naive = next(
        (r for r in rows if r["name"].startswith("naive/") and "/1080p/f1" in r["name"]), None
    )
    fast = max((v for k, v in out.items() if k.startswith("fps_1080p")), default=None)
    if naive and "frames_per_s" in naive and fast:
        out["ratio_vs_naive_1080p_1face"] = round(fast / naive["frames_per_s"], 2)
    for r in rows:
        result = r.get("result")
        if r["name"].startswith("bench/") and isinstance(result, dict):
            out[r["name"]] = {
                "fps_out": result.get("fps_out"),
                "latency_ms": result.get("latency_ms"),
                "vs_naive": (result.get("naive") or {}).get("ratio"),
                "peak_vram_mb": result.get("peak_vram_mb"),
                "provider": result.get("provider"),
                "overlap": result.get("overlap"),
            }
    return out


if __name__ == "__main__":
    sys.exit(main())
