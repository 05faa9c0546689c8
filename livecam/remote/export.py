"""``livecam serve --export-repository DIR``: a Triton model repository of the swapper.

For NVIDIA's Triton container (ONNX Runtime backend, no Python in the hot path). The
exported model speaks the wire contract (``wire``): the uint8 BGR crop's normalisation
(channel order, mean, std, NCHW) and the output's decoding (x * std + mean, clip, round,
BGR, uint8) are folded into the ONNX graph around the swapper's own, so the container
answers exactly what ``livecam serve`` answers. ``config.pbtxt`` is written from Triton's
model-config protobuf (the one tritonclient ships): dynamic batch axis, the dynamic
batcher's ``max_queue_delay_microseconds`` and preferred sizes, optionally TensorRT fp16.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from livecam.errors import ConfigError
from livecam.face.enhance import FaceEnhancer
from livecam.face.swap.neural import NeuralSwapper
from livecam.remote import wire
from livecam.userfiles import write_atomically

GRAPH_FILE = "model.onnx"
CONFIG_FILE = "config.pbtxt"


def _constants(mean: object, std: object) -> list[onnx.TensorProto]:
    """The wrapper's constants: ``mean`` and ``std`` (per channel), the channel flip and
    the pixel range."""
    return [
        numpy_helper.from_array(_per_channel(mean), "livecam_mean"),
        numpy_helper.from_array(_per_channel(std), "livecam_std"),
        numpy_helper.from_array(np.array([2, 1, 0], np.int64), "livecam_flip"),
        numpy_helper.from_array(np.array(0.0, np.float32), "livecam_lo"),
        numpy_helper.from_array(np.array(255.0, np.float32), "livecam_hi"),
        numpy_helper.from_array(np.array(127.5, np.float32), "livecam_half"),
        numpy_helper.from_array(np.array(-1.0, np.float32), "livecam_minus1"),
        numpy_helper.from_array(np.array(1.0, np.float32), "livecam_plus1"),
    ]


def _per_channel(value: object) -> npt.NDArray[np.float32]:
    return np.broadcast_to(np.asarray(value, np.float32).reshape(-1), (3,)).copy()


def _pre_nodes(image: str, target: str, target_type: int, rgb: bool) -> list[onnx.NodeProto]:
    """uint8 N x S x S x 3 BGR ``image`` -> the model's normalised NCHW ``target``."""
    nodes = [helper.make_node("Cast", [image], ["livecam_crop_f"], to=TensorProto.FLOAT)]
    crop = "livecam_crop_f"
    if rgb:
        nodes.append(helper.make_node("Gather", [crop, "livecam_flip"], ["livecam_rgb"], axis=3))
        crop = "livecam_rgb"
    return [
        *nodes,
        helper.make_node("Sub", [crop, "livecam_mean"], ["livecam_centred"]),
        helper.make_node("Div", ["livecam_centred", "livecam_std"], ["livecam_scaled"]),
        helper.make_node("Transpose", ["livecam_scaled"], ["livecam_nchw"], perm=[0, 3, 1, 2]),
        helper.make_node("Cast", ["livecam_nchw"], [target], to=target_type),
    ]


def _post_nodes(out: str, answer: str, rgb: bool, scale: tuple[str, str]) -> list[onnx.NodeProto]:
    """The model's NCHW ``out`` -> uint8 N x S x S x 3 BGR ``answer``: times ``scale[0]``
    plus ``scale[1]``, clipped to 0..255 and rounded."""
    nodes = [
        helper.make_node("Cast", [out], ["livecam_out_f"], to=TensorProto.FLOAT),
        helper.make_node("Transpose", ["livecam_out_f"], ["livecam_nhwc"], perm=[0, 2, 3, 1]),
        helper.make_node("Mul", ["livecam_nhwc", scale[0]], ["livecam_times"]),
        helper.make_node("Add", ["livecam_times", scale[1]], ["livecam_pixels"]),
        helper.make_node("Clip", ["livecam_pixels", "livecam_lo", "livecam_hi"], ["livecam_clip"]),
        helper.make_node("Round", ["livecam_clip"], ["livecam_round"]),
    ]
    last = "livecam_round"
    if rgb:
        nodes.append(helper.make_node("Gather", [last, "livecam_flip"], ["livecam_bgr"], axis=3))
        last = "livecam_bgr"
    nodes.append(helper.make_node("Cast", [last], [answer], to=TensorProto.UINT8))
    return nodes


