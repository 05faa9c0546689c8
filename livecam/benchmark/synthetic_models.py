"""Synthetic face-swapper ONNX models, built by LiveCam's own code at test and bench time.

The real swapper weights (inswapper_128, hyperswap) cannot be shipped or loaded here, so the
swapper parts are proven on models with the real ones' interface (input and output names,
shapes, value ranges, ``emap`` as the last initializer) written by these builders:

* ``inswapper_like``: inswapper_128's architecture with random weights (an encoder to
  1024x32x32, six AdaIN style blocks conditioned on the 512-d latent, a decoder back to
  3x128x128, output in [0, 1]): about 138.6M parameters and 349 GFLOPs per face at full
  width, ``width`` shrinks it for fast tests, ``fp16`` stores it (weights and I/O) in float16.
* ``hyperswap_like``: the same kind of network at 256 with hyperswap's I/O (target in
  [-1, 1], output 0 in [-1, 1], a second ``mask`` output).
* ``blind_recognizer``: a recognizer with ArcFace's interface that sees every face alike
  (a broken or random-weight file, for the swap check's judge).
* oracles: ``identity_swapper`` (output = target) and ``latent_colour_swapper`` (a flat
  colour computed from the latent, ``latent_colour`` is its NumPy reference), so a test can
  tell exactly what the swapper part fed the model.

Weights come from ``numpy.random.default_rng(seed)``: the same call writes the same file.
``model_stats`` counts parameters and FLOPs (2 x multiply-adds of Conv and Gemm) from a graph.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

from livecam.userfiles import write_atomically

log = logging.getLogger(__name__)

Kind = Literal["inswapper", "hyperswap"]

OPSET = 17
IR_VERSION = 9
LATENT_DIM = 512
FULL_WIDTH = 1024  # channels of inswapper_128's bottleneck (1024x32x32)
STYLE_BLOCKS = 6
COLOUR_GAIN = 20.0  # latent_colour: sigmoid(gain * latent @ P)
_EMAP_SEED = 1234
_COLOUR_SEED = 4321


@dataclass(frozen=True)
class ModelStats:
    """Size and cost of a synthetic model: parameters (initializer elements, ``emap``
    included) and FLOPs for one face (2 x multiply-adds of Conv and Gemm nodes)."""

    params: int
    flops: int

    @property
    def gflops(self) -> float:
        return self.flops / 1e9

    def __str__(self) -> str:
        return f"{self.params / 1e6:.1f}M parameters, {self.gflops:.1f} GFLOPs per face"


class _Graph:
    """A small ONNX graph builder: named nodes and seeded random initializers."""

    def __init__(self, seed: int, weights: bool = True) -> None:
        self.rng = np.random.default_rng(seed)
        self.weights = weights
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def name(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}_{self._n}"

    def const(
        self, value: npt.ArrayLike, prefix: str = "c", dtype: npt.DTypeLike = np.float32
    ) -> str:
        name = self.name(prefix)
        arr = np.asarray(value, dtype=dtype)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def weight(self, shape: tuple[int, ...], std: float) -> str:
        """A random normal weight tensor; without ``weights``, a placeholder with its
        shape only (enough to count parameters and FLOPs, not to run)."""
        if self.weights:
            return self.const(self.rng.standard_normal(shape, np.float32) * np.float32(std), "w")
        name = self.name("w")
        placeholder = TensorProto(name=name, data_type=TensorProto.FLOAT)
        placeholder.dims.extend(shape)
        self.inits.append(placeholder)
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def conv(
        self,
        x: str,
        cin: int,
        cout: int,
        k: int,
        stride: int = 1,
        reflect: bool = False,
        gain: float = 1.0,
    ) -> str:
        """k x k convolution, He-initialised times ``gain``; ``reflect`` pads by reflection
        (else zeros)."""
        std = gain * np.sqrt(2.0 / (cin * k * k))
        w = self.weight((cout, cin, k, k), std)
        b = self.const(np.zeros(cout, np.float32), "b")
        p = k // 2
        if reflect and p:
            pads = self.const(np.array([0, 0, p, p, 0, 0, p, p], np.int64), "pads", np.int64)
            x = self.op("Pad", [x, pads], mode="reflect")
            return self.op("Conv", [x, w, b], kernel_shape=[k, k], strides=[stride, stride])
        return self.op(
            "Conv", [x, w, b], kernel_shape=[k, k], strides=[stride, stride], pads=[p, p, p, p]
        )

    def lrelu(self, x: str) -> str:
        return self.op("LeakyRelu", [x], alpha=0.2)

    def linear(self, x: str, cin: int, cout: int, std: float) -> str:
        w = self.weight((cin, cout), std)
        b = self.const(np.zeros(cout, np.float32), "b")
        return self.op("Gemm", [x, w, b])

    def adain(self, x: str, latent: str, c: int) -> str:
        """Instance norm of ``x``, then scale (1 + gamma) and shift beta from the latent."""
        ones = self.const(np.ones(c, np.float32), "in_scale")
        zeros = self.const(np.zeros(c, np.float32), "in_bias")
        normed = self.op("InstanceNormalization", [x, ones, zeros], epsilon=1e-5)
        axes = self.const(np.array([2, 3], np.int64), "axes", np.int64)
        gamma = self.op("Unsqueeze", [self.linear(latent, LATENT_DIM, c, 1.0), axes])
        beta = self.op("Unsqueeze", [self.linear(latent, LATENT_DIM, c, 1.0), axes])
        one = self.const(np.ones((1, 1, 1, 1), np.float32), "one")
        return self.op("Add", [self.op("Mul", [normed, self.op("Add", [gamma, one])]), beta])

    def upsample(self, x: str) -> str:
        scales = self.const(np.array([1, 1, 2, 2], np.float32), "scales", np.float32)
        return self.op("Resize", [x, "", scales], mode="nearest")

    def model(
        self, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto]
    ) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "livecam_synthetic", inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        model.producer_name = "livecam.benchmark.synthetic_models"
        return model


def _io(name: str, shape: list[int | str], fp16: bool) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(
        name, TensorProto.FLOAT16 if fp16 else TensorProto.FLOAT, shape
    )


def synthetic_emap(seed: int = _EMAP_SEED) -> npt.NDArray[np.float32]:
    """The 512x512 ``emap`` every builder here writes as the last initializer (seeded
    random, scaled like a learnt projection): what a test computes the latent with."""
    rng = np.random.default_rng(seed)
    emap: npt.NDArray[np.float32] = (
        rng.standard_normal((LATENT_DIM, LATENT_DIM), np.float32) / np.sqrt(LATENT_DIM)
    ).astype(np.float32)
    return emap


def _generator(
    g: _Graph, size: int, width: int, final: Literal["unit", "signed"]
) -> tuple[str, str, str]:
    """inswapper's generator body: (target input, source input, image output) names.

    Encoder (7x7 reflect conv to width/8 at full resolution, 3x3 to width/4, then stride-2
    convs to width/2 and width at size/4), six AdaIN residual blocks at size/4, decoder
    (two nearest upsamplings with 3x3 convs, 3x3 to width/8, 7x7 reflect conv to 3), tanh;
    ``final`` "unit" maps it to [0, 1], "signed" keeps [-1, 1]. A 256 model gets one more
    stride-2 conv and upsampling (bottleneck at 32x32 as well)."""
    c1, c2, c3, c4 = width // 8, width // 4, width // 2, width
    x = g.lrelu(g.conv("target", 3, c1, 7, reflect=True))
    x = g.lrelu(g.conv(x, c1, c2, 3))
    extra = int(np.log2(size // 128))
    for _ in range(extra):
        x = g.lrelu(g.conv(x, c2, c2, 3, stride=2))
    x = g.lrelu(g.conv(x, c2, c3, 3, stride=2))
    x = g.lrelu(g.conv(x, c3, c4, 3, stride=2))
    for _ in range(STYLE_BLOCKS):
        y = g.op("Relu", [g.adain(g.conv(x, c4, c4, 3, reflect=True), "source", c4)])
        y = g.adain(g.conv(y, c4, c4, 3, reflect=True), "source", c4)
        x = g.op("Add", [x, y])
    x = g.lrelu(g.conv(g.upsample(x), c4, c3, 3))
    x = g.lrelu(g.conv(g.upsample(x), c3, c2, 3))
    for _ in range(extra):
        x = g.lrelu(g.conv(g.upsample(x), c2, c2, 3))
    x = g.lrelu(g.conv(x, c2, c1, 3))
    out = g.op("Tanh", [g.conv(x, c1, 3, 7, reflect=True, gain=0.05)])  # tanh not saturated
    if final == "unit":
        half = g.const(np.full((1, 1, 1, 1), 0.5, np.float32), "half")
        out = g.op("Add", [g.op("Mul", [out, half]), half])
    return "target", "source", out


def _assemble(
    g: _Graph, size: int, outputs: list[tuple[str, str, int]], fp16: bool, emap: bool
) -> onnx.ModelProto:
    """The model: outputs renamed, ``emap`` appended LAST, cast to fp16 if asked."""
    for node_out, name, _ in outputs:
        g.nodes.append(helper.make_node("Identity", [node_out], [name], name=f"{name}_id"))
    if emap:
        g.inits.append(numpy_helper.from_array(synthetic_emap(), "emap"))
    inputs = [_io("target", ["N", 3, size, size], fp16), _io("source", ["N", LATENT_DIM], fp16)]
    outs = [_io(name, ["N", ch, size, size], fp16) for _, name, ch in outputs]
    model = g.model(inputs, outs)
    if fp16:
        _to_fp16(model)
    return model


def _write(model: onnx.ModelProto, path: str | os.PathLike[str]) -> ModelStats:
    """Write ``model`` to ``path`` (atomically) and return its stats."""
    stats = model_stats(model)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, lambda tmp: onnx.save(model, str(tmp)))
    log.info("wrote %s (%s)", target, stats)
    return stats


def _to_fp16(model: onnx.ModelProto) -> None:
    """Every float32 initializer to float16 but Resize's scales (which stay float32); the
    I/O are declared float16 by the caller."""
    for i, init in enumerate(model.graph.initializer):
        if init.data_type == TensorProto.FLOAT and not init.name.startswith("scales"):
            arr = numpy_helper.to_array(init).astype(np.float16)
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(arr, init.name))


def inswapper_like(
    path: str | os.PathLike[str],
    width: int = FULL_WIDTH,
    *,
    fp16: bool = False,
    seed: int = 0,
) -> ModelStats:
    """Write an inswapper_128-architecture model with random weights to ``path``.

    I/O as the real one: ``target`` [N,3,128,128] (RGB / 255), ``source`` [N,512] (the
    latent), output [N,3,128,128] RGB in [0, 1]; ``emap`` (512x512) is the last
    initializer. ``width`` is the bottleneck's channels (1024: the real size, ~138.6M
    parameters, ~349 GFLOPs per face; 128 for fast tests). Returns its ``ModelStats``."""
    return _write(_inswapper_model(width, fp16, seed, weights=True), path)


def _check_width(width: int) -> None:
    if width < 8 or width % 8:
        raise ValueError(f"width must be a positive multiple of 8, got {width}")


def _inswapper_model(width: int, fp16: bool, seed: int, weights: bool) -> onnx.ModelProto:
    _check_width(width)
    g = _Graph(seed, weights)
    _, _, out = _generator(g, 128, width, "unit")
    return _assemble(g, 128, [(out, "output", 3)], fp16, emap=True)


def inswapper_stats(width: int = FULL_WIDTH) -> ModelStats:
    """``inswapper_like``'s parameters and FLOPs, counted on its graph without drawing or
    writing its weights (instant even at full width)."""
    return model_stats(_inswapper_model(width, False, 0, weights=False))


def hyperswap_like(
    path: str | os.PathLike[str],
    width: int = 128,
    *,
    fp16: bool = False,
    seed: int = 0,
) -> ModelStats:
    """Write a hyperswap-shaped model (random weights) to ``path``: ``source`` [N,512] (the
    L2-normalised embedding), ``target`` [N,3,256,256] in [-1, 1]; outputs ``output``
    [N,3,256,256] in [-1, 1] and ``mask`` [N,1,256,256] in [0, 1] (FaceFusion 3.8 reads
    output 0 only). No ``emap``. Returns its ``ModelStats``."""
    _check_width(width)
    g = _Graph(seed)
    _, _, out = _generator(g, 256, width, "signed")
    mask = g.op("Sigmoid", [g.conv("target", 3, 1, 3)])
    model = _assemble(g, 256, [(out, "output", 3), (mask, "mask", 1)], fp16, emap=False)
    return _write(model, path)


def _range(kind: Kind) -> tuple[float, float]:
    """(offset, scale) mapping [0, 1] to the kind's output range."""
    return (0.0, 1.0) if kind == "inswapper" else (-1.0, 2.0)


