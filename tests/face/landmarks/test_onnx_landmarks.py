"""ONNX landmarkers: PFLD and slim-160 68-point on the real test portraits against each
other (two models trained apart: each lands on the other's points), and insightface
2d106det's crop and decoding proved with tiny ONNX models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from face_helpers import lite_analyzer
from face_parts_data import read_color
from onnx import TensorProto, helper, numpy_helper

from livecam.errors import ModelError
from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
from livecam.face.landmarks.onnx import (
    LANDMARKS_106_TO_68,
    LIPS_106_INNER,
    LIPS_106_OUTER,
    SLIM_BOX,
    SLIM_KPS_BOX,
    Landmarker106,
    Pfld68Landmarker,
)
from livecam.face.parts import RefitLandmarker
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions
from livecam.types import Face, FaceWork, FrameContext

# measured on the 6 faces of the test portraits against the lite preset's slim-160 points:
# PFLD in its box around them mean 0.051, max 0.059; from YuNet's keypoints then refitted
# 0.051 / 0.060; slim-160 in its box around PFLD's points 0.052 / 0.063 (against dlib's
# points, before dlib left: PFLD 0.042 / 0.079, slim 0.051 / 0.067)
PORTRAITS = (
    "obama_official_portrait_2012.jpg",
    "biden_official_portrait.jpg",
    "obama_biden_two_people.jpg",
    "astronaut_eileen_collins.png",
    "grace_hopper_navy_portrait.jpg",
)
CPU = RuntimeOptions(provider="cpu")


def _inter_ocular_error(points: np.ndarray, truth: np.ndarray) -> float:
    eyes = np.linalg.norm(truth[36:42].mean(axis=0) - truth[42:48].mean(axis=0))
    return float(np.linalg.norm(points - truth, axis=1).mean() / eyes)


@pytest.fixture(scope="module")
def portraits(testdata: Path) -> tuple[list[FrameContext], list[tuple[int, Face]]]:
    """The portraits and the lite preset's 68-point faces on them (frame index, face)."""
    analyzer = lite_analyzer(with_encoder=False)
    frames, faces = [], []
    for name in PORTRAITS:
        image = read_color(testdata / "faces" / name)
        frames.append(FrameContext(image))
        faces += [(len(frames) - 1, f) for f in analyzer.analyze(image)]
    assert len(faces) == 6
    return frames, faces


@pytest.fixture(scope="module")
def pfld(testdata: Path) -> Pfld68Landmarker:
    return Pfld68Landmarker(OnnxModel(testdata / "models" / "landmarks_68_pfld.onnx", CPU))


def _points(face: Face) -> np.ndarray:
    """The face's landmarks (the test fails where it has none)."""
    assert face.landmarks is not None
    return face.landmarks


def _seeds(landmarker: RefitLandmarker, faces: list[tuple[int, Face]]) -> list[FaceWork]:
    """Records boxed the way the landmarker wants around the faces' points."""
    return [
        FaceWork(i, 0, Face(bbox=landmarker.box_for(_points(f)), score=1.0, kps=f.kps))
        for i, f in faces
    ]


def test_pfld_lands_on_slims_points(pfld, portraits) -> None:
    frames, faces = portraits
    works = pfld.fit(frames, _seeds(pfld, faces))
    errors = [
        _inter_ocular_error(_points(w.face), _points(f))
        for w, (_, f) in zip(works, faces, strict=True)
    ]
    assert np.mean(errors) < 0.06
    assert max(errors) < 0.11
    assert isinstance(pfld, RefitLandmarker)
    assert pfld.model_id == "landmarks68:landmarks_68_pfld:112px:bgr:box3.1"


def test_pfld_points_in_ibug_order(pfld, portraits) -> None:
    frames, faces = portraits
    for work in pfld.fit(frames, _seeds(pfld, faces)):
        lm = work.face.landmarks
        assert lm.shape == (68, 2) and lm.dtype == np.float32
        left_eye, right_eye = lm[36:42].mean(axis=0), lm[42:48].mean(axis=0)
        assert left_eye[0] < lm[30, 0] < right_eye[0]
        assert max(left_eye[1], right_eye[1]) < lm[30, 1] < lm[48:68, 1].mean() < lm[8, 1]
        assert lm[48, 0] < lm[54, 0]
        assert lm[17:27, 1].mean() < min(left_eye[1], right_eye[1])
        # kps in ArcFace order from the fitted points
        kps = work.face.kps
        np.testing.assert_allclose(kps[0], left_eye, atol=1e-4)
        np.testing.assert_allclose(kps[2], lm[30])


def test_pfld_batched_equals_looped(pfld, portraits) -> None:
    frames, faces = portraits
    looped = [pfld.fit(frames, [s])[0].face.landmarks for s in _seeds(pfld, faces)]
    together = [w.face.landmarks for w in pfld.fit(frames, _seeds(pfld, faces))]
    np.testing.assert_allclose(np.array(together), np.array(looped), atol=1e-3)
    assert pfld.fit(frames, []) == []


def test_pfld_from_yunet_keypoints_and_refits(pfld, portraits) -> None:
    """Started from YuNet's keypoints (box_for_kps) and refitted in box_for of its own
    points, as the tracker does, the points stay on the face."""
    frames, faces = portraits
    yunet = YuNetDetector(bundled_yunet(), max_sides=(640,))
    works = []
    for i, truth in faces:
        found = yunet.detect([frames[i]])[0]
        det = min(found, key=lambda f: np.linalg.norm(f.kps.mean(0) - truth.kps.mean(0)))
        works.append(FaceWork(i, 0, Face(pfld.box_for_kps(det.kps), det.score, det.kps)))
    for _ in range(3):
        works = pfld.fit(frames, works)
        errors = [
            _inter_ocular_error(w.face.landmarks, t.landmarks)
            for w, (_, t) in zip(works, faces, strict=True)
        ]
        assert np.mean(errors) < 0.06 and max(errors) < 0.12
        for w in works:
            w.face = Face(pfld.box_for(w.face.landmarks), 1.0, w.face.kps)


