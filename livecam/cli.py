"""The `livecam` command line: run, demo, doctor."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Any, get_args

from livecam import __version__
from livecam.config import (
    BlendMode,
    CameraBackend,
    ColorTransfer,
    Config,
    FaceSelection,
    Preset,
    StageName,
)
from livecam.errors import LivecamError
from livecam.types import Event

log = logging.getLogger("livecam")

SOURCE_HELP = (
    "camera[:N] (webcam N, default 0) | screen[:N] (monitor N) | screen:x,y,w,h (a region) | "
    "synthetic (test pattern; see --face-motion, --stamp) | PATH to a video or an image"
)
SINK_HELP = (
    "virtualcam (OBS/Zoom/Meet camera) | window (preview) | auto (virtual camera, else a window) | "
    "null | FILE.mp4/.avi (record) | FILE.png/.jpg (last frame); repeat for several"
)


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 1280x720, got {text!r}") from None
    return w, h


def add_run_options(p: argparse.ArgumentParser) -> None:
    """Options of `livecam run` (also used by `livecam demo`). Unset options keep the config."""
    src = p.add_argument_group("source")
    src.add_argument("--source", metavar="SPEC", help=SOURCE_HELP)
    src.add_argument("--fps", type=float, help="requested capture rate (default 30)")
    src.add_argument("--size", type=_size, metavar="WxH", help="frame size, e.g. 1280x720")
    src.add_argument(
        "--unpaced",
        action="store_true",
        default=None,
        help="deliver frames as fast as possible (benchmarks); no repeats",
    )
    src.add_argument(
        "--camera-backend",
        choices=get_args(CameraBackend),
        help="OpenCV capture backend (default: the right one for this OS)",
    )
    src.add_argument(
        "--no-mjpg",
        dest="mjpg",
        action="store_false",
        default=None,
        help="do not ask the camera for MJPG",
    )
    src.add_argument(
        "--face-motion",
        metavar="IMG",
        help="synthetic source: animate this portrait with smooth head motion",
    )
    src.add_argument(
        "--stamp",
        action="store_true",
        default=None,
        help="synthetic source: write the capture time into the pixels",
    )
    out = p.add_argument_group("output")
    out.add_argument("--sink", action="append", metavar="SPEC", help=SINK_HELP)
    out.add_argument("--output-fps", type=float, help="output rate (default: the source's)")
    out.add_argument("--vcam-backend", help="pyvirtualcam backend (default: try each)")
    out.add_argument("--vcam-device", help="virtual camera device, e.g. /dev/video10")
    out.add_argument(
        "--overwrite",
        action="store_true",
        default=None,
        help="replace an existing recording or image file (default: keep it and write to "
        "a new name with a timestamp)",
    )
    pipe = p.add_argument_group("pipeline")
    pipe.add_argument(
        "--stage",
        action="append",
        choices=get_args(StageName),
        help="stage to run, in order; repeat for several (default: swap when "
        "--face is given, else passthrough)",
    )
    pipe.add_argument("--yunet", metavar="ONNX", help="YuNet model for the facebox stage")
    pipe.add_argument(
        "--batch",
        type=int,
        metavar="N",
        help="lossless runs: frames processed together (default 4); live runs always take "
        "the newest frame and batch its faces",
    )
    pipe.add_argument(
        "--lossless",
        action="store_true",
        default=None,
        help="never drop frames: slow the source down instead (offline rendering)",
    )
    swap = p.add_argument_group("face swap")
    swap.add_argument("--face", metavar="IMG", help="source face image to swap in")
    swap.add_argument(
        "--face-index",
        type=int,
        metavar="N",
        help="which face of --face when it holds several (0 = largest)",
    )
    swap.add_argument("--preset", choices=get_args(Preset), help="model set (default offline)")
    swap.add_argument(
        "--select",
        choices=get_args(FaceSelection),
        help="faces to replace: one (largest), all, or reference",
    )
    swap.add_argument("--reference", metavar="IMG", help="with --select reference: whose face")
    swap.add_argument(
        "--blend",
        choices=get_args(BlendMode),
        help="feather (default) or seamless (Poisson cloning, slower)",
    )
    swap.add_argument(
        "--color",
        choices=get_args(ColorTransfer),
        help="colour matching: lab (with local light, default), rct, none",
    )
    swap.add_argument(
        "--keep-eyes",
        action="store_true",
        default=None,
        help="keep the target's eyes (when the source photo blinks)",
    )
    swap.add_argument(
        "--no-keep-mouth",
        dest="keep_mouth",
        action="store_false",
        default=None,
        help="paste the source's mouth too instead of keeping the target's",
    )
    swap.add_argument(
        "--detect-every",
        type=int,
        metavar="N",
        help="run the face detector every N frames, track between (default 3)",
    )
    swap.add_argument(
        "--detect-size",
        type=int,
        metavar="PX",
        help="long side the detector works at (default 400: in a 640x480 frame faces from "
        "~130 px; raise it for small faces or 720p, at a CPU cost)",
    )
    run = p.add_argument_group("run")
    run.add_argument("--frames", type=int, metavar="N", help="stop after N captured frames")
    run.add_argument("--stats-json", metavar="PATH", help="write a JSON summary at the end")
    run.add_argument("--config", metavar="FILE.toml", help="load settings; options override it")
    run.add_argument(
        "--save-config",
        metavar="FILE.toml",
        help="write the effective settings to a TOML file and exit",
    )
    run.add_argument(
        "--commands",
        action="store_true",
        help="read live commands from standard input, one per line (swap on|off, blank on|off, "
        "freeze on|off, face IMG, select MODE, preset NAME, set FIELD VALUE; `help` lists them)",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="no live status line")
    run.add_argument("-v", "--verbose", action="store_true", help="debug logging")


def config_from_args(args: argparse.Namespace, base: Config | None = None) -> Config:
    """Apply the options that were given on top of ``--config`` (or the defaults)."""
    cfg = base or (Config.load(args.config) if args.config else Config())
    overrides: dict[str, dict[str, Any]] = {
        "source": {
            "spec": args.source,
            "fps": args.fps,
            "size": args.size,
            "unpaced": args.unpaced,
            "camera_backend": args.camera_backend,
            "mjpg": args.mjpg,
            "face_motion": args.face_motion,
            "stamp": args.stamp,
        },
        "output": {
            "sinks": tuple(args.sink) if args.sink else None,
            "fps": args.output_fps,
            "virtualcam_backend": args.vcam_backend,
            "virtualcam_device": args.vcam_device,
            "overwrite": args.overwrite,
        },
        "pipeline": {
            "stages": tuple(args.stage) if args.stage else None,
            "yunet_model": args.yunet,
        },
        "buffer": {"batch_limit": args.batch, "lossless": args.lossless},
        "swap": {
            "face": args.face,
            "face_index": args.face_index,
            "preset": args.preset,
            "select": args.select,
            "reference": args.reference,
            "blend": args.blend,
            "color": args.color,
            "keep_eyes": args.keep_eyes,
            "keep_mouth": args.keep_mouth,
            "detect_every": args.detect_every,
            "detect_size": args.detect_size,
        },
        "run": {"frames": args.frames, "stats_json": args.stats_json},
    }
    for section, values in overrides.items():
        given = {k: v for k, v in values.items() if v is not None}
        if given:
            cfg = cfg.with_section(section, **given)
    if args.face and not args.stage:
        cfg = cfg.with_section("pipeline", stages=("swap",))
    return cfg


class StatusPrinter:
    """Prints the live status line (rate-limited) and every event, to stderr."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self._lock = threading.Lock()
        self._ticks = 0

    def event(self, event: Event) -> None:
        with self._lock:
            prefix = "\n" if self.tty and not self.quiet else ""
            print(f"{prefix}{event}", file=sys.stderr, flush=True)

    def message(self, text: str) -> None:
        """A line for the user (a command's error or help), printed at once."""
        with self._lock:
            prefix = "\n" if self.tty and not self.quiet else ""
            print(f"{prefix}{text}", file=sys.stderr, flush=True)

    def status(self, line: str) -> None:
        if self.quiet:
            return
        self._ticks += 1
        with self._lock:
            if self.tty:
                print("\r" + line[:200].ljust(120), end="", file=sys.stderr, flush=True)
            elif self._ticks % 5 == 1:
                print(line, file=sys.stderr, flush=True)