def _dynamic_batch(model: onnx.ModelProto, image: str, path: Path) -> None:
    batch = {i.name: i for i in model.graph.input}[image].type.tensor_type.shape.dim[0]
    if batch.HasField("dim_value") and batch.dim_value == 1:
        raise ConfigError(
            f"{path.name} has a fixed batch of 1 that LiveCam could not make dynamic",
            "export another file of the model (with a dynamic batch axis)",
        )


def _rewire(
    model: onnx.ModelProto,
    nodes: list[onnx.NodeProto],
    consts: list[onnx.TensorProto],
    replaced: tuple[str, ...],
    inputs: list[onnx.ValueInfoProto],
    output: onnx.ValueInfoProto,
) -> onnx.ModelProto:
    g = model.graph
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(consts)
    kept = [i for i in g.input if i.name not in replaced]
    del g.input[:]
    g.input.extend([*inputs, *kept])
    del g.output[:]
    g.output.append(output)
    onnx.checker.check_model(model)
    return model


def wire_graph(swapper: NeuralSwapper) -> onnx.ModelProto:
    """The swapper's ONNX graph (with its dynamic batch axis) wrapped to take ``crop``
    (uint8 N x S x S x 3 BGR) and ``latent`` (float32 N x 512) and give ``swapped``
    (uint8 N x S x S x 3 BGR)."""
    if swapper.pixel_boost != 1:
        raise ConfigError(
            "an exported repository serves the swapper without pixel boost",
            "export with pixel boost 1 (the client sends crops at the model's own size)",
        )
    model = onnx.load(str(swapper.model.loaded_path))
    g = model.graph
    target, source = swapper.input_names
    size = swapper.input_size
    _dynamic_batch(model, target, swapper.model.path)
    types = {i.name: i.type.tensor_type.elem_type for i in g.input}
    rgb = swapper.color == "rgb"
    nodes = [
        *_pre_nodes(wire.CROP, target, types[target], rgb),
        helper.make_node("Cast", [wire.LATENT], [source], to=types[source]),
        *g.node,
        *_post_nodes(g.output[0].name, wire.SWAPPED, rgb, ("livecam_std", "livecam_mean")),
    ]
    return _rewire(
        model,
        nodes,
        _constants(swapper.mean, swapper.std),
        (target, source),
        [
            helper.make_tensor_value_info(wire.CROP, TensorProto.UINT8, ["N", size, size, 3]),
            helper.make_tensor_value_info(wire.LATENT, TensorProto.FLOAT, ["N", wire.LATENT_DIM]),
        ],
        helper.make_tensor_value_info(wire.SWAPPED, TensorProto.UINT8, ["N", size, size, 3]),
    )


def enhancer_graph(enhancer: FaceEnhancer) -> onnx.ModelProto:
    """The enhancer's ONNX graph wrapped to take ``face`` (uint8 N x E x E x 3 BGR) and give
    ``enhanced`` (the same), as ``FaceEnhancer.restore`` does: its normalisation in, the
    output clipped to -1..1 and mapped to 0..255 out, CodeFormer's fidelity a constant."""
    model = onnx.load(str(enhancer.model.loaded_path))
    g = model.graph
    image, size = enhancer.image_input, enhancer.input_size
    _dynamic_batch(model, image, enhancer.model.path)
    types = {i.name: i.type.tensor_type.elem_type for i in g.input}
    rgb = enhancer.color == "rgb"
    consts = _constants(enhancer.mean, enhancer.std)
    weight = enhancer.weight_input
    if weight is not None:  # an initializer of the same name feeds it
        consts.append(numpy_helper.from_array(np.array([enhancer.fidelity], np.float64), weight))
    out = g.output[0].name
    nodes = [
        *_pre_nodes(wire.FACE, image, types[image], rgb),
        *g.node,
        helper.make_node("Cast", [out], ["livecam_raw_f"], to=TensorProto.FLOAT),
        helper.make_node(
            "Clip", ["livecam_raw_f", "livecam_minus1", "livecam_plus1"], ["livecam_unit"]
        ),
        *_post_nodes("livecam_unit", wire.ENHANCED, rgb, ("livecam_half", "livecam_half")),
    ]
    return _rewire(
        model,
        nodes,
        consts,
        (image, *([weight] if weight else [])),
        [helper.make_tensor_value_info(wire.FACE, TensorProto.UINT8, ["N", size, size, 3])],
        helper.make_tensor_value_info(wire.ENHANCED, TensorProto.UINT8, ["N", size, size, 3]),
    )


