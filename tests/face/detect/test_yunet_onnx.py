"""OnnxYuNetDetector against OpenCV's own YuNet (``cv2.FaceDetectorYN``, the contract's
reference) on the real YuNet 2023mar files and test faces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from scenes import background

from livecam.errors import ModelError
from livecam.face.detect.yunet import YuNetDetector
from livecam.face.detect.yunet_onnx import OnnxYuNetDetector
from livecam.face.parts import Detector, FrameContext
from livecam.face.track.tracking import iou
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions
from livecam.sources.image import load_image_bgr
from livecam.types import Face

CPU = RuntimeOptions(provider="cpu")
FACES = (
    "obama_official_portrait_2012.jpg",
    "obama_biden_two_people.jpg",
    "astronaut_eileen_collins.png",
    "grace_hopper_navy_portrait.jpg",
)


@pytest.fixture(scope="module")
def dynamic(testdata: Path) -> OnnxModel:
    return OnnxModel(testdata / "models" / "yunet_s_dynamic.onnx", CPU)


@pytest.fixture(scope="module")
def fixed(testdata: Path) -> OnnxModel:
    return OnnxModel(testdata / "models" / "face_detection_yunet_2023mar.onnx", CPU)


@pytest.fixture(scope="module")
def reference(testdata: Path) -> YuNetDetector:
    return YuNetDetector(testdata / "models" / "face_detection_yunet_2023mar.onnx")


def frames(testdata: Path) -> list[FrameContext]:
    return [FrameContext(load_image_bgr(testdata / "faces" / n)) for n in FACES]


def assert_same(ours: list[Face], ref: list[Face], px: float, score: float) -> None:
    assert len(ours) == len(ref) > 0
    ours = sorted(ours, key=lambda f: float(f.bbox[0]))
    ref = sorted(ref, key=lambda f: float(f.bbox[0]))
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a.bbox, b.bbox, atol=px)
        np.testing.assert_allclose(a.kps, b.kps, atol=px)
        assert a.score == pytest.approx(b.score, abs=score)


def test_matches_opencv_on_the_frame_as_it_is(
    dynamic: OnnxModel, reference: YuNetDetector, testdata: Path
) -> None:
    detector = OnnxYuNetDetector(dynamic)
    assert isinstance(detector, Detector)
    for frame in frames(testdata):
        assert_same(detector.detect([frame])[0], reference.detect([frame])[0], 1.0, 0.01)


def test_matches_opencv_in_shrunk_passes(dynamic: OnnxModel, testdata: Path) -> None:
    path = testdata / "models" / "face_detection_yunet_2023mar.onnx"
    reference = YuNetDetector(path, max_sides=(640, 320), start_score=0.85)
    detector = OnnxYuNetDetector(dynamic, max_sides=(640, 320), start_score=0.85)
    assert detector.start_score == 0.85
    assert detector.model_id == "yunet-onnx:yunet_s_dynamic:free:0.6:nms0.3:start0.85:640x320px"
    for frame in frames(testdata):
        assert_same(detector.detect([frame])[0], reference.detect([frame])[0], 1.0, 0.01)


def test_fixed_size_file_letterboxes(
    fixed: OnnxModel, reference: YuNetDetector, testdata: Path
) -> None:
    """The 640x640 export: a frame larger than that is shrunk into it; the faces found
    are OpenCV's on the whole frame."""
    detector = OnnxYuNetDetector(fixed)
    for frame in frames(testdata):
        ours = detector.detect([frame])[0]
        ref = reference.detect([frame])[0]
        assert len(ours) == len(ref)
        for r in ref:
            assert max(iou(r.bbox, o.bbox) for o in ours) > 0.8


def test_batch_is_one_session_call_and_equals_per_frame(
    dynamic: OnnxModel, testdata: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    detector = OnnxYuNetDetector(dynamic)
    batch = [FrameContext(f.image[:480, :480].copy()) for f in frames(testdata)[:2]]
    batch.append(FrameContext(background(480, 480)))
    alone = [detector.detect([f])[0] for f in batch]
    calls: list[int] = []
    real_run = dynamic.run

    def counted(feeds):  # type: ignore[no-untyped-def]
        calls.append(len(next(iter(feeds.values()))))
        return real_run(feeds)

    monkeypatch.setattr(dynamic, "run", counted)
    together = detector.detect(batch)
    assert calls == [3]
    assert [len(f) for f in together] == [len(f) for f in alone]
    assert len(together[2]) == 0
    for ours, ref in zip(together[:2], alone[:2], strict=True):
        assert_same(ours, ref, 1e-3, 1e-5)


def test_group_photo_tiled_into_the_fixed_canvas(
    fixed: OnnxModel, reference: YuNetDetector, testdata: Path
) -> None:
    group = FrameContext(load_image_bgr(testdata / "faces" / "group_solvay_conference_1927.png"))
    faces = OnnxYuNetDetector(fixed, max_sides=(1600, 640)).detect([group])[0]
    strong = [f for f in faces if f.score >= 0.85]
    assert len(strong) >= 25
    boxes = [f.bbox for f in faces]
    assert all(iou(a, b) <= 0.3 for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def old_layout(path: Path) -> Path:
    """A tiny model with the 2021/2022 YuNet outputs (loc, conf, iou)."""
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])
    outs = [
        helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("loc", "conf", "iou")
    ]
    nodes = [helper.make_node("Identity", ["input"], [n]) for n in ("loc", "conf", "iou")]
    graph = helper.make_graph(nodes, "yunet_2022", [x], outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=7)
    onnx.save(model, path)
    return path


def test_old_yunet_and_other_models_are_rejected(tmp_path: Path, testdata: Path) -> None:
    with pytest.raises(ModelError, match="not a YuNet 2023mar model") as err:
        OnnxYuNetDetector(OnnxModel(old_layout(tmp_path / "yunet_2022.onnx"), CPU))
    assert "2023mar" in err.value.hint
    with pytest.raises(ModelError, match="not a YuNet 2023mar model"):
        OnnxYuNetDetector(OnnxModel(testdata / "models" / "scrfd_500m_kps.onnx", CPU))
    fixed = OnnxModel(testdata / "models" / "face_detection_yunet_2023mar.onnx", CPU)
    with pytest.raises(ModelError, match="takes 640x640 images"):
        OnnxYuNetDetector(fixed, input_size=320)
