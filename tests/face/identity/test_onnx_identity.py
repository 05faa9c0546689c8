"""OnnxRecognizer: MobileFaceNet on the real test portraits (same person closer than
different people), the aligned crop on the ArcFace template, and ArcFace w600k's I/O and
normalisation proved with a tiny ONNX model of the same shape."""

from __future__ import annotations

import itertools
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from face_parts_data import read_color
from onnx import TensorProto, helper, numpy_helper

from livecam.errors import ModelError
from livecam.face.crops.align import ARCFACE_112, align_affine, warp_crop
from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
from livecam.face.identity.onnx import (
    ARCFACE_SAME_PERSON_DISTANCE,
    MOBILEFACENET_SAME_PERSON_DISTANCE,
    OnnxRecognizer,
)
from livecam.face.parts import Recognizer
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions
from livecam.types import Face, FaceWork, FrameContext

CPU = RuntimeOptions(provider="cpu")
# (file, how many faces, who they are left to right)
PORTRAITS = (
    ("obama_official_portrait_2012.jpg", ("obama",)),
    ("obama_speech_2009.jpg", ("obama",)),
    ("biden_official_portrait.jpg", ("biden",)),
    ("obama_biden_two_people.jpg", ("obama", "biden")),
    ("astronaut_eileen_collins.png", ("collins",)),
    ("grace_hopper_navy_portrait.jpg", ("hopper",)),
)


@pytest.fixture(scope="module")
def yunet() -> YuNetDetector:
    return YuNetDetector(bundled_yunet(), max_sides=(640,))


@pytest.fixture(scope="module")
def faces(testdata: Path, yunet) -> tuple[list[FrameContext], list[FaceWork], list[str]]:
    """YuNet's faces on the portraits (the strongest ones, left to right) and who they are."""
    frames, works, who = [], [], []
    for name, people in PORTRAITS:
        frame = FrameContext(read_color(testdata / "faces" / name))
        found = sorted(yunet.detect([frame])[0], key=lambda f: -f.score)[: len(people)]
        found.sort(key=lambda f: float(f.bbox[0]))
        frames.append(frame)
        works += [FaceWork(len(frames) - 1, 0, f) for f in found]
        who += list(people)
    return frames, works, who


@pytest.fixture(scope="module")
def mobilefacenet(testdata: Path) -> OnnxRecognizer:
    model = OnnxModel(testdata / "models" / "mobilefacenet.onnx", CPU)
    return OnnxRecognizer(model, same_person_distance=MOBILEFACENET_SAME_PERSON_DISTANCE)


def _copies(works: list[FaceWork]) -> list[FaceWork]:
    return [FaceWork(w.frame_index, w.seq, w.face) for w in works]


def test_mobilefacenet_same_person_closer(mobilefacenet, faces) -> None:
    frames, works, who = faces
    out = mobilefacenet.embed(frames, _copies(works))
    vectors = np.array([w.face.embedding for w in out])
    assert vectors.shape == (len(who), 128) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    same: list[float] = []
    different: list[float] = []
    for i, j in itertools.combinations(range(len(who)), 2):
        d = float(np.linalg.norm(vectors[i] - vectors[j]))
        (same if who[i] == who[j] else different).append(d)
    # measured: same 0.64-0.91, different 1.31-1.57 (RGB input)
    assert len(same) == 4
    assert max(same) < mobilefacenet.same_person_distance < min(different)
    assert isinstance(mobilefacenet, Recognizer)
    assert mobilefacenet.dim == 128
    assert mobilefacenet.model_id == "recognizer:mobilefacenet:arcface_112:112px:rgb:128d"


def test_mobilefacenet_batched_equals_looped(mobilefacenet, faces) -> None:
    frames, works, _ = faces
    together = [w.face.embedding for w in mobilefacenet.embed(frames, _copies(works))]
    looped = [mobilefacenet.embed(frames, [w])[0].face.embedding for w in _copies(works)]
    np.testing.assert_allclose(np.array(together), np.array(looped), atol=1e-5)
    assert mobilefacenet.embed(frames, []) == []


def test_aligned_crop_lands_on_the_arcface_template(mobilefacenet) -> None:
    """Dots drawn at a face's 5 keypoints (the template turned 15 deg, x2.5, moved) appear
    in its aligned crop on the ArcFace 112 template, within a pixel."""
    turn = np.deg2rad(15.0)
    rot = 2.5 * np.array([[np.cos(turn), -np.sin(turn)], [np.sin(turn), np.cos(turn)]])
    kps = (ARCFACE_112 @ rot.T + [200.0, 120.0]).astype(np.float32)
    frame = np.zeros((480, 640, 3), np.uint8)
    for x, y in kps:
        cv2.circle(frame, (round(x * 16), round(y * 16)), 40, (255, 255, 255), -1, shift=4)
    work = FaceWork(0, 0, Face(np.array([0, 0, 640, 480], np.float32), 1.0, kps))
    crop = cv2.cvtColor(mobilefacenet.crops([FrameContext(frame)], [work])[0], cv2.COLOR_BGR2GRAY)
    count, labels = cv2.connectedComponents((crop > 40).astype(np.uint8))
    assert count == 6
    weights = crop.astype(np.float64)
    centres = []
    for label in range(1, count):
        ys, xs = np.nonzero(labels == label)
        w = weights[ys, xs]
        centres.append([np.average(xs, weights=w), np.average(ys, weights=w)])
    for point in ARCFACE_112:
        assert min(np.linalg.norm(np.array(centres) - point, axis=1)) < 1.0


