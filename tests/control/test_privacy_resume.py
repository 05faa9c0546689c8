"""Blank off and Freeze off never let the camera's own face out while the swap is on.

After a privacy switch goes off, the swap may need a few frames before it has a result for
the face again (the tracker lost it during the pause, the selector waits for a new track):
those frames must not be the camera's. The stream runs a real talking-head clip (looping,
every frame processed, so a long pause costs no wall time) through the lite swap into a
real recording (an .mp4 through the recording sink), toggles Blank and Freeze 100 times,
and then looks at every recorded frame where the face is (``camera_faces``): black, the
swap, or the camera's face.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from camera_faces import CAMERA_DISTANCE, CameraFaces, read_pass
from synthetic_stream import small_config
from waiting import poll

from livecam.app import App
from livecam.config.schema import Config, SourceConfig
from livecam.control.controls import Change
from livecam.sinks.recording.video import RecorderSink
from livecam.types import Frame

FACE = Path(__file__).resolve().parents[2] / "assets" / "grace_hopper.jpg"
TOGGLES = 100  # 50 pauses: Blank and Freeze in turn, each switched on and off
PAUSE_FRAMES = 45  # camera frames that pass during a pause (1.5 s of the clip: the head moves)
LIVE_FRAMES = 10  # camera frames after each pause before the next one
WAIT_S = 60.0


def clip_config(testdata: Path, recording: Path) -> Config:
    """The d6 talking head at 320x240, looping, every frame processed (unpaced, lossless),
    swapped with the lite preset into ``recording``."""
    clip = testdata / "video" / "liveportrait_d6.mp4"
    return small_config(
        FACE,
        source={"spec": str(clip), "loop": True, "unpaced": True},
        buffer={"lossless": True},
        output={"sinks": [str(recording)]},
    )


@pytest.fixture(scope="module")
def clip_frames(testdata: Path) -> list[Frame]:
    """Every frame of one pass of the clip, as the stream reads it."""
    return read_pass(clip_config(testdata, Path("unused.mp4")).source)


@pytest.fixture(scope="module")
def camera_faces(clip_frames: list[Frame]) -> CameraFaces:
    return CameraFaces.of_clip(clip_frames)


def wait_frames(app: App, frames: int) -> None:
    """Until ``frames`` more camera frames were captured."""
    start = app.snapshot().frames_in
    assert poll(lambda: app.snapshot().frames_in >= start + frames, WAIT_S)


def pause(app: App, switch: Callable[[bool], Change]) -> None:
    """One pause: the switch on for ``PAUSE_FRAMES`` frames, then off for ``LIVE_FRAMES``."""
    switch(True).wait(WAIT_S)
    wait_frames(app, PAUSE_FRAMES)
    switch(False).wait(WAIT_S)
    wait_frames(app, LIVE_FRAMES)


def test_no_camera_face_after_blank_or_freeze_off(
    testdata: Path, tmp_path: Path, camera_faces: CameraFaces
) -> None:
    recording = tmp_path / "privacy.mp4"
    app = App(clip_config(testdata, recording))
    app.start()
    try:
        wait_frames(app, LIVE_FRAMES)
        for i in range(TOGGLES // 2):
            controls = app.controls
            pause(app, controls.set_blank if i % 2 == 0 else controls.set_freeze)
    finally:
        assert app.stop() == []
    assert app.failure is None

    frames = read_pass(SourceConfig(spec=str(recording)))
    kinds = camera_faces.kinds(frames)
    counts = Counter(kinds)
    leaked = [i for i, kind in enumerate(kinds) if kind == "camera"]
    assert leaked == [], f"{len(leaked)} of {len(frames)} frames show the camera's face"
    assert counts["black"] >= TOGGLES // 4 * PAUSE_FRAMES // 2  # the blanks were recorded
    assert counts["swapped"] >= TOGGLES // 2 * LIVE_FRAMES // 2  # and the swap between them
    swapped = [f for f, kind in zip(frames, kinds, strict=True) if kind == "swapped"]
    print(
        f"recorded {dict(counts)}; nearest swapped face {camera_faces.distances(swapped).min():.1f}"
    )
    assert camera_faces.distances(swapped).min() > 1.5 * CAMERA_DISTANCE  # far from any camera


def test_the_check_tells_a_camera_face(
    clip_frames: list[Frame], camera_faces: CameraFaces, tmp_path: Path
) -> None:
    """The check itself: the clip's own frames, as they are and through the .mp4 recorder
    (its codec's noise), are camera faces; black is black."""
    sample = clip_frames[::25]
    recorder = RecorderSink(tmp_path / "camera.mp4")
    recorder.open(320, 240, 30.0)
    for i, frame in enumerate(sample):
        recorder.send(frame, round(i * 1e9 / 30))
    recorder.close()
    recorded = read_pass(SourceConfig(spec=str(recorder.target)))
    assert len(recorded) == len(sample)
    assert set(camera_faces.kinds(sample + recorded)) == {"camera"}
    assert camera_faces.kinds([sample[0] * 0]) == ["black"]
