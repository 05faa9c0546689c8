"""What the crop-based ONNX parts (landmarkers, recognizers, swappers, enhancers, the face
parser) share: crops of all faces as one normalised NCHW batch, and the model's image input
checked against its contract."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from livecam.errors import ModelError
from livecam.runtime.onnx_model import OnnxModel, TensorSpec
from livecam.types import Frame

COLORS = ("rgb", "bgr")
Floats = npt.NDArray[np.float32]


def channel_values(value: npt.ArrayLike, what: str) -> Floats:
    """A scalar or per-channel (3) normalisation constant, shaped to broadcast over NCHW."""
    arr = np.asarray(value, np.float32).reshape(-1)
    if arr.size not in (1, 3):
        raise ValueError(f"{what} must be a number or 3 numbers, got {value!r}")
    return arr.reshape(1, -1, 1, 1)


def check_color(color: str, what: str) -> str:
    """``color`` when it is 'rgb' or 'bgr', else a ValueError naming ``what``."""
    if color not in COLORS:
        raise ValueError(f"{what} color must be 'rgb' or 'bgr', got {color!r}")
    return color


def image_input(model: OnnxModel, size: int, what: str) -> TensorSpec:
    """The model's NCHW image input, checked to take ``size`` x ``size`` crops (a fixed
    other size is a ModelError naming the size to set)."""
    spec = model.inputs[0] if model.inputs else None
    if spec is None or len(spec.shape) != 4:
        raise ModelError(
            f"{what} model {model.path.name} has no NCHW image input",
            f"pass a {what} ONNX file",
        )
    h, w = spec.shape[2:]
    for axis in (h, w):
        if isinstance(axis, int) and axis > 0 and axis != size:
            raise ModelError(
                f"{what} model {model.path.name} takes {w}x{h} crops, not {size}x{size}",
                f"set its input_size to {axis}",
            )
    return spec


def to_blob(
    crops: Sequence[Frame] | npt.NDArray[np.uint8],
    mean: npt.ArrayLike,
    std: npt.ArrayLike,
    color: str,
) -> npt.NDArray[np.float32]:
    """(N, 3, H, W) float32 ``(pixel - mean) / std`` of BGR uint8 crops (a list or an
    (N, H, W, 3) array), channels in ``color`` order ('rgb' swaps them)."""
    batch = np.asarray(crops, np.uint8)
    if color == "rgb":
        batch = batch[..., ::-1]
    blob = batch.transpose(0, 3, 1, 2).astype(np.float32)
    normalised = (blob - channel_values(mean, "mean")) / channel_values(std, "std")
    return np.ascontiguousarray(normalised, dtype=np.float32)
