"""`livecam demo` runs headless, offline, and writes a playable video of the right length."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import cv2
from media import read_video

from livecam.config import SourceConfig
from livecam.demo import DEMO_SOURCE_FACE, DEMO_TARGET
from livecam.pipeline.analysis import offline_analyzer
from livecam.pipeline.identity import embedding_distance
from livecam.sources.image import load_image_bgr
from livecam.sources.synthetic import SyntheticSource


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


def test_demo_writes_a_playable_swapped_video(tmp_path: Path) -> None:
    out = tmp_path / "demo.mp4"
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = run_demo(["--output", str(out)], env)
    assert "frames in 90, out 90" in proc.stdout
    frames, _ = read_video(out)
    assert len(frames) == 90
    assert frames[0].shape[:2] == cv2.imread(str(DEMO_TARGET)).shape[:2]
    # the face in the video is closer to the source identity than the animated original
    plain = SyntheticSource(SourceConfig(spec="synthetic", face_motion=str(DEMO_TARGET)))
    plain.open()
    analyzer = offline_analyzer(max_side=640)
    source = analyzer.analyze(load_image_bgr(DEMO_SOURCE_FACE), with_embedding=True)[0]
    for index in (0, 30):
        before = analyzer.analyze(plain.render(index), with_embedding=True)[0]
        after = analyzer.analyze(frames[index], with_embedding=True)[0]
        assert source.embedding is not None
        d_before = embedding_distance(source.embedding, before.embedding)
        d_after = embedding_distance(source.embedding, after.embedding)
        assert d_after < d_before - 0.05, (index, d_before, d_after)


def test_demo_shows_the_swap_in_a_window_on_a_display(xvfb: str) -> None:
    """With a display the demo opens a preview window fed by the output thread."""
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env["DISPLAY"] = xvfb
    proc = run_demo(["--frames", "45"], env)
    assert "a preview window" in proc.stdout
    match = re.search(r"frames in (\d+), out (\d+)", proc.stdout)
    assert match is not None, proc.stdout
    assert int(match[1]) == 45 and int(match[2]) >= 40, "the window received the frames"
