"""The `livecam` command line: its parser and the run, demo and doctor commands."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import NoReturn, get_args

from livecam import __version__
from livecam.cli.options import check_options, config_from_args, given_fields
from livecam.cli.signals import exit_code, stop_signals
from livecam.cli.terminal_run import exit_status, print_summary, run_pipeline
from livecam.config.schema import (
    BlendMode,
    CameraBackend,
    ColorTransfer,
    ConvAlgoSearch,
    EnhancerModel,
    FaceSelection,
    LabelPosition,
    MaskKind,
    MemoryStrategy,
    Provider,
    QualityLevel,
    StageName,
    SwapperModel,
)
from livecam.errors import LivecamError, format_error, one_line
from livecam.runtime.providers import quiet_onnxruntime_logs
from livecam.sources.cv_capture import quiet_ffmpeg_logs
from livecam.userfiles import check_output_path

log = logging.getLogger("livecam")


SOURCE_HELP = (
    "camera[:N] or N (webcam N, default 0) | /dev/videoN | a stream URL (rtsp://..., "
    "http://...) | screen[:N] (monitor N) | screen:x,y,w,h (a region) | synthetic (test "
    "pattern; see --face-motion, --stamp) | PATH to a video (played once; see --loop) or an "
    "image"
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


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line like every other LiveCam error: one
    ``error:`` line and a ``fix:`` line (no usage dump), exit status 2."""

    def error(self, message: str, prog: str | None = None) -> NoReturn:
        print(f"error: {message}\n  fix: see `{prog or self.prog} --help`", file=sys.stderr)
        raise SystemExit(2)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """As argparse, but words left over point to the help of the command typed."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = getattr(parsed, "command", None)
            prog = f"{self.prog} {command}" if command else None
            self.error(f"unrecognized arguments: {' '.join(extras)}", prog)
        return parsed


def offered_presets() -> list[str]:
    """Every preset (``auto`` included), for ``--preset``."""
    from livecam.face.presets import preset_names

    return list(preset_names())


def add_run_options(p: argparse.ArgumentParser) -> None:
    """Options of `livecam run` (also used by `livecam demo`). Unset options keep the config."""
    src = p.add_argument_group("source")
    src.add_argument("--source", metavar="SPEC", help=SOURCE_HELP)
    src.add_argument("--fps", type=float, help="requested capture rate (default 30)")
    src.add_argument("--size", type=_size, metavar="WxH", help="frame size, e.g. 1280x720")
    pace = src.add_mutually_exclusive_group()
    pace.add_argument(
        "--unpaced",
        action="store_true",
        default=None,
        help="deliver frames as fast as possible, no repeats (benchmarks; the default for a "
        "video file whose sinks are all files: a conversion keeps every frame and the file's "
        "timing)",
    )
    pace.add_argument(
        "--realtime",
        dest="unpaced",
        action="store_const",
        const=False,
        help="play a video file at its own speed, like a camera (the newest frame wins); the "
        "default when a sink is a virtual camera or a window",
    )
    src.add_argument(
        "--loop",
        action="store_true",
        default=None,
        help="video file: start again at its end (default: play it once, then stop)",
    )
    src.add_argument(
        "--mirror",
        action="store_true",
        default=None,
        help="flip every captured frame left-right (a selfie view)",
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
    out.add_argument(
        "--label",
        metavar="TEXT",
        help='draw TEXT (e.g. "AI-modified") on every output frame: the virtual camera and '
        "the recording both carry it",
    )
    out.add_argument(
        "--label-position",
        choices=get_args(LabelPosition),
        help="corner of the --label (default bottom-right)",
    )
    out.add_argument(
        "--label-size",
        type=float,
        metavar="F",
        help="--label text height as a fraction of the frame height (default 0.05)",
    )
    pipe = p.add_argument_group("pipeline")
    pipe.add_argument(
        "--stage",
        action="append",
        choices=get_args(StageName),
        help="stage to run, in order; repeat for several (default: swap when "
        "--face is given, else passthrough)",
    )
    pipe.add_argument(
        "--yunet",
        metavar="ONNX",
        help="another YuNet 2023mar model for the facebox stage (default: the bundled one)",
    )
    pipe.add_argument(
        "--overlap",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="find and track the faces of the next frame while this one is swapped, on a "
        "second thread (default: when a model runs on a GPU)",
    )
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
        help="never drop frames: slow the source down instead (offline rendering; the "
        "default for a video file converted to files)",
    )
    swap = p.add_argument_group("face swap")
    swap.add_argument("--face", metavar="IMG", help="source face image to swap in")
    swap.add_argument(
        "--face-index",
        type=int,
        metavar="N",
        help="which face of --face when it holds several (0 = largest)",
    )
    swap.add_argument(
        "--preset",
        choices=offered_presets(),
        help="model set (default offline: no download; lite: a few MB; standard, quality: "
        "neural swappers; auto: the best whose models are present)",
    )
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
        "--opacity",
        type=float,
        metavar="0-1",
        help="how much of the swapped face shows over yours (default 1: all of it)",
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
        help="the detector works on the frame shrunk by a whole factor to at most this long "
        "side (default 400: faces from ~6%% of the frame width at any resolution; 800 finds "
        "~3%%, at ~4x the detector's CPU time)",
    )
    add_model_options(p)
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
    run.add_argument(
        "--hotkeys",
        action="store_true",
        help="global hotkeys while the stream runs, even when another app has the focus "
        "(defaults: Ctrl+Alt+S swap, Ctrl+Alt+B blank, Ctrl+Alt+F freeze, Ctrl+Alt+E enhancer, "
        "Ctrl+Alt+Right/Left next/previous face, Ctrl+Alt+Up/Down quality; [hotkeys] in "
        "--config changes them; X11, Windows and macOS, not Wayland)",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="no live status line")
    run.add_argument("-v", "--verbose", action="store_true", help="debug logging")


def _percent4(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.replace(",", " ").split())
    except ValueError:
        values = ()
    if len(values) != 4:
        raise argparse.ArgumentTypeError(f"expected 4 percentages like 0,10,0,10, got {text!r}")
    return values


def add_model_options(p: argparse.ArgumentParser) -> None:
    """Options of the ONNX presets (lite, standard, quality): models, quality and masks."""
    neural = p.add_argument_group("neural presets (lite, standard, quality)")
    neural.add_argument(
        "--provider",
        choices=get_args(Provider),
        help="compute provider of the ONNX models (default auto: the best this machine has; "
        "the one really used is shown)",
    )
    neural.add_argument("--gpu", type=int, metavar="N", help="which GPU (default 0)")
    neural.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="CPU threads of each ONNX model (default 0: ONNX Runtime's choice)",
    )
    neural.add_argument(
        "--cudnn-algo",
        choices=get_args(ConvAlgoSearch),
        help="CUDA: cuDNN convolution algorithm search (default EXHAUSTIVE: slow first frame, "
        "fastest after)",
    )
    neural.add_argument(
        "--cuda-graph",
        action="store_true",
        default=None,
        help="CUDA: replay the swapper as one captured CUDA graph (fixed shapes: one face per "
        "call)",
    )
    neural.add_argument(
        "--memory",
        choices=get_args(MemoryStrategy),
        help="memory strategy: low (exact-size CUDA arena capped per model, one face per call), "
        "balanced (default: 4 faces per call), high (8)",
    )
    neural.add_argument(
        "--quality",
        choices=get_args(QualityLevel),
        help="auto: step down the quality ladder when the fps stays below --target-fps (and "
        "back up); a level pins it (default full; the VRAM watchdog still steps below it "
        "when GPU memory runs out)",
    )
    neural.add_argument(
        "--target-fps",
        type=float,
        metavar="FPS",
        help="--quality auto: the frame rate to keep (default: the output rate)",
    )
    neural.add_argument(
        "--accept-licence",
        action="store_true",
        default=None,
        help="accept the licences of the models this run downloads (else asked once per model)",
    )
    neural.add_argument("--swapper", choices=get_args(SwapperModel), help="swapper model")
    neural.add_argument(
        "--enhancer", choices=get_args(EnhancerModel), help="face enhancer (none: off)"
    )
    for part in ("detector", "recognizer", "swapper", "enhancer"):
        neural.add_argument(
            f"--{part}-model",
            metavar="PATH",
            help=f"your own {part} ONNX file (checked against the {part}'s contract first)",
        )
    neural.add_argument(
        "--pixel-boost",
        type=int,
        metavar="K",
        help="swap at K x the swapper's resolution in K*K tiles (1, 2 or 4; default 1)",
    )
    neural.add_argument(
        "--identity-weight",
        type=float,
        metavar="W",
        help="source identity strength from 0 to 1 (default 0.5: as the model gives it)",
    )
    neural.add_argument(
        "--enhance-blend", type=float, metavar="B", help="enhanced face share 0-1 (default 0.8)"
    )
    neural.add_argument(
        "--enhance-every",
        type=int,
        metavar="N",
        help="run the enhancer every N frames and re-paste its last face between (default 1)",
    )
    neural.add_argument(
        "--reuse",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="give a tracked face its last swapped face again while it barely changes, "
        "re-pasted where the face is now (neural swappers; default on)",
    )
    neural.add_argument(
        "--reuse-similarity",
        type=float,
        metavar="DB",
        help="least PSNR of the face's 32x32 aligned crop against the one last swapped for a "
        "reuse (10-99 dB, default 32; higher reuses less)",
    )
    neural.add_argument(
        "--reuse-max",
        type=int,
        metavar="K",
        help="reuses in a row before the swapper runs again (0-30, default 3)",
    )
    neural.add_argument(
        "--codeformer-fidelity",
        type=float,
        metavar="F",
        help="CodeFormer: 0 sharper, 1 closer to the input (default 0.5)",
    )
    neural.add_argument(
        "--mask",
        action="append",
        choices=get_args(MaskKind),
        help="mask of the swapped face (repeat to combine by minimum; default: the preset's)",
    )
    neural.add_argument(
        "--mask-blur", type=float, metavar="B", help="box mask border blur 0-1 (default 0.3)"
    )
    neural.add_argument(
        "--mask-padding",
        type=_percent4,
        metavar="T,R,B,L",
        help="box mask padding in %% of the crop (default 0,0,0,0)",
    )
    neural.add_argument(
        "--mouth-mask",
        type=int,
        metavar="0-100",
        help="keep this much of your real mouth (0 = off, 100 = fully yours)",
    )
    neural.add_argument(
        "--map",
        action="append",
        metavar="SOURCE=TARGET",
        help="several sources: put the face of photo SOURCE onto the person of photo TARGET "
        "(repeat per person)",
    )


def cmd_run(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    given = given_fields(args)
    if args.save_config:
        given.pop("output.overwrite", None)  # it is for the config file itself
    check_options(cfg, given)
    if args.save_config:
        cfg.save(args.save_config, overwrite=bool(args.overwrite))
        print(f"wrote {args.save_config}")
        return 0
    if cfg.run.stats_json is not None:  # checked now, not found out after the run
        where = "--stats-json" if "run.stats_json" in given else "config field 'run.stats_json'"
        check_output_path(cfg.run.stats_json, where)
    if args.hotkeys:  # checked now, not found out after the stream started
        from livecam.control.hotkeys import HINT, HotkeyError, hotkeys_available

        ok, why = hotkeys_available()
        if not ok:
            raise HotkeyError(f"--hotkeys: global hotkeys are not available here: {why}", HINT)
    summary = run_pipeline(cfg, args.quiet, args.commands, args.hotkeys)
    print_summary(summary)
    return exit_status(summary)


def cmd_doctor(args: argparse.Namespace) -> int:
    from livecam.cli.doctor import format_checks, run_doctor

    checks = run_doctor(args.vcam_backend, args.vcam_device)
    ascii_only = (sys.stdout.encoding or "").lower().replace("-", "") != "utf8"
    print(format_checks(checks, ascii_only=ascii_only))
    return 0 if all(c.ok is not False for c in checks) else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from livecam.cli.demo import run_demo

    return run_demo(args)


def cmd_panel(args: argparse.Namespace) -> int:
    """The desktop panel (Qt, imported here: the rest of livecam never imports it)."""
    from livecam.errors import SinkError
    from livecam.sinks.preview import window_problem

    why = window_problem()
    if why is not None:  # Qt would abort the process without a usable display
        raise SinkError(
            f"cannot open the LiveCam panel: {why}",
            "run `livecam` in a desktop session (or under `xvfb-run`), or use "
            "`livecam run --face PHOTO` on a terminal",
        )
    from ui.panel_app import run_panel

    return run_panel()


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="livecam", description="Real-time face swap to a virtual camera.")
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
        help="put the face of one bundled portrait onto another, offline (no downloads)",
        description="Put the face from grace_hopper.jpg (the source face) onto astronaut.png "
        "(the target, animated like a head on a webcam): the astronaut's face is replaced. "
        "Both portraits ship with LiveCam (assets/). Shows a window when a display exists, "
        "else writes demo.mp4.",
    )
    demo.add_argument("--output", default="demo.mp4", help="video written when headless")
    demo.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --output file (default: keep it, write a new timestamped name)",
    )
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
    panel = sub.add_parser(
        "panel", help="the desktop panel (the default when livecam runs with no arguments)"
    )
    panel.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    panel.set_defaults(func=cmd_panel)
    from livecam.cli.models import add_models_command

    add_models_command(sub)
    from livecam.benchmark.command import add_bench_options, cmd_bench

    bench = sub.add_parser(
        "bench",
        help="measure the live pipeline: fps, latency, faces/s, memory (or vs a naive loop)",
        description="Run the live pipeline on a synthetic clip (or a video file) into a null "
        "sink and print fps, glass-to-glass latency, stage times, faces/s, peak memory and "
        "the provider used.",
    )
    add_bench_options(bench, offered_presets())
    bench.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``livecam`` command; returns the exit status: 0 done, 1 a failed check or an
    unexpected error (a bug), 2 a bad command line, config or start-up problem, 130 / 143
    after Ctrl-C / SIGTERM. The user never sees a traceback (``-v`` logs an unexpected
    error's)."""
    with stop_signals():
        try:
            return _main(argv)
        except KeyboardInterrupt as e:
            print(f"stopped ({'Ctrl-C' if exit_code(e) == 130 else e})", file=sys.stderr)
            return exit_code(e)


def _main(argv: list[str] | None) -> int:
    if not (sys.argv[1:] if argv is None else argv):
        argv = ["panel"]  # no arguments: the desktop panel
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, --version, or a bad command line (already printed)
        return e.code if isinstance(e.code, int) else 0 if e.code is None else 2
    logging.basicConfig(
        level=logging.DEBUG if getattr(args, "verbose", False) else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "verbose", False):
        quiet_ffmpeg_logs()
        quiet_onnxruntime_logs()
    try:
        result: int = args.func(args)
        return result
    except LivecamError as e:
        print(format_error(e), file=sys.stderr)
        return 2
    except Exception as e:
        log.debug("unexpected error", exc_info=True)
        print(
            f"error: unexpected {type(e).__name__}: {one_line(str(e))}\n"
            "  fix: this is a bug in LiveCam; please report it with the output of the same "
            "command run with -v",
            file=sys.stderr,
        )
        return 1
