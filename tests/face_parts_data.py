"""Helpers for the mask, paste-back and enhancer tests: real faces from the test data
(YuNet keypoints, slim-160 68 landmarks) and tiny ONNX models built with ``onnx.helper``
that stand in for weights we can't load here (an identity enhancer, CodeFormer's
fidelity input, a face parser whose classes follow the pixels' colour)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper

from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
from livecam.face.identity.metrics import psnr as psnr  # one PSNR for the tests (re-exported)
from livecam.runtime.onnx_model import OnnxModel
from livecam.types import Face, FaceWork, Frame, FrameContext


def read_color(path: Path) -> Frame:
    """An image file as OpenCV reads it in colour (BGR uint8); the test fails if it cannot."""
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert img is not None, path
    return np.asarray(img, np.uint8)


def load_face_image(testdata: Path, name: str, max_side: int = 640) -> Frame:
    """A test portrait, shrunk so its long side is at most ``max_side``."""
    img = read_color(testdata / "faces" / name)
    s = max_side / max(img.shape[:2])
    if s < 1:
        img = np.asarray(cv2.resize(img, None, fx=s, fy=s, interpolation=cv2.INTER_AREA))
    return np.ascontiguousarray(img, np.uint8)


def yunet_faces(image: Frame) -> list[Face]:
    """Faces with 5 keypoints from the bundled YuNet, left to right."""
    faces = YuNetDetector(bundled_yunet()).detect([FrameContext(image)])[0]
    return sorted(faces, key=lambda f: float(f.bbox[0]))


#: three frames of different sizes with 2, 1 and 1 faces (the swappers' and device tests')
SWAP_FACES = (
    "obama_biden_two_people.jpg",
    "obama_official_portrait_2012.jpg",
    "astronaut_eileen_collins.png",
)


def swap_scene(
    testdata: Path, names: Sequence[str] = SWAP_FACES
) -> tuple[list[FrameContext], list[list[Face]]]:
    """The named test portraits as frames (seq = their index) and YuNet's faces in each."""
    frames = [FrameContext(load_face_image(testdata, name), seq=i) for i, name in enumerate(names)]
    return frames, YuNetDetector(bundled_yunet()).detect(frames)


def face_works(
    faces: Sequence[Sequence[Face]], sources: Sequence[int] | None = None
) -> list[FaceWork]:
    """One record per face, frame by frame, face i taking source ``sources[i]`` (default:
    every face source 0)."""
    works = [FaceWork(frame_index=i, seq=i, face=face) for i, fs in enumerate(faces) for face in fs]
    for work, index in zip(works, sources or [0] * len(works), strict=True):
        work.source_index = index
    return works


def _save(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def identity_enhancer(
    path: Path,
    size: int = 512,
    batch: int | str = "N",
    names: tuple[str, str] = ("input", "output"),
) -> Path:
    """An enhancer-shaped model whose output is its input ([-1, 1] NCHW)."""
    shape = [batch, 3, size, size]
    graph = helper.make_graph(
        [helper.make_node("Identity", [names[0]], [names[1]])],
        "identity_enhancer",
        [helper.make_tensor_value_info(names[0], TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(names[1], TensorProto.FLOAT, shape)],
    )
    return _save(graph, path)


def codeformer_like(path: Path, image: str = "input", weight: str = "weight") -> Path:
    """CodeFormer's I/O: image [N,3,512,512] and a float64 fidelity weight (1,); output =
    image * 2 * weight (the identity at the default weight 0.5)."""
    shape: list[str | int | None] = ["N", 3, 512, 512]
    nodes = [
        helper.make_node("Cast", [weight], ["wf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["wf", "two"], ["w2"]),
        helper.make_node("Mul", [image, "w2"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes,
        "codeformer_like",
        [
            helper.make_tensor_value_info(image, TensorProto.FLOAT, shape),
            helper.make_tensor_value_info(weight, TensorProto.DOUBLE, [1]),
        ],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)],
        [helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])],
    )
    return _save(graph, path)


def colour_parser(path: Path, size: int = 512) -> Path:
    """A BiSeNet-shaped face parser ([N,3,S,S] -> [N,19,S,S] class scores) whose scores
    follow the normalised input: class 1 (skin) = channel 0, class 17 (hair) = channel 1,
    class 0 (background) = 0, every other class -100. So a pixel is 'skin' where its
    first channel (red, for an RGB parser) is above ImageNet's mean and above channel 1."""
    nodes = [
        helper.make_node("Slice", ["x", "s0", "e0", "ax"], ["c0"]),
        helper.make_node("Slice", ["x", "s1", "e1", "ax"], ["c1"]),
        helper.make_node("Mul", ["c0", "zero"], ["z"]),
        helper.make_node("Add", ["z", "minus"], ["low"]),
    ]
    channels = ["z", "c0"] + ["low"] * 15 + ["c1", "low"]
    nodes.append(helper.make_node("Concat", channels, ["out"], axis=1))
    ints = TensorProto.INT64
    graph = helper.make_graph(
        nodes,
        "colour_parser",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 19, size, size])],
        [
            helper.make_tensor("s0", ints, [1], [0]),
            helper.make_tensor("e0", ints, [1], [1]),
            helper.make_tensor("s1", ints, [1], [1]),
            helper.make_tensor("e1", ints, [1], [2]),
            helper.make_tensor("ax", ints, [1], [1]),
            helper.make_tensor("zero", TensorProto.FLOAT, [1], [0.0]),
            helper.make_tensor("minus", TensorProto.FLOAT, [1], [-100.0]),
        ],
    )
    return _save(graph, path)


class CountingModel(OnnxModel):
    """A real ``OnnxModel`` that counts its session runs and the items fed per run."""

    def __init__(self, path: Path, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.batches: list[int] = []

    def run(self, feeds: Mapping[str, npt.ArrayLike]) -> list[npt.NDArray[Any]]:
        first = np.asarray(feeds[self.input_names[0]])
        self.batches.append(len(first))
        return super().run(feeds)


def conv_enhancer(path: Path, size: int = 256, seed: int = 5) -> Path:
    """An enhancer-shaped model ([-1, 1] NCHW in and out, GPEN-BFR-256's names) that
    changes every pixel by its neighbourhood: tanh of a fixed random 3x3 convolution plus
    the input, so an answer computed from another crop, or none, shows."""
    rng = np.random.default_rng(seed)
    weights = (rng.standard_normal((3, 3, 3, 3)) * 0.15).astype(np.float32)
    shape: list[str | int | None] = ["N", 3, size, size]
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["input", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Add", ["c", "input"], ["s"]),
            helper.make_node("Tanh", ["s"], ["output"]),
        ],
        "conv_enhancer",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)],
        [helper.make_tensor("w", TensorProto.FLOAT, list(weights.shape), weights.ravel())],
    )
    return _save(graph, path)
