"""Picking the swapped person (``select one``): a point of the frame pins the tracked face
there until that person leaves, on a real two-person photo with the lite swap stage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from livecam.config.schema import SwapConfig
from livecam.errors import ConfigError
from livecam.face.source.photo import SourceFaceCache
from livecam.face.swap_stage import FaceSwapStage, build_swap_stage
from livecam.face.track.selection import StickyMainFace, face_at
from livecam.types import Face, Frame, FramePacket, SeenFace
from livecam.userfiles.images import load_image_bgr, make_even

TWO = "obama_biden_two_people.jpg"  # Obama (left) is the larger face, Biden the smaller
SOURCE = "astronaut_eileen_collins.png"


@pytest.fixture(scope="module")
def two(testdata: Path) -> Frame:
    return make_even(load_image_bgr(testdata / "faces" / TWO))


def stage_for(testdata: Path, select: str = "one") -> FaceSwapStage:
    cfg = SwapConfig.of(face=str(testdata / "faces" / SOURCE), select=select)
    stage = build_swap_stage(cfg, SourceFaceCache(None))
    stage.warmup(640, 480)
    return stage


class Feed:
    """Frames through one stage with increasing ``seq`` (a live stream), each with a
    camera's bit of sensor noise (an exact repeat would be held, not tracked anew)."""

    def __init__(self, stage: FaceSwapStage) -> None:
        self.stage = stage
        self.seq = 0
        self.rng = np.random.default_rng(0)
        self.input: Frame | None = None

    def run(self, frame: Frame) -> FramePacket:
        noise = self.rng.integers(-1, 2, frame.shape)
        self.input = np.clip(frame.astype(int) + noise, 0, 255).astype(np.uint8)
        packet = FramePacket(self.input, seq=self.seq, t_capture_ns=self.seq * 33_000_000)
        self.seq += 1
        self.stage.process([packet])
        return packet

    def swapped(self, packet: FramePacket, face: Face) -> bool:
        """True when most of ``face``'s box changed in the output."""
        assert self.input is not None
        x1, y1, x2, y2 = (int(v) for v in face.bbox)
        diff = np.abs(packet.frame.astype(int) - self.input).sum(axis=2) > 0
        return bool(diff[y1:y2, x1:x2].mean() > 0.3)


def by_side(packet: FramePacket) -> tuple[Face, Face]:
    left, right = sorted(packet.faces, key=lambda f: f.bbox[0])
    return left, right


def centre(face: Face, frame: Frame) -> tuple[float, float]:
    return face.center[0] / frame.shape[1], face.center[1] / frame.shape[0]


def test_a_point_pins_the_smaller_face_and_auto_returns_to_the_larger(
    testdata: Path, two: Frame
) -> None:
    stage = stage_for(testdata)
    feed = Feed(stage)
    first = feed.run(two)
    large, small = by_side(first)
    assert large.area > small.area
    assert feed.swapped(first, large) and not feed.swapped(first, small)
    assert stage.target is None

    stage.set_target(centre(small, two))
    for _ in range(3):  # picked in the next frame, then followed
        packet = feed.run(two)
        now_large, now_small = by_side(packet)
        assert feed.swapped(packet, now_small) and not feed.swapped(packet, now_large)
        assert stage.target == now_small.track_id == small.track_id

    stage.set_target(None)
    packet = feed.run(two)
    now_large, now_small = by_side(packet)
    assert feed.swapped(packet, now_large) and not feed.swapped(packet, now_small)
    assert stage.target is None
    stage.close()


