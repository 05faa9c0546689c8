"""The synthetic swapper models: the real models' interface, the full-size inswapper's
size and cost, the oracles' exact behaviour, and the FLOP counter on a hand-sized graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from livecam.benchmark import synthetic_models as sm
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions

# inswapper_128.onnx is 554,253,681 bytes of float32 weights (MODEL_CONTRACTS)
REAL_INSWAPPER_PARAMS = 554_253_681 / 4
REAL_INSWAPPER_GFLOPS = 349.0


def _model(path: Path) -> OnnxModel:
    return OnnxModel(path, RuntimeOptions(provider="cpu"))


def _unit_rows(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, 512)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def narrow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("synth") / "inswapper_narrow.onnx"
    sm.inswapper_like(path, width=128)
    return path


def test_inswapper_like_has_the_real_interface_and_emap_last(narrow: Path) -> None:
    model = _model(narrow)
    assert [(s.name, s.shape, s.dtype) for s in model.inputs] == [
        ("target", ("N", 3, 128, 128), np.float32),
        ("source", ("N", 512), np.float32),
    ]
    assert [(s.name, s.shape) for s in model.outputs] == [("output", ("N", 3, 128, 128))]
    assert model.fixed_batch is None
    last = onnx.load(str(narrow)).graph.initializer[-1]
    assert last.name == "emap"
    np.testing.assert_array_equal(numpy_helper.to_array(last), sm.synthetic_emap())

    rng = np.random.default_rng(1)
    target = rng.random((3, 3, 128, 128), dtype=np.float32)
    out = model.run({"target": target, "source": _unit_rows(3, 2)})[0]
    assert out.shape == (3, 3, 128, 128)
    assert out.min() >= 0.0 and out.max() <= 1.0 and out.std() > 0.05  # not saturated, not flat
    other_source = model.run({"target": target, "source": _unit_rows(3, 3)})[0]
    assert np.abs(out - other_source).mean() > 0.01  # the latent steers the output


def test_full_width_matches_inswapper_128_size_and_cost() -> None:
    stats = sm.inswapper_stats()
    assert abs(stats.params - REAL_INSWAPPER_PARAMS) / REAL_INSWAPPER_PARAMS < 0.005
    assert abs(stats.gflops - REAL_INSWAPPER_GFLOPS) / REAL_INSWAPPER_GFLOPS < 0.01
    narrow = sm.inswapper_stats(128)
    assert narrow.params < stats.params / 30 and narrow.gflops < stats.gflops / 30


def test_written_file_counts_like_its_graph(narrow: Path) -> None:
    from_file = sm.model_stats(narrow)
    assert from_file == sm.inswapper_stats(128)
    model = onnx.load(str(narrow))
    assert from_file.params == sum(numpy_helper.to_array(t).size for t in model.graph.initializer)


def test_same_seed_writes_the_same_file(tmp_path: Path) -> None:
    sm.inswapper_like(tmp_path / "a.onnx", width=16, seed=7)
    sm.inswapper_like(tmp_path / "b.onnx", width=16, seed=7)
    sm.inswapper_like(tmp_path / "c.onnx", width=16, seed=8)
    a, b, c = ((tmp_path / f"{n}.onnx").read_bytes() for n in "abc")
    assert a == b and a != c


def test_fp16_variant_is_float16_throughout(narrow: Path, tmp_path: Path) -> None:
    path = tmp_path / "inswapper_narrow_fp16.onnx"
    sm.inswapper_like(path, width=128, fp16=True)
    model = _model(path)
    assert {s.dtype for s in model.inputs + model.outputs} == {np.float16}
    weights = [t for t in onnx.load(str(path)).graph.initializer if np.prod(t.dims) > 64]
    assert weights and all(t.data_type == TensorProto.FLOAT16 for t in weights)
    assert path.stat().st_size < 0.55 * narrow.stat().st_size
    out = model.run({"target": np.full((1, 3, 128, 128), 0.5), "source": _unit_rows(1, 0)})[0]
    assert out.dtype == np.float16 and out.shape == (1, 3, 128, 128)


def test_hyperswap_like_has_hyperswaps_interface(tmp_path: Path) -> None:
    path = tmp_path / "hyperswap_like.onnx"
    sm.hyperswap_like(path)
    model = _model(path)
    assert {(s.name, s.shape) for s in model.inputs} == {
        ("source", ("N", 512)),
        ("target", ("N", 3, 256, 256)),
    }
    assert [(s.name, s.shape) for s in model.outputs] == [
        ("output", ("N", 3, 256, 256)),
        ("mask", ("N", 1, 256, 256)),
    ]
    assert onnx.load(str(path)).graph.initializer[-1].name != "emap"
    target = np.random.default_rng(0).uniform(-1, 1, (2, 3, 256, 256)).astype(np.float32)
    out, mask = model.run({"target": target, "source": _unit_rows(2, 0)})
    assert -1.0 <= out.min() < -0.05 and 0.05 < out.max() <= 1.0  # signed output
    assert mask.min() >= 0.0 and mask.max() <= 1.0


@pytest.mark.parametrize(
    ("kind", "size", "lo"), [("inswapper", 128, 0.0), ("hyperswap", 256, -1.0)]
)
def test_identity_oracle_returns_its_target(tmp_path: Path, kind: sm.Kind, size: int, lo: float):
    path = tmp_path / "identity.onnx"
    sm.identity_swapper(path, size=size, kind=kind)
    assert onnx.load(str(path)).graph.initializer[-1].name == "emap"
    target = np.random.default_rng(0).uniform(lo, 1.0, (3, 3, size, size)).astype(np.float32)
    out = _model(path).run({"target": target, "source": _unit_rows(3, 0)})[0]
    np.testing.assert_array_equal(out, target)


@pytest.mark.parametrize(("kind", "offset", "scale"), [("inswapper", 0, 1), ("hyperswap", -1, 2)])
def test_latent_colour_oracle_matches_its_reference(
    tmp_path: Path, kind: sm.Kind, offset: float, scale: float
) -> None:
    path = tmp_path / "colour.onnx"
    sm.latent_colour_swapper(path, kind=kind)
    latents = _unit_rows(4, 5)
    target = np.random.default_rng(0).random((4, 3, 128, 128), dtype=np.float32)
    out = _model(path).run({"target": target, "source": latents})[0]
    expected = sm.latent_colour(latents) * scale + offset
    np.testing.assert_allclose(
        out, np.broadcast_to(expected[:, :, None, None], out.shape), atol=1e-5
    )
    colours = sm.latent_colour(latents)
    gaps = np.abs(colours[:, None] - colours[None]).max(axis=2)[np.triu_indices(4, 1)]
    assert gaps.min() > 0.02  # different latents give visibly different colours (> 5 levels)


def test_model_stats_counts_a_hand_sized_graph() -> None:
    """Conv 3->4 (3x3, pad 1) on 8x8 then Gemm 256->10: parameters and FLOPs by hand."""
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    g = numpy_helper.from_array(np.ones((256, 10), np.float32), "g")
    shape = numpy_helper.from_array(np.array([-1, 256], np.int64), "shape")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
        helper.make_node("Reshape", ["y", "shape"], ["flat"]),
        helper.make_node("Gemm", ["flat", "g"], ["z"]),
    ]
    graph = helper.make_graph(
        nodes,
        "hand",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 10])],
        [w, g, shape],
    )
    stats = sm.model_stats(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert stats.params == 4 * 3 * 9 + 256 * 10 + 2
    assert stats.flops == 2 * (4 * 8 * 8) * (3 * 9) + 2 * 256 * 10


def test_width_must_be_a_multiple_of_eight(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="multiple of 8"):
        sm.inswapper_like(tmp_path / "x.onnx", width=12)
