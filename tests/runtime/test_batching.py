"""Rewriting fixed-batch-1 ONNX models to a dynamic batch axis: real testdata models and
small graphs built here with the traps a rewrite must catch."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from livecam.runtime.batch_rewrite import TOLERANCE, make_dynamic_batch, rewrite_batch_axis

CPU = ["CPUExecutionProvider"]


def _save(tmp_path: Path, name: str, nodes: list, inits: list, out_shape: list[int]) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)
    graph = helper.make_graph(nodes, name, [x], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("name", ["mobilefacenet", "landmarks_68_pfld"])
def test_real_fixed_batch_models_are_rewritten_and_verified(
    testdata: Path, tmp_path: Path, name: str
) -> None:
    source = testdata / f"models/{name}.onnx"
    # both hard-code batch 1 in Reshape [1, -1] before their last layer
    rewrite = rewrite_batch_axis(onnx.load(source))
    assert rewrite.model is not None and "[1, -1]" in rewrite.detail
    path = make_dynamic_batch(source, tmp_path)
    assert path is not None and path.parent == tmp_path
    single = ort.InferenceSession(str(source), providers=CPU)
    batched = ort.InferenceSession(str(path), providers=CPU)
    assert batched.get_inputs()[0].shape[0] == "N"
    x = np.random.default_rng(3).uniform(0, 1, (4, 3, 112, 112)).astype(np.float32)
    (together,) = batched.run(None, {"input": x})
    apart = np.concatenate([single.run(None, {"input": x[i : i + 1]})[0] for i in range(4)])
    assert together.shape == apart.shape and together.shape[0] == 4
    assert np.abs(together - apart).max() <= TOLERANCE * max(1.0, np.abs(apart).max())
    # cached: the second call returns the same file without rewriting it
    mtime = path.stat().st_mtime_ns
    assert make_dynamic_batch(source, tmp_path) == path and path.stat().st_mtime_ns == mtime


def test_strict_mode_refuses_a_hard_coded_batch_reshape(
    testdata: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = testdata / "models/mobilefacenet.onnx"
    with caplog.at_level(logging.WARNING, logger="livecam.runtime.batch_rewrite"):
        assert make_dynamic_batch(source, tmp_path, fix_reshape=False) is None
    (record,) = caplog.records
    assert "hard-codes shape [1, -1]" in record.getMessage()
    assert "mobilefacenet.onnx" in record.getMessage()
    # the refusal is remembered with its reason
    (marker,) = tmp_path.glob("*.refused.txt")
    assert "Reshape" in marker.read_text()


def test_dynamic_model_is_used_as_it_is(testdata: Path, tmp_path: Path) -> None:
    source = testdata / "models/yunet_s_dynamic.onnx"
    assert make_dynamic_batch(source, tmp_path) == source
    assert not list(tmp_path.iterdir())


def test_reshape_with_a_batch_other_than_one_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # x [1, 4] -> Reshape [4, 1] -> Reshape [1, 4]: the 4 holds batch times features
    inits = [
        numpy_helper.from_array(np.array([4, 1], np.int64), "column"),
        numpy_helper.from_array(np.array([1, 4], np.int64), "row"),
    ]
    nodes = [
        helper.make_node("Reshape", ["x", "column"], ["c"], name="to_column"),
        helper.make_node("Reshape", ["c", "row"], ["y"]),
    ]
    path = _save(tmp_path, "mix", nodes, inits, [1, 4])
    with caplog.at_level(logging.WARNING, logger="livecam.runtime.batch_rewrite"):
        assert make_dynamic_batch(path, tmp_path / "cache") is None
    assert "Reshape to_column hard-codes shape [4, 1]" in caplog.text


def test_rewrite_that_mixes_the_batch_fails_verification(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # y = x - mean over axis 0: at batch 1 that is zero; at batch 3 items see each other,
    # which no static check sees, so only the batched-vs-looped run can refuse it
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[0], keepdims=1),
        helper.make_node("Sub", ["x", "m"], ["y"]),
    ]
    path = _save(tmp_path, "mixes", nodes, [], [1, 4])
    with caplog.at_level(logging.WARNING, logger="livecam.runtime.batch_rewrite"):
        assert make_dynamic_batch(path, tmp_path / "cache") is None
    assert "differs from single runs" in caplog.text
