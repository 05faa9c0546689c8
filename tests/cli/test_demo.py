"""`livecam demo`: headless it writes a playable swapped video; on a display its window shows
the swap on screen until it is closed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from face_helpers import lite_analyzer
from media import read_video
from waiting import poll
from xwindow import grab, press, require_windows, wait_window

from livecam.config.schema import SourceConfig
from livecam.face.identity.metrics import embedding_distance
from livecam.sources.synthetic.pattern import SyntheticSource
from livecam.sources.synthetic.portraits import demo_portraits
from livecam.userfiles.images import load_image_bgr

REPO = Path(__file__).resolve().parents[2]


def run_demo(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`python -m livecam demo ARGS` in a child process with ``env``; must succeed."""
    proc = subprocess.run(
        [sys.executable, "-m", "livecam", "demo", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def test_portraits_come_from_the_package_data_of_this_checkout() -> None:
    """The editable install maps the repository's assets/ folder to ``livecam.assets``."""
    with demo_portraits() as (face, target):
        assert face == REPO / "assets" / "grace_hopper.jpg"
        assert target == REPO / "assets" / "astronaut.png"


def test_demo_writes_a_playable_swapped_video(tmp_path: Path) -> None:
    out = tmp_path / "demo.mp4"
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = run_demo(["--output", str(out)], env)
    assert "frames in 90, out 90" in proc.stdout
    frames, _ = read_video(out)
    assert len(frames) == 90
    with demo_portraits() as (face, target):
        assert frames[0].shape[:2] == load_image_bgr(target).shape[:2]
        plain = SyntheticSource(SourceConfig(spec="synthetic", face_motion=str(target)))
        face_image = load_image_bgr(face)
    # the face in the video is closer to the source identity than the animated original
    plain.open()
    analyzer = lite_analyzer(640)
    source = analyzer.analyze(face_image, with_embedding=True)[0]
    assert source.embedding is not None
    for index in (0, 30):
        before = analyzer.analyze(plain.render(index), with_embedding=True)[0]
        after = analyzer.analyze(frames[index], with_embedding=True)[0]
        assert before.embedding is not None and after.embedding is not None
        d_before = embedding_distance(source.embedding, before.embedding)
        d_after = embedding_distance(source.embedding, after.embedding)
        assert d_after < d_before - 0.05, (index, d_before, d_after)


def test_demo_window_shows_the_swap_on_screen_until_closed(xvfb: str) -> None:
    """With a display the demo runs until its window is closed; the window on the screen
    shows the swapped face (closer to the source identity than the target's own face)."""
    require_windows(xvfb)
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env["DISPLAY"] = xvfb
    proc = subprocess.Popen(
        [sys.executable, "-m", "livecam", "demo"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    analyzer = lite_analyzer(640)
    with demo_portraits() as (face, target):
        source = analyzer.analyze(load_image_bgr(face), with_embedding=True)[0]
        original = analyzer.analyze(load_image_bgr(target), with_embedding=True)[0]
    wanted, before = source.embedding, original.embedding
    assert wanted is not None and before is not None
    d_original = embedding_distance(wanted, before)
    try:
        wid, rect = wait_window(xvfb)
        d_screen: float | None = None

        def swapped_on_screen() -> bool:
            nonlocal d_screen
            faces = analyzer.analyze(grab(xvfb, rect), with_embedding=True)
            if faces and faces[0].embedding is not None:
                d_screen = embedding_distance(wanted, faces[0].embedding)
            return d_screen is not None and d_screen < d_original - 0.05

        poll(swapped_on_screen, 60, every_s=0.2)  # until a swapped frame is painted
        press(xvfb, wid, "q")
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err[-3000:]
    assert "a preview window" in out and "closed by the user" in err
    assert d_screen is not None, "no face on the screen"
    assert d_screen < d_original - 0.05, (d_original, d_screen)
    shown = re.search(r"preview window showed (\d+) frames", err)
    assert shown is not None and int(shown[1]) > 0, err[-2000:]
