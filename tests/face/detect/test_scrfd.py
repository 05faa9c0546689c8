"""ScrfdDetector on the real SCRFD 2.5G and 500M files and the real test faces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from face_helpers import lite_analyzer
from onnx import helper, numpy_helper
from scenes import Portrait, background, compose, match

from livecam.errors import ModelError
from livecam.face.detect.patches import tile_starts
from livecam.face.detect.scrfd import ScrfdDetector
from livecam.face.detect.yunet import YuNetDetector
from livecam.face.parts import Detector
from livecam.face.track.tracking import iou
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions
from livecam.types import Face, FrameContext
from livecam.userfiles.images import load_image_bgr

CPU = RuntimeOptions(provider="cpu")
SCRFD_FILES = ("scrfd_2.5g_kps.onnx", "scrfd_500m_kps.onnx")
PORTRAITS = ("obama_official_portrait_2012.jpg", "astronaut_eileen_collins.png")


def face(testdata: Path, name: str) -> np.ndarray:
    return load_image_bgr(testdata / "faces" / name)


@pytest.fixture(scope="module", params=SCRFD_FILES)
def scrfd(request: pytest.FixtureRequest, testdata: Path) -> ScrfdDetector:
    return ScrfdDetector(OnnxModel(testdata / "models" / request.param, CPU))


@pytest.fixture(scope="module")
def cv2_yunet(testdata: Path) -> YuNetDetector:
    return YuNetDetector(testdata / "models" / "face_detection_yunet_2023mar.onnx")


def assert_on_face(found: Face) -> None:
    """Keypoints inside the box, in ArcFace order: eyes left to right above the nose,
    the nose above the mouth corners."""
    x1, y1, x2, y2 = found.bbox
    k = found.kps
    assert np.all((k[:, 0] > x1) & (k[:, 0] < x2) & (k[:, 1] > y1) & (k[:, 1] < y2))
    assert k[0, 0] < k[1, 0] and k[3, 0] < k[4, 0]
    assert max(k[0, 1], k[1, 1]) < k[2, 1] < min(k[3, 1], k[4, 1])


def test_is_a_detector_with_an_id_naming_file_and_settings(scrfd: ScrfdDetector) -> None:
    assert isinstance(scrfd, Detector)
    assert scrfd.model_id.startswith(f"scrfd:{scrfd.model.model_id}:640x640:0.5:nms0.4:")
    assert scrfd.providers.used == ("cpu",)
    scrfd.warmup()


@pytest.mark.parametrize("name", PORTRAITS)
def test_portrait_face_matches_yunet(
    scrfd: ScrfdDetector, cv2_yunet: YuNetDetector, testdata: Path, name: str
) -> None:
    image = face(testdata, name)
    (found,) = scrfd.detect([FrameContext(image)])[0]
    (ref,) = cv2_yunet.detect([FrameContext(image)])[0]
    assert found.score >= 0.5
    assert iou(found.bbox, ref.bbox) > 0.6
    assert_on_face(found)
    eyes = float(np.linalg.norm(ref.kps[1] - ref.kps[0]))
    assert np.linalg.norm(found.kps - ref.kps, axis=1).max() < 0.25 * eyes


def test_two_people_and_blank_frames(scrfd: ScrfdDetector, testdata: Path) -> None:
    two = face(testdata, "obama_biden_two_people.jpg")
    frames = [two, np.zeros((480, 640, 3), np.uint8), background(640, 480)]
    found = scrfd.detect([FrameContext(f) for f in frames])
    assert [len(f) for f in found] == [2, 0, 0]
    for f in found[0]:
        assert_on_face(f)


def test_batch_equals_one_frame_at_a_time(scrfd: ScrfdDetector, testdata: Path) -> None:
    frames = [FrameContext(face(testdata, n)[:512, :512].copy()) for n in PORTRAITS]
    frames.append(FrameContext(background(512, 512)))
    batched = scrfd.detect(frames)
    for frame, faces in zip(frames, batched, strict=True):
        alone = scrfd.detect([frame])[0]
        assert len(alone) == len(faces)
        for a, b in zip(alone, faces, strict=True):
            np.testing.assert_allclose(a.bbox, b.bbox, atol=1e-3)
            np.testing.assert_allclose(a.kps, b.kps, atol=1e-3)
            assert a.score == pytest.approx(b.score, abs=1e-5)


@pytest.fixture(scope="module")
def portrait(testdata: Path) -> Portrait:
    image = face(testdata, PORTRAITS[0])
    (found,) = lite_analyzer(with_encoder=False).analyze(image)
    assert found.landmarks is not None
    return Portrait(PORTRAITS[0], image, found.landmarks)


@pytest.mark.parametrize("size", [(640, 480), (1920, 1080)])
@pytest.mark.parametrize("width_frac", [0.08, 0.4])
@pytest.mark.parametrize("sides", [None, (640,)])
def test_webcam_framing(
    scrfd: ScrfdDetector,
    portrait: Portrait,
    size: tuple[int, int],
    width_frac: float,
    sides: tuple[int, ...] | None,
) -> None:
    scene = compose(portrait, background(*size), width_frac, (0.4, 0.5), 8.0)
    scrfd.max_sides = sides
    try:
        faces = scrfd.detect([FrameContext(scene.frame)])[0]
    finally:
        scrfd.max_sides = None
    found = match(scene, faces)
    assert found is not None and len(faces) == 1
    assert_on_face(found)
    assert found.width == pytest.approx(scene.face_width, rel=0.35)


def test_group_photo_in_tiled_passes(
    scrfd: ScrfdDetector, cv2_yunet: YuNetDetector, testdata: Path
) -> None:
    group = face(testdata, "group_solvay_conference_1927.png")
    tiled = ScrfdDetector(scrfd.model, max_sides=(1600, 640))
    faces = tiled.detect([FrameContext(group)])[0]
    cv2_yunet.max_sides = (1600,)
    try:
        ref = cv2_yunet.detect([FrameContext(group)])[0]
    finally:
        cv2_yunet.max_sides = None
    confirmed = [f for f in faces if any(iou(f.bbox, r.bbox) > 0.5 for r in ref)]
    assert len(ref) >= 25 and len(confirmed) >= 25
    for f in confirmed:
        assert_on_face(f)
    boxes = np.array([f.bbox for f in faces])
    assert all(iou(a, b) < 0.4 for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def test_tiles_cover_with_overlap() -> None:
    assert tile_starts(600, 640) == [0]
    starts = tile_starts(1600, 640)
    assert starts[0] == 0 and starts[-1] == 1600 - 640
    assert all(b - a <= 640 - 640 // 3 for a, b in zip(starts, starts[1:], strict=False))


def test_wrong_models_and_sizes_are_model_errors(testdata: Path) -> None:
    models = testdata / "models"
    with pytest.raises(ModelError, match="outputs, not 9"):
        ScrfdDetector(OnnxModel(models / "yunet_s_dynamic.onnx", CPU))
    with pytest.raises(ModelError, match="takes 640x640 images, not 320x320") as err:
        ScrfdDetector(OnnxModel(models / "scrfd_500m_kps.onnx", CPU), input_size=320)
    assert "input_size to 640" in err.value.hint


def without_batch_axis(source: Path, path: Path) -> Path:
    """``source`` with every output squeezed to (anchors, width), as insightface's det_10g
    export has them (no batch axis)."""
    model = onnx.load(str(source))
    graph = model.graph
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    for out in graph.output:
        inner = f"{out.name}_batched"
        for node in graph.node:
            node.output[:] = [inner if n == out.name else n for n in node.output]
        if opset >= 13:
            axes = numpy_helper.from_array(np.array([0], np.int64), f"{out.name}_axes")
            graph.initializer.append(axes)
            graph.node.append(helper.make_node("Squeeze", [inner, axes.name], [out.name]))
        else:
            graph.node.append(helper.make_node("Squeeze", [inner], [out.name], axes=[0]))
        dims = out.type.tensor_type.shape.dim
        kept = [d.dim_value for d in dims][1:]
        out.CopyFrom(helper.make_tensor_value_info(out.name, onnx.TensorProto.FLOAT, kept))
    onnx.save(model, str(path))
    return path


def test_outputs_without_batch_axis_run_per_patch(testdata: Path, tmp_path: Path) -> None:
    source = testdata / "models" / "scrfd_500m_kps.onnx"
    squeezed = OnnxModel(without_batch_axis(source, tmp_path / "squeezed.onnx"), CPU)
    assert len(squeezed.outputs[0].shape) == 2
    frames = [FrameContext(face(testdata, n)) for n in ("obama_biden_two_people.jpg", *PORTRAITS)]
    ours = ScrfdDetector(squeezed).detect(frames)
    ref = ScrfdDetector(OnnxModel(source, CPU)).detect(frames)
    assert [len(f) for f in ours] == [len(f) for f in ref] == [2, 1, 1]
    for a, b in zip(sum(ours, []), sum(ref, []), strict=True):
        np.testing.assert_allclose(a.bbox, b.bbox, atol=1e-3)