def identity_swapper(
    path: str | os.PathLike[str], size: int = 128, kind: Kind = "inswapper"
) -> ModelStats:
    """Write an oracle whose output is its ``target`` input (the same value range in and
    out for both kinds: [0, 1] for inswapper, [-1, 1] for hyperswap); it has an ``emap``
    initializer (last) so it loads like inswapper, and ignores ``source``."""
    g = _Graph(0)
    zero = g.const(np.zeros((1, 1, 1, 1), np.float32), "zero")
    src = g.op("Unsqueeze", ["source", g.const(np.array([2, 3], np.int64), "axes", np.int64)])
    src_sum = g.op("ReduceSum", [src, g.const(np.array([1], np.int64), "axes", np.int64)])
    out = g.op("Add", ["target", g.op("Mul", [src_sum, zero])])  # exact: + 0 * sum(source)
    return _write(_assemble(g, size, [(out, "output", 3)], fp16=False, emap=True), path)


def _colour_projection() -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(_COLOUR_SEED)
    p = rng.standard_normal((LATENT_DIM, 3)).astype(np.float32)
    unit: npt.NDArray[np.float32] = (p / np.linalg.norm(p, axis=0, keepdims=True)).astype(
        np.float32
    )
    return unit


def latent_colour(latent: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """The NumPy reference of ``latent_colour_swapper``: (N, 3) RGB in [0, 1] for (N, 512)
    latents, sigmoid(COLOUR_GAIN * latent @ P) with a fixed random projection P."""
    z = np.asarray(latent, np.float64).reshape(-1, LATENT_DIM) @ _colour_projection()
    return (1.0 / (1.0 + np.exp(-COLOUR_GAIN * z))).astype(np.float32)


def latent_colour_swapper(
    path: str | os.PathLike[str], size: int = 128, kind: Kind = "inswapper"
) -> ModelStats:
    """Write an oracle whose output is a flat colour computed from ``source`` alone
    (``latent_colour``, mapped to the kind's output range), so each swapped face's colour
    proves which latent it got. It has an ``emap`` (last initializer) like inswapper."""
    g = _Graph(0)
    offset, scale = _range(kind)
    gain = g.const(np.float32(COLOUR_GAIN), "gain")
    z = g.op("Mul", [g.op("MatMul", ["source", g.const(_colour_projection(), "proj")]), gain])
    rgb = g.op("Sigmoid", [z])  # (N, 3) in [0, 1]
    rgb = g.op("Add", [g.op("Mul", [rgb, g.const(np.float32(scale))]), g.const(np.float32(offset))])
    col = g.op("Unsqueeze", [rgb, g.const(np.array([2, 3], np.int64), "axes", np.int64)])
    zero = g.const(np.zeros((1, 1, 1, 1), np.float32), "zero")
    flat = g.op("Add", [g.op("Mul", ["target", zero]), col])  # broadcast to (N, 3, S, S)
    return _write(_assemble(g, size, [(flat, "output", 3)], fp16=False, emap=True), path)


def model_stats(model: onnx.ModelProto | str | os.PathLike[str]) -> ModelStats:
    """Parameters (initializer elements) and FLOPs for a batch of one (2 x multiply-adds of
    Conv and Gemm/MatMul, from the inferred shapes) of a model or an ONNX file."""
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))
    params = sum(int(np.prod(t.dims)) for t in proto.graph.initializer)
    shapes: dict[str, list[int]] = {}
    for t in proto.graph.initializer:
        shapes[t.name] = list(t.dims)
    light = []  # shape inference needs no weight values (but pads, scales): no big copy
    for t in proto.graph.initializer:
        if np.prod(t.dims) < 4096:
            light.append(t)
        else:
            stub = TensorProto(name=t.name, data_type=t.data_type)
            stub.dims.extend(t.dims)
            light.append(stub)
    bare = helper.make_model(
        helper.make_graph(proto.graph.node, "stats", proto.graph.input, proto.graph.output, light),
        opset_imports=proto.opset_import,
    )
    bare.ir_version = proto.ir_version
    for vi in list(bare.graph.input) + list(bare.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if dims and dims[0].dim_param:
            dims[0].Clear()
            dims[0].dim_value = 1
    inferred = shape_inference.infer_shapes(bare)
    for vi in (
        list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output)
    ):
        shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    flops = 0
    for node in proto.graph.node:
        if node.op_type == "Conv":
            w = shapes[node.input[1]]
            out = shapes.get(node.output[0], [])
            if len(out) == 4:  # weight (Cout, Cin/groups, kh, kw): MACs per output element
                flops += 2 * int(np.prod(out)) * w[1] * w[2] * w[3]
        elif node.op_type in ("Gemm", "MatMul"):
            a, b = shapes.get(node.input[0], []), shapes.get(node.input[1], [])
            if a and b:
                flops += 2 * int(np.prod(a)) * b[-1]
    return ModelStats(params=params, flops=flops)