def run_pipeline(cfg: Config, quiet: bool = False, commands: bool = False) -> dict[str, Any]:
    """Run until the stream ends, Ctrl-C or SIGTERM; return the JSON summary.

    When a sink is a preview window (``window``, or ``auto`` that fell back to one), the
    main thread runs the Qt window until it is closed, the stream ends or a stop is asked.
    ``commands``: read live commands from standard input (see ``livecam.console``).
    """
    from livecam.app import App
    from livecam.console import CommandReader
    from livecam.sinks.preview import window_sinks

    app = App(cfg)
    printer = StatusPrinter(quiet)
    app.telemetry.add_listener(printer.event)
    stop_requested = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop_requested.set()

    def print_status() -> None:
        printer.status(app.snapshot(recent=True).status_line())

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        app.start()
        if commands:
            CommandReader(app.controls, sys.stdin, printer.message).start()
        windows = window_sinks(app.sinks)
        if windows:
            from ui.preview_window import run_preview

            run_preview(
                windows,
                lambda: stop_requested.is_set() or app.wait(0),
                tick=print_status,
                tick_s=cfg.run.status_interval_s,
                fps=lambda: app.snapshot(recent=True).fps_out,
            )
        while not stop_requested.is_set() and not app.wait(cfg.run.status_interval_s):
            print_status()
    finally:
        hung = app.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    if printer.tty and not quiet:
        print(file=sys.stderr)
    if hung:
        log.warning("threads that did not stop in time: %s", ", ".join(hung))
    summary = app.snapshot().to_summary()
    summary["files"] = [str(s.written) for s in app.sinks if s.written is not None]
    if cfg.run.stats_json:
        Path(cfg.run.stats_json).write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


