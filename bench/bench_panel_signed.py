"""Signed panel recordings (issue 26: all 10 of an audit's panel recordings had no C2PA
manifest): ``--recordings`` recordings made from the real main window (Start, record
until ``--frames`` frames went out, Stop), a looping testdata talking-head clip through the
lite swap into "Preview only" and a recording, each checked with the Output tab's own
*Verify a file…* (``livecam verify``). Prints each file's verdict and the figure: N of N
panel recordings verified signed (C2PA manifest present, signature valid, the AI action).

    QT_QPA_PLATFORM=offscreen nice -n 5 .venv/bin/python bench/bench_panel_signed.py \\
        [--recordings 10] [--frames 30] [--suffix .mp4] [--clip liveportrait_d6.mp4]

``--suffix`` takes .mp4, .mov or .avi (the formats LiveCam signs). Exit status 0 only
when every recording is signed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("LIVECAM_CONFIG_DIR", tempfile.mkdtemp(prefix="livecam-bench-"))

from conftest import find_testdata  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from livecam.config.schema import Config  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.panels.output_panel import OutputPanel  # noqa: E402
from ui.settings import UiSettings  # noqa: E402
from ui.stream import StreamController, limit_malloc_arenas  # noqa: E402

SIGNED = ("C2PA manifest: present, signature valid", "AI action: c2pa.edited")


def spin(app: QApplication, until: Callable[[], bool], timeout_s: float) -> bool:
    """Let Qt run until ``until()`` or the timeout; whether it came true."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        if until():
            return True
        time.sleep(0.005)
    return False


def frames_out(window: MainWindow) -> int:
    """Frames the running stream sent so far (0 while none runs)."""
    app = window.stream.app
    return 0 if app is None else int(app.snapshot().frames_out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--recordings", type=int, default=10)
    p.add_argument("--frames", type=int, default=30, help="frames out per recording")
    p.add_argument("--suffix", choices=(".mp4", ".mov", ".avi"), default=".mp4")
    p.add_argument("--clip", default="liveportrait_d6.mp4")
    args = p.parse_args()
    limit_malloc_arenas()  # as run_panel does first
    testdata = find_testdata()
    if testdata is None:
        print("the test data (../shared/testdata) is needed")
        return 2
    qt = QApplication.instance() or QApplication(["bench"])
    assert isinstance(qt, QApplication)
    signed = 0
    with tempfile.TemporaryDirectory() as tmp:
        take = Path(tmp) / f"take{args.suffix}"  # taken after the first: a new name each
        config = Config.from_dict(
            {
                "source": {"spec": str(testdata / "video" / args.clip), "loop": True},
                "output": {"sinks": ["null", str(take)]},  # preview only, recording
                "pipeline": {"stages": ["swap"]},
                "swap": {"face": str(REPO / "assets" / "grace_hopper.jpg"), "preset": "lite"},
            }
        )
        settings = UiSettings()
        settings.save_config(config)
        window = MainWindow(StreamController(Config()), settings)
        window.show()
        output = window.panels["Output"]
        assert isinstance(output, OutputPanel)
        verdicts: list[int] = []
        output.verified.connect(verdicts.append)
        try:
            for n in range(1, args.recordings + 1):
                window.toggle_running()
                started = spin(qt, lambda: not window.stream.starting, 120)
                app = window.stream.app
                if not started or app is None:
                    print(f"recording {n}: no start ({window.message.text()})")
                    return 1
                if not spin(qt, lambda: frames_out(window) >= args.frames, 120):
                    print(f"recording {n}: no frames ({window.message.text()})")
                    return 1
                (written,) = window.live_view.recordings
                window.toggle_running()
                spin(qt, lambda: not window.stream.running, 30)
                verdicts.clear()
                output.verify_file(str(written))
                spin(qt, lambda: bool(verdicts), 120)
                report = output.verify_report.text()
                ok = verdicts == [0] and all(s in report for s in SIGNED)
                signed += ok
                first = report.splitlines()[:3] if not ok else []
                print(f"recording {n}: {written.name} {'signed' if ok else 'NOT SIGNED'} {first}")
        finally:
            window.close()
    print(
        f"{signed} of {args.recordings} panel recordings ({args.suffix}) verified signed "
        f"(C2PA manifest present, signature valid, AI action c2pa.edited)"
    )
    return 0 if signed == args.recordings else 1


if __name__ == "__main__":
    sys.exit(main())