def model_config(
    swapper: NeuralSwapper,
    *,
    max_batch: int,
    queue_delay_us: int,
    preferred_batch: tuple[int, ...] = (),
    tensorrt_fp16: bool = False,
) -> str:
    """``config.pbtxt`` of the exported swapper, written through Triton's ModelConfig
    protobuf (so it parses as one)."""
    from tritonclient.grpc import model_config_pb2 as mc

    size = swapper.input_size
    return _config_text(
        wire.MODEL,
        [
            mc.ModelInput(name=wire.CROP, data_type=mc.TYPE_UINT8, dims=[size, size, 3]),
            mc.ModelInput(name=wire.LATENT, data_type=mc.TYPE_FP32, dims=[wire.LATENT_DIM]),
        ],
        mc.ModelOutput(name=wire.SWAPPED, data_type=mc.TYPE_UINT8, dims=[size, size, 3]),
        swapper.model_id,
        Batching(max_batch, queue_delay_us, preferred_batch, tensorrt_fp16),
    )


def enhancer_config(enhancer: FaceEnhancer, batching: Batching) -> str:
    """``config.pbtxt`` of the exported enhancer (``livecam_enhancer``)."""
    from tritonclient.grpc import model_config_pb2 as mc

    size = enhancer.input_size
    return _config_text(
        wire.ENHANCER_MODEL,
        [mc.ModelInput(name=wire.FACE, data_type=mc.TYPE_UINT8, dims=[size, size, 3])],
        mc.ModelOutput(name=wire.ENHANCED, data_type=mc.TYPE_UINT8, dims=[size, size, 3]),
        enhancer.model.model_id,
        batching,
    )


@dataclass(frozen=True)
class Batching:
    """Triton's batching of an exported model, and whether it asks for TensorRT fp16."""

    max_batch: int = 32
    queue_delay_us: int = 2000
    preferred_batch: tuple[int, ...] = ()
    tensorrt_fp16: bool = False


def _config_text(name: str, inputs: list[Any], output: Any, model_id: str, b: Batching) -> str:
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2 as mc

    config = mc.ModelConfig(
        name=name,
        backend="onnxruntime",
        max_batch_size=b.max_batch,
        input=inputs,
        output=[output],
        dynamic_batching=mc.ModelDynamicBatching(
            max_queue_delay_microseconds=b.queue_delay_us,
            preferred_batch_size=list(b.preferred_batch),
        ),
        instance_group=[mc.ModelInstanceGroup(kind=mc.ModelInstanceGroup.KIND_AUTO, count=1)],
    )
    config.parameters["livecam_model_id"].string_value = model_id
    if b.tensorrt_fp16:
        trt = config.optimization.execution_accelerators.gpu_execution_accelerator.add()
        trt.name = "tensorrt"
        trt.parameters["precision_mode"] = "FP16"
        trt.parameters["max_workspace_size_bytes"] = str(1 << 30)
    text: str = text_format.MessageToString(config)
    return text


def export_repository(
    swapper: NeuralSwapper,
    folder: Path,
    *,
    max_batch: int = 32,
    queue_delay_us: int = 2000,
    preferred_batch: tuple[int, ...] = (),
    tensorrt_fp16: bool = False,
    enhancer: FaceEnhancer | None = None,
) -> Path:
    """Write ``folder/livecam_swapper/{config.pbtxt, 1/model.onnx}`` (and the same of
    ``livecam_enhancer`` when ``enhancer`` is given); returns ``folder``. Existing files of
    those models are replaced (each written atomically)."""
    config = model_config(
        swapper,
        max_batch=max_batch,
        queue_delay_us=queue_delay_us,
        preferred_batch=preferred_batch,
        tensorrt_fp16=tensorrt_fp16,
    )
    _write_model(folder / wire.MODEL, wire_graph(swapper), config)
    if enhancer is not None:
        batching = Batching(max_batch, queue_delay_us, preferred_batch, tensorrt_fp16)
        _write_model(
            folder / wire.ENHANCER_MODEL,
            enhancer_graph(enhancer),
            enhancer_config(enhancer, batching),
        )
    return folder


def _write_model(model_dir: Path, graph: onnx.ModelProto, config: str) -> None:
    (model_dir / "1").mkdir(parents=True, exist_ok=True)
    write_atomically(model_dir / "1" / GRAPH_FILE, graph.SerializeToString())
    write_atomically(model_dir / CONFIG_FILE, config.encode("utf-8"))