def arcface_like(
    path: str | os.PathLike[str], base: str | os.PathLike[str], seed: int = 7
) -> ModelStats:
    """A 512-d recognizer with ArcFace w600k's interface ([N, 3, 112, 112] -> [N, 512])
    made from a real smaller one (``base``, e.g. MobileFaceNet's 128-d): its embedding times
    a fixed matrix with orthonormal rows. Distances between faces are those of ``base``
    exactly (the projection is an isometry), so identity tests and benches of the standard
    pipeline run on real identities without ArcFace's weights."""
    model = onnx.load(os.fspath(base))
    graph = model.graph
    out = graph.output[0]
    dim = out.type.tensor_type.shape.dim[-1].dim_value
    if dim <= 0 or dim > LATENT_DIM:
        raise ValueError(f"{base}: output {out.name} has {dim} values, need 1..{LATENT_DIM}")
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((LATENT_DIM, dim)))  # orthonormal columns
    projection = np.ascontiguousarray(q.T, dtype=np.float32)  # (dim, 512), rows orthonormal
    graph.initializer.append(numpy_helper.from_array(projection, "arcface_like_projection"))
    graph.node.append(
        helper.make_node("MatMul", [out.name, "arcface_like_projection"], ["embedding"])
    )
    batch = out.type.tensor_type.shape.dim[0]
    first: int | str = batch.dim_value if batch.dim_value > 0 else (batch.dim_param or "N")
    del graph.output[:]
    graph.output.append(_io("embedding", [first, LATENT_DIM], False))
    return _write(model, path)