def print_summary(summary: dict[str, Any]) -> None:
    lat = summary["latency_ms"]
    lat_text = f"{lat['p50']:.1f}/{lat['p99']:.1f} ms" if lat["p50"] is not None else "n/a"
    print(
        f"frames in {summary['frames_in']}, out {summary['frames_out']}, "
        f"dropped {summary['dropped']}, {summary['fps_out']:.1f} fps out, "
        f"latency p50/p99 {lat_text}"
    )
    for name, p in summary["stages_ms"].items():
        print(f"  stage {name}: p50 {p['p50']:.2f} ms, p99 {p['p99']:.2f} ms")
    for path in summary.get("files", []):
        print(f"wrote {path}")


def cmd_run(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    if args.save_config:
        cfg.save(args.save_config)
        print(f"wrote {args.save_config}")
        return 0
    summary = run_pipeline(cfg, args.quiet, args.commands)
    print_summary(summary)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from livecam.doctor import format_checks, run_doctor

    checks = run_doctor(args.vcam_backend, args.vcam_device)
    ascii_only = (sys.stdout.encoding or "").lower().replace("-", "") != "utf8"
    print(format_checks(checks, ascii_only=ascii_only))
    return 0 if all(c.ok is not False for c in checks) else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from livecam.demo import run_demo

    return run_demo(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="livecam", description="Real-time face swap to a virtual camera."
    )
    parser.add_argument("--version", action="version", version=f"livecam {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run",
        help="run the live pipeline",
        description="Capture frames, process them and send them to one or more sinks. "
        "Ctrl-C stops cleanly.",
    )
    add_run_options(run)
    run.set_defaults(func=cmd_run)
    demo = sub.add_parser(
        "demo",
        help="swap a bundled portrait onto another, offline (no downloads)",
        description="Swap assets/grace_hopper.jpg onto an animated assets/astronaut.png; shows "
        "a window when a display exists, else writes demo.mp4.",
    )
    demo.add_argument("--output", default="demo.mp4", help="video written when headless")
    demo.add_argument(
        "--frames",
        type=int,
        help="frames to render (default: 90 to a file, until the window is closed on screen)",
    )
    demo.add_argument(
        "--window",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="force or forbid the preview window (default: when a display exists)",
    )
    demo.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    demo.set_defaults(func=cmd_demo)
    doctor = sub.add_parser(
        "doctor", help="check this machine: packages, GPU, cameras, virtual camera, display"
    )
    doctor.add_argument("--vcam-backend", help="check this pyvirtualcam backend only")
    doctor.add_argument("--vcam-device", help="check this virtual camera device")
    doctor.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    doctor.set_defaults(func=cmd_doctor)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if getattr(args, "verbose", False) else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        result: int = args.func(args)
        return result
    except LivecamError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