def test_slim_160_with_its_box_rules(testdata, pfld, portraits) -> None:
    model = OnnxModel(testdata / "models" / "slim_160_latest.onnx", CPU)
    slim = Pfld68Landmarker(model, input_size=160, box_rule=SLIM_BOX, kps_box_rule=SLIM_KPS_BOX)
    frames, faces = portraits
    # PFLD's points (fitted in its box around the lite analysis) are the reference here
    by_pfld = [(i, w.face) for (i, _), w in zip(faces, pfld.fit(frames, _seeds(pfld, faces)))]
    works = slim.fit(frames, _seeds(slim, by_pfld))
    errors = [
        _inter_ocular_error(_points(w.face), _points(f))
        for w, (_, f) in zip(works, by_pfld, strict=True)
    ]
    assert np.mean(errors) < 0.07


def test_wrong_input_size_is_a_model_error(testdata) -> None:
    model = OnnxModel(testdata / "models" / "landmarks_68_pfld.onnx", CPU)
    with pytest.raises(ModelError, match="112x112") as err:
        Pfld68Landmarker(model, input_size=160)
    assert "input_size to 112" in err.value.hint
    with pytest.raises(ValueError, match="'rgb' or 'bgr'"):
        Pfld68Landmarker(model, color="hsv")


def _fixed_106(path: Path, points: np.ndarray, gain: float, size: int = 192) -> Path:
    """A 2d106det-shaped model ([N,3,size,size] -> [N,212]): output = ``points`` (212
    values in [-1, 1]) + ``gain`` x (the input's per-channel means, then zeros)."""
    nodes = [
        helper.make_node("ReduceMean", ["data"], ["means"], axes=[2, 3], keepdims=0),
        helper.make_node("Mul", ["means", "gain"], ["scaled"]),
        helper.make_node("Pad", ["scaled", "pads"], ["padded"]),
        helper.make_node("Add", ["padded", "points"], ["fc1"]),
    ]
    inits = [
        numpy_helper.from_array(np.array([gain], np.float32), "gain"),
        numpy_helper.from_array(np.array([0, 0, 0, 209], np.int64), "pads"),
        numpy_helper.from_array(points.reshape(1, 212).astype(np.float32), "points"),
    ]
    graph = helper.make_graph(
        nodes,
        "fixed106",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info("fc1", TensorProto.FLOAT, ["N", 212])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_106_points_map_back_to_frame_pixels(tmp_path) -> None:
    """insightface's crop (box centre, 1.5x the long side onto 192 px) and decoding
    ((v + 1) * 96, inverse crop): normalised point p lands at centre + p * 1.5 * side / 2."""
    rng = np.random.default_rng(3)
    points = rng.uniform(-1, 1, (106, 2)).astype(np.float32)
    model = OnnxModel(_fixed_106(tmp_path / "fixed.onnx", points, 0.0), CPU)
    part = Landmarker106(model)
    frame = FrameContext(np.zeros((480, 640, 3), np.uint8))
    boxes = [(100.0, 50.0, 200.0, 170.0), (300.0, 200.0, 420.0, 290.0)]
    works = [
        FaceWork(0, 0, Face(np.array(b, np.float32), 1.0, np.zeros((5, 2), np.float32)))
        for b in boxes
    ]
    out = part.fit([frame], works)
    for work, (x1, y1, x2, y2) in zip(out, boxes, strict=True):
        centre = np.array([(x1 + x2) / 2, (y1 + y2) / 2])
        half = 1.5 * max(x2 - x1, y2 - y1) / 2
        np.testing.assert_allclose(_points(work.face), centre + points * half, atol=1e-3)
        lm68 = _points(work.face)[list(LANDMARKS_106_TO_68)]
        np.testing.assert_allclose(work.face.kps[3], lm68[48], atol=1e-5)
    assert part.model_id == "landmarks106:fixed:192px:rgb"


def test_106_input_is_rgb_unscaled(tmp_path) -> None:
    """The crop reaches the model as RGB with mean 0, std 1 (insightface for 2d106det):
    a model that outputs the crop's channel means reads back (R, G, B)."""
    model = OnnxModel(_fixed_106(tmp_path / "means.onnx", np.zeros(212), 1.0), CPU)
    part = Landmarker106(model)
    frame = np.empty((480, 640, 3), np.uint8)
    frame[:] = (10, 20, 30)  # BGR
    box = np.array([200.0, 150.0, 300.0, 250.0], np.float32)
    kps = np.zeros((5, 2), np.float32)
    work = part.fit([FrameContext(frame)], [FaceWork(0, 0, Face(box, 1.0, kps))])
    lm = _points(work[0].face)
    half = 1.5 * 100 / 2
    np.testing.assert_allclose(lm[0], np.array([250 + 30 * half, 200 + 20 * half]), rtol=1e-4)
    np.testing.assert_allclose(lm[1, 0], 250 + 10 * half, rtol=1e-4)


def test_lip_indices_cover_106_mouth() -> None:
    assert sorted(LIPS_106_OUTER + LIPS_106_INNER) == list(range(52, 72))
    assert len(set(LANDMARKS_106_TO_68)) == 68