def blind_recognizer(path: str | os.PathLike[str], seed: int = 11) -> ModelStats:
    """A recognizer with ArcFace w600k's interface ([N, 3, 112, 112] -> [N, 512]) that
    cannot tell faces apart, like a broken or random-weight file: its embedding is a fixed
    random vector plus a thousandth of one driven by the crop's mean, so the cosine of any
    two faces is above 0.999."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((1, LATENT_DIM)).astype(np.float32)
    drift = (1e-3 * rng.standard_normal((1, LATENT_DIM))).astype(np.float32)
    nodes = [  # opset 17: ReduceMean's axes are an attribute
        helper.make_node("ReduceMean", ["input"], ["mean"], axes=[1, 2, 3], keepdims=0),
        helper.make_node("Unsqueeze", ["mean", "one"], ["mean_col"]),
        helper.make_node("MatMul", ["mean_col", "drift"], ["moved"]),
        helper.make_node("Add", ["moved", "base"], ["embedding"]),
    ]
    graph = helper.make_graph(
        nodes,
        "blind_recognizer",
        [_io("input", ["N", 3, 112, 112], False)],
        [_io("embedding", ["N", LATENT_DIM], False)],
        [
            numpy_helper.from_array(np.array([1], np.int64), "one"),
            numpy_helper.from_array(drift, "drift"),
            numpy_helper.from_array(base, "base"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return _write(model, path)
