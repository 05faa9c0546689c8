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

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from livecam.errors import ConfigError
from livecam.face.swap.neural import NeuralSwapper
from livecam.remote import wire
from livecam.userfiles import write_atomically

GRAPH_FILE = "model.onnx"
CONFIG_FILE = "config.pbtxt"


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
    inputs = {i.name: i for i in g.input}
    batch = inputs[target].type.tensor_type.shape.dim[0]
    if batch.HasField("dim_value") and batch.dim_value == 1:
        raise ConfigError(
            f"{swapper.model.path.name} has a fixed batch of 1 that LiveCam could not make dynamic",
            "export another file of the model (with a dynamic batch axis)",
        )
    target_type = inputs[target].type.tensor_type.elem_type
    source_type = inputs[source].type.tensor_type.elem_type
    out = g.output[0].name
    mean = np.broadcast_to(np.asarray(swapper.mean, np.float32).reshape(-1), (3,)).copy()
    std = np.broadcast_to(np.asarray(swapper.std, np.float32).reshape(-1), (3,)).copy()
    consts = [
        numpy_helper.from_array(mean, "livecam_mean"),
        numpy_helper.from_array(std, "livecam_std"),
        numpy_helper.from_array(np.array([2, 1, 0], np.int64), "livecam_flip"),
        numpy_helper.from_array(np.array(0.0, np.float32), "livecam_lo"),
        numpy_helper.from_array(np.array(255.0, np.float32), "livecam_hi"),
    ]
    rgb = swapper.color == "rgb"
    pre = [helper.make_node("Cast", [wire.CROP], ["livecam_crop_f"], to=TensorProto.FLOAT)]
    crop = "livecam_crop_f"
    if rgb:
        pre.append(helper.make_node("Gather", [crop, "livecam_flip"], ["livecam_crop_rgb"], axis=3))
        crop = "livecam_crop_rgb"
    pre += [
        helper.make_node("Sub", [crop, "livecam_mean"], ["livecam_centred"]),
        helper.make_node("Div", ["livecam_centred", "livecam_std"], ["livecam_scaled"]),
        helper.make_node("Transpose", ["livecam_scaled"], ["livecam_nchw"], perm=[0, 3, 1, 2]),
        helper.make_node("Cast", ["livecam_nchw"], [target], to=target_type),
        helper.make_node("Cast", [wire.LATENT], [source], to=source_type),
    ]
    post = [
        helper.make_node("Cast", [out], ["livecam_out_f"], to=TensorProto.FLOAT),
        helper.make_node("Transpose", ["livecam_out_f"], ["livecam_nhwc"], perm=[0, 2, 3, 1]),
        helper.make_node("Mul", ["livecam_nhwc", "livecam_std"], ["livecam_times"]),
        helper.make_node("Add", ["livecam_times", "livecam_mean"], ["livecam_pixels"]),
        helper.make_node("Clip", ["livecam_pixels", "livecam_lo", "livecam_hi"], ["livecam_clip"]),
        helper.make_node("Round", ["livecam_clip"], ["livecam_round"]),
    ]
    last = "livecam_round"
    if rgb:
        post.append(helper.make_node("Gather", [last, "livecam_flip"], ["livecam_bgr"], axis=3))
        last = "livecam_bgr"
    post.append(helper.make_node("Cast", [last], [wire.SWAPPED], to=TensorProto.UINT8))
    nodes = [*pre, *g.node, *post]
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(consts)
    kept = [i for i in g.input if i.name not in (target, source)]
    del g.input[:]
    g.input.extend(
        [
            helper.make_tensor_value_info(wire.CROP, TensorProto.UINT8, ["N", size, size, 3]),
            helper.make_tensor_value_info(wire.LATENT, TensorProto.FLOAT, ["N", wire.LATENT_DIM]),
            *kept,
        ]
    )
    del g.output[:]
    g.output.append(
        helper.make_tensor_value_info(wire.SWAPPED, TensorProto.UINT8, ["N", size, size, 3])
    )
    onnx.checker.check_model(model)
    return model


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
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2 as mc

    size = swapper.input_size
    config = mc.ModelConfig(
        name=wire.MODEL,
        backend="onnxruntime",
        max_batch_size=max_batch,
        input=[
            mc.ModelInput(name=wire.CROP, data_type=mc.TYPE_UINT8, dims=[size, size, 3]),
            mc.ModelInput(name=wire.LATENT, data_type=mc.TYPE_FP32, dims=[wire.LATENT_DIM]),
        ],
        output=[mc.ModelOutput(name=wire.SWAPPED, data_type=mc.TYPE_UINT8, dims=[size, size, 3])],
        dynamic_batching=mc.ModelDynamicBatching(
            max_queue_delay_microseconds=queue_delay_us, preferred_batch_size=list(preferred_batch)
        ),
        instance_group=[mc.ModelInstanceGroup(kind=mc.ModelInstanceGroup.KIND_AUTO, count=1)],
    )
    config.parameters["livecam_model_id"].string_value = swapper.model_id
    if tensorrt_fp16:
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
) -> Path:
    """Write ``folder/livecam_swapper/{config.pbtxt, 1/model.onnx}``; returns ``folder``.
    Existing files of that model are replaced (each written atomically)."""
    graph = wire_graph(swapper)
    config = model_config(
        swapper,
        max_batch=max_batch,
        queue_delay_us=queue_delay_us,
        preferred_batch=preferred_batch,
        tensorrt_fp16=tensorrt_fp16,
    )
    model_dir = folder / wire.MODEL
    (model_dir / "1").mkdir(parents=True, exist_ok=True)
    write_atomically(model_dir / "1" / GRAPH_FILE, graph.SerializeToString())
    write_atomically(model_dir / CONFIG_FILE, config.encode("utf-8"))
    return folder