def test_the_pinned_person_leaving_goes_back_to_auto(testdata: Path, two: Frame) -> None:
    stage = stage_for(testdata)
    feed = Feed(stage)
    large, small = by_side(feed.run(two))
    # a point outside both boxes, just beside the smaller face (past its chin and side)
    x = (small.bbox[2] + 20) / two.shape[1]
    y = (small.bbox[3] + 20) / two.shape[0]
    stage.set_target((min(x, 1.0), min(y, 1.0)))
    packet = feed.run(two)
    assert stage.target == small.track_id
    assert feed.swapped(packet, by_side(packet)[1])

    gone = two.copy()  # the smaller face's person leaves: their head is painted over
    x1, y1, x2, y2 = (int(v) for v in small.bbox)
    pad = (x2 - x1) // 2
    gone[max(0, y1 - pad) : y2 + pad, max(0, x1 - pad) : x2 + pad] = np.median(two, axis=(0, 1))
    for _ in range(StickyMainFace().patience + 2):  # the stage's selector waits as long
        packet = feed.run(gone)
    assert stage.target is None
    assert [f.track_id for f in packet.faces] == [large.track_id]
    assert packet.faces_swapped == 1 and feed.swapped(packet, packet.faces[0])

    for i in range(8):  # back in the picture, moving (found by a detection): auto stays
        packet = feed.run(np.roll(two, 3 * i, axis=1))
    assert stage.target is None
    now_large, now_small = by_side(packet)
    assert feed.swapped(packet, now_large) and not feed.swapped(packet, now_small)
    stage.close()


def test_face_at_prefers_the_box_holding_the_point(two: Frame) -> None:
    kps = np.zeros((5, 2), np.float32)
    big = Face(np.array([0, 0, 400, 400], np.float32), 1.0, kps)
    inner = Face(np.array([100, 100, 200, 200], np.float32), 1.0, kps)
    far = Face(np.array([800, 100, 900, 200], np.float32), 1.0, kps)
    shape = (600, 1000, 3)
    assert face_at([big, inner, far], (0.15, 0.25), shape) is inner  # both hold it: smaller
    assert face_at([big, far], (0.05, 0.05), shape) is big
    assert face_at([big, far], (0.77, 0.38), shape) is far  # beside its box: still that face
    assert face_at([big, far], (0.5, 0.5), shape) is big  # beside both: the nearest centre
    assert face_at([big, far], (0.75, 0.9), shape) is None  # far from every face: nobody
    assert face_at([], (0.5, 0.5), shape) is None


def test_the_panels_check_finds_nobody_exactly_where_face_at_picks_nobody() -> None:
    """The panel tells a click far from every face (``SeenFace.reaches``, normalised boxes)
    by the same reach as the stage's pick (``face_at``, pixels)."""
    kps = np.zeros((5, 2), np.float32)
    boxes = ([100, 60, 300, 320], [700, 100, 820, 240])
    faces = [Face(np.array(b, np.float32), 1.0, kps) for b in boxes]
    shape = (600, 1000, 3)
    seen = [
        SeenFace(i, (x1 / 1000, y1 / 600, x2 / 1000, y2 / 600))
        for i, (x1, y1, x2, y2) in enumerate(boxes)
    ]
    nobody = 0
    for x in np.linspace(0.003, 0.997, 51):  # no point on a reach edge (rounding)
        for y in np.linspace(0.003, 0.997, 51):
            point = (float(x), float(y))
            picked = face_at(faces, point, shape)
            assert (picked is None) == (not any(s.reaches(point) for s in seen)), point
            nobody += picked is None
    assert 0 < nobody < 51 * 51  # both answers were met


def test_only_select_one_takes_a_target(testdata: Path) -> None:
    stage = stage_for(testdata, "all")
    with pytest.raises(ConfigError, match="select one"):
        stage.set_target((0.5, 0.5))
    assert not stage.can_target and stage.target is None
    stage.close()


def test_only_the_sticky_selector_can_be_pinned(testdata: Path) -> None:
    """Each selector says whether the user may pin a person, and the swap stage asks it
    (no check of the selector's class): ``reference`` cannot, ``one`` can."""
    photo = str(testdata / "faces" / SOURCE)
    cfg = SwapConfig.of(face=photo, select="reference", reference=photo)
    stage = build_swap_stage(cfg, SourceFaceCache(None))
    with pytest.raises(ConfigError, match="select one"):
        stage.set_target((0.5, 0.5))
    assert not stage.can_target and stage.target is None
    stage.close()
    sticky = StickyMainFace()
    assert sticky.can_target and sticky.target is None
    sticky.set_target((0.5, 0.5))  # taken in the next frame, not at once
    assert sticky.target is None