def _arcface_like(path: Path, dim: int = 512) -> tuple[Path, np.ndarray]:
    """An ArcFace-w600k-shaped model ([N,3,112,112] -> [N,dim]): 8x8 average pooling,
    flatten, a fixed random projection. Returns the path and the projection."""
    weights = np.random.default_rng(7).standard_normal((3 * 14 * 14, dim)).astype(np.float32)
    nodes = [
        helper.make_node(
            "AveragePool", ["input.1"], ["pooled"], kernel_shape=[8, 8], strides=[8, 8]
        ),
        helper.make_node("Flatten", ["pooled"], ["flat"], axis=1),
        helper.make_node("MatMul", ["flat", "w"], ["683"]),
    ]
    graph = helper.make_graph(
        nodes,
        "arcface_like",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, ["N", 3, 112, 112])],
        [helper.make_tensor_value_info("683", TensorProto.FLOAT, ["N", dim])],
        [numpy_helper.from_array(weights, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path, weights


def test_arcface_shaped_model_contract(tmp_path, faces) -> None:
    """512-d, one call for all faces, and exactly the contract's input: the 5-point crop
    onto the 112 template, RGB, (x - 127.5) / 127.5; output L2-normalised."""
    path, weights = _arcface_like(tmp_path / "w600k_like.onnx")
    part = OnnxRecognizer(OnnxModel(path, CPU))
    assert part.dim == 512
    assert part.same_person_distance == ARCFACE_SAME_PERSON_DISTANCE
    frames, works, _ = faces
    out = part.embed(frames, _copies(works))
    for work in out:
        image = frames[work.frame_index].image
        crop = warp_crop(image, align_affine(work.face.kps, "arcface_112", 112), 112)
        x = (crop[..., ::-1].astype(np.float32) - 127.5) / 127.5
        pooled = x.reshape(14, 8, 14, 8, 3).mean(axis=(1, 3)).transpose(2, 0, 1).reshape(-1)
        expected = pooled @ weights
        expected /= np.linalg.norm(expected)
        assert work.face.embedding is not None
        np.testing.assert_allclose(work.face.embedding, expected, atol=1e-4)
    looped = [part.embed(frames, [w])[0].face.embedding for w in _copies(works)]
    np.testing.assert_allclose(
        np.array([w.face.embedding for w in out]), np.array(looped), atol=1e-5
    )


def test_bad_models_and_settings(tmp_path, testdata) -> None:
    landmarker = OnnxModel(testdata / "models" / "landmarks_68_pfld.onnx", CPU)
    part = OnnxRecognizer(landmarker)  # (N, 136): structurally an embedding
    assert part.dim == 136
    detector = OnnxModel(testdata / "models" / "face_detection_short_range.onnx", CPU)
    with pytest.raises(ModelError, match="128x128"):
        OnnxRecognizer(detector)
    with pytest.raises(ModelError, match="not an \\(N, dim\\) embedding"):
        OnnxRecognizer(detector, input_size=128)
    path, _ = _arcface_like(tmp_path / "a.onnx")
    with pytest.raises(ValueError, match="template"):
        OnnxRecognizer(OnnxModel(path, CPU), template="arcface_96")
    with pytest.raises(ValueError, match="'rgb' or 'bgr'"):
        OnnxRecognizer(OnnxModel(path, CPU), color="gray")


def test_face_without_embedding_gets_one(mobilefacenet, faces) -> None:
    frames, works, _ = faces
    face = Face(works[0].face.bbox, 1.0, works[0].face.kps)
    out = mobilefacenet.embed(frames, [FaceWork(0, 0, face)])
    assert face.embedding is None  # the input record's face is not changed in place
    vector = out[0].face.embedding
    assert vector is not None and vector.shape == (mobilefacenet.dim,)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    # it is this face's embedding: the detected face's own, far from another person's
    (same,) = mobilefacenet.embed(frames, [FaceWork(0, 0, works[0].face)])
    np.testing.assert_allclose(vector, same.face.embedding, atol=1e-6)
    other = mobilefacenet.embed(frames, [works[-1]])[0].face.embedding
    assert float(np.linalg.norm(vector - other)) > MOBILEFACENET_SAME_PERSON_DISTANCE
