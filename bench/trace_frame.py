"""Which livecam files run for one frame, camera to virtual camera (the per-frame path).

    python bench/trace_frame.py [--preset lite|standard] [--frames 40] [--functions]

Runs the real ``App`` on the camera path (``CameraSource`` reading a test video through
OpenCV, as the tests do) into the virtual-camera sink (a pyvirtualcam backend that
records), with the preset's models from ../shared/testdata (standard: SCRFD 2.5G, a 512-d
recognizer made from MobileFaceNet and the narrow synthetic inswapper; no weights
downloaded). Once ``--warm`` frames were sent, a profile hook on the capture, inference,
render and output threads records every livecam function called for the next
``--frames`` frames, then prints the files (and with ``--functions`` their functions), in
the order they were first called. Start-up, the loader and the quality tuner are left out:
that is the wiring, not the per-frame path.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TESTDATA = Path(os.environ.get("LIVECAM_TESTDATA") or REPO.parent / "shared" / "testdata")
sys.path[:0] = [str(REPO), str(REPO / "tests")]  # this checkout's livecam, its test helpers

from recording_backend import register_recording_backend, unregister  # noqa: E402

import livecam.app  # noqa: E402
from livecam.app import App  # noqa: E402
from livecam.sources.camera import CameraSource  # noqa: E402

try:
    from livecam.config.schema import Config, SourceConfig, SwapConfig
except ImportError:  # the layout before issue 15 (ce8da76), to compare
    from livecam.config import Config, SourceConfig, SwapConfig  # type: ignore[no-redef,attr-defined]

FRAME_THREADS = ("livecam-capture", "livecam-inference", "livecam-render", "livecam-output")
VIDEO = TESTDATA / "video" / "liveportrait_d6.mp4"
FACE = REPO / "assets" / "grace_hopper.jpg"


class Recorder:
    """A profile hook: (file, function) of every livecam call on the frame threads."""

    def __init__(self) -> None:
        self.on = False
        self.calls: dict[tuple[str, str], None] = {}  # insertion-ordered set
        self.root = str(REPO / "livecam")

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.on or event != "call":
            return
        path = frame.f_code.co_filename
        if path.startswith(self.root) and threading.current_thread().name in FRAME_THREADS:
            rel = os.path.relpath(path, REPO)
            self.calls.setdefault((rel, frame.f_code.co_name), None)


def swap_section(preset: str, folder: Path) -> dict[str, Any]:
    section: dict[str, Any] = {"preset": preset, "face": str(FACE), "provider": "cpu"}
    if preset == "standard":
        try:
            from livecam.benchmark.synthetic_models import arcface_like, inswapper_like
        except ImportError:  # before issue 15
            from livecam.synthetic_models import arcface_like, inswapper_like  # type: ignore

        recognizer, swapper = folder / "arcface_like.onnx", folder / "narrow_inswapper.onnx"
        arcface_like(recognizer, TESTDATA / "models" / "mobilefacenet.onnx")
        inswapper_like(swapper, width=128)
        section |= {
            "detector_model": str(TESTDATA / "models" / "scrfd_2.5g_kps.onnx"),
            "recognizer_model": str(recognizer),
            "swapper_model": str(swapper),
        }
    return section


def swap_table(flat: dict[str, Any]) -> Any:
    """The swap section in this checkout's layout: its settings put into their sections
    where the config has them (``SwapConfig.of``), else the flat table of older ones."""
    of = getattr(SwapConfig, "of", None)
    return of(**flat) if of is not None else flat


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--preset", default="lite", choices=("lite", "standard"))
    p.add_argument("--warm", type=int, default=10, help="frames sent before recording")
    p.add_argument("--frames", type=int, default=40, help="frames recorded")
    p.add_argument("--functions", action="store_true", help="list the functions too")
    args = p.parse_args()
    os.environ.setdefault("LIVECAM_MODELS_DIR", str(TESTDATA / "models"))
    store = register_recording_backend()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LIVECAM_CACHE_DIR"] = str(Path(tmp) / "faces")
        cfg = Config.from_dict(
            {
                "source": {"spec": "0", "size": [640, 480], "fps": 30},
                "output": {"sinks": ["virtualcam"], "virtualcam_backend": store.name},
                "pipeline": {"stages": ["swap"]},
                "swap": swap_table(swap_section(args.preset, Path(tmp))),
            }
        )

        def camera(source: SourceConfig) -> CameraSource:  # camera 0 is this video
            return CameraSource(str(VIDEO), source)

        setattr(livecam.app, "make_source", camera)  # noqa: B010 - the camera is this video
        recorder = Recorder()
        threading.setprofile(recorder.hook)
        app = App(cfg)
        app.start()
        try:
            sent = store.frames
            while len(sent) < args.warm and app.running:
                time.sleep(0.01)
            recorder.on = True
            first = len(sent)
            while len(sent) < first + args.frames and app.running:
                time.sleep(0.01)
            recorder.on = False
        finally:
            app.stop()
            threading.setprofile(None)
            unregister(store.name)
    files: dict[str, list[str]] = {}
    for path, function in recorder.calls:
        files.setdefault(path, []).append(function)
    print(f"{args.preset}: {len(files)} livecam files on the per-frame path ({args.frames} frames)")
    for path, functions in files.items():
        print(f"  {path}" + (f": {', '.join(functions)}" if args.functions else ""))


if __name__ == "__main__":
    main()
