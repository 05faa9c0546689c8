"""OnnxModel on this machine's real onnxruntime-gpu (which lacks the CUDA libraries, so a
CUDA request really falls back), real testdata models, IO binding against plain runs."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
import torch
from conftest import missing, other_hardware

from livecam.benchmark.synthetic_models import inswapper_like
from livecam.errors import ConfigError
from livecam.runtime.cuda import nvidia_driver_present
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions
from livecam.runtime.providers import (
    COREML,
    CPU,
    CUDA,
    DIRECTML,
    PREFERENCES,
    TENSORRT,
    open_session,
    provider_chain,
    wanted_provider,
)
from livecam.runtime.tensorrt import EngineKey, engine_cache_dir
from livecam.telemetry.gpu import NvmlReader


def require_cuda_that_cannot_work() -> None:
    """Only onnxruntime-gpu on a machine without an NVIDIA GPU (CI's) can show the fallback."""
    if CUDA not in ort.get_available_providers():
        missing("the CUDA provider of onnxruntime-gpu")
    with NvmlReader() as reader:
        if reader.available:
            other_hardware("an NVIDIA GPU is here: CUDA may really work")


@pytest.fixture(scope="module")
def face_input() -> np.ndarray:
    return np.random.default_rng(1).uniform(-1, 1, (1, 3, 112, 112)).astype(np.float32)


def test_every_preference_has_an_explicit_chain() -> None:
    every = [TENSORRT, CUDA, DIRECTML, COREML, CPU]
    assert PREFERENCES == ("auto", "tensorrt", "cuda", "directml", "coreml", "cpu")
    assert provider_chain("directml", every) == [DIRECTML, CPU]
    assert provider_chain("coreml", every) == [COREML, CPU]
    assert provider_chain("auto", [COREML, CPU]) == [COREML, CPU]
    assert wanted_provider("auto", every) == CUDA  # TensorRT only when asked for
    assert wanted_provider("auto", [DIRECTML, CPU]) == DIRECTML
    assert wanted_provider("auto", [CPU]) == CPU
    assert wanted_provider("tensorrt", [CPU]) == TENSORRT


def test_cuda_request_is_a_fallback_with_its_cause(
    testdata: Path, caplog: pytest.LogCaptureFixture
) -> None:
    require_cuda_that_cannot_work()
    with caplog.at_level(logging.WARNING, logger="livecam.runtime.providers"):
        model = OnnxModel(testdata / "models/mobilefacenet.onnx", RuntimeOptions(provider="cuda"))
    assert model.providers.requested == ("cuda",) and model.providers.used == ("cpu",)
    assert model.fallback_reason is not None
    assert "libcu" in model.fallback_reason  # the CUDA library that failed to load
    assert model.fallback_fix is not None and "onnxruntime-gpu" in model.fallback_fix
    assert model.session.get_providers() == [CPU]
    assert model.device == "cpu"
    assert any(model.fallback_reason in r.getMessage() for r in caplog.records)


def test_a_cuda_graph_request_falls_back_once_and_says_so_once(
    testdata: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # ORT refuses a CUDA graph for some models: the first try is quiet, the retry without
    # the graph is the one that warns; here CUDA itself cannot load, so one warning
    require_cuda_that_cannot_work()
    options = RuntimeOptions(provider="cuda", cuda_graph=True)
    with caplog.at_level(logging.WARNING, logger="livecam"):
        quiet = open_session(testdata / "models/mobilefacenet.onnx", "cuda", announce=False)
        assert quiet.used == CPU and quiet.fallback_reason is not None
        assert caplog.records == []
        model = OnnxModel(testdata / "models/mobilefacenet.onnx", options)
    assert model.providers.used == ("cpu",) and not model.cuda_graph
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "NOT CUDA" in warnings[0], warnings


def test_auto_requests_the_concrete_accelerator(testdata: Path) -> None:
    model = OnnxModel(testdata / "models/mobilefacenet.onnx", RuntimeOptions(provider="auto"))
    has_cuda = CUDA in ort.get_available_providers() and nvidia_driver_present()
    want = "cuda" if has_cuda else "cpu"  # CPU-only machines: no CUDA attempt at all
    assert model.providers.requested == (want,)  # never "auto"


def test_cpu_request_is_not_a_fallback(testdata: Path) -> None:
    model = OnnxModel(testdata / "models/mobilefacenet.onnx", RuntimeOptions(provider="cpu"))
    assert model.providers.requested == model.providers.used == ("cpu",)
    assert model.fallback_reason is None and model.fallback_fix is None
    assert model.session.get_provider_options() == {CPU: {}}


def test_provider_options_handed_to_ort(testdata: Path, tmp_path: Path) -> None:
    options = RuntimeOptions(
        provider="tensorrt",
        cache_dir=tmp_path,
        device_id=0,
        cudnn_conv_algo_search="HEURISTIC",
        tensorrt_fp16=False,
        provider_options={"cuda": {"arena_extend_strategy": "kSameAsRequested"}},
    )
    model = OnnxModel(testdata / "models/mobilefacenet.onnx", options)
    chain = dict(s if isinstance(s, tuple) else (s, {}) for s in model.provider_chain)
    if TENSORRT in ort.get_available_providers():
        trt = chain[TENSORRT]
        # one engine folder per model, GPU, ORT version and precision; timing cache per GPU
        key = EngineKey.for_model(testdata / "models/mobilefacenet.onnx", 0, fp16=False)
        engines = engine_cache_dir(tmp_path / "tensorrt", key)
        assert trt["trt_engine_cache_path"] == str(engines)
        assert trt["trt_timing_cache_path"] == str(engines.parent)
        assert engines.parent.parent == tmp_path / "tensorrt" and engines.name.endswith("-fp32")
        assert trt["trt_engine_cache_enable"] == "True" and trt["trt_fp16_enable"] == "False"
        assert engines.is_dir()
    if CUDA in ort.get_available_providers():
        assert chain[CUDA] == {
            "device_id": "0",
            "cudnn_conv_algo_search": "HEURISTIC",
            "enable_cuda_graph": "0",  # a CUDA graph is never on unless asked for
            "arena_extend_strategy": "kSameAsRequested",
        }
    # what ORT really runs with: whatever provider it ended on, with its own options
    used = model.session.get_providers()[0]
    assert set(model.session.get_provider_options()) == set(model.session.get_providers())
    assert used in chain


def test_thread_counts_and_graph_level_reach_the_session_options() -> None:
    opts = RuntimeOptions(threads=2, inter_threads=1, graph_optimization="basic")
    so = opts.session_options()
    assert so.intra_op_num_threads == 2 and so.inter_op_num_threads == 1
    assert so.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC


def test_spin_waiting_is_off_unless_asked_for() -> None:
    spin = "session.intra_op.allow_spinning"
    assert RuntimeOptions().session_options().get_session_config_entry(spin) == "0"
    on = RuntimeOptions(spin_wait=True).session_options()
    assert on.get_session_config_entry(spin) == "1"


def test_bad_runtime_options_name_the_field() -> None:
    with pytest.raises(ConfigError, match="runtime.threads"):
        RuntimeOptions(threads=-1)
    with pytest.raises(ConfigError, match="cudnn_conv_algo_search"):
        RuntimeOptions(cudnn_conv_algo_search="FAST")  # type: ignore[arg-type]


def test_bound_run_equals_plain_run_on_cpu(testdata: Path, face_input: np.ndarray) -> None:
    model = OnnxModel(testdata / "models/mobilefacenet.onnx", RuntimeOptions(provider="cpu"))
    (plain,) = model.session.run(None, {"input": face_input})
    (bound,) = model.run_bound({"input": face_input})
    np.testing.assert_array_equal(bound, plain)
    (value,) = model.run_bound({"input": face_input}, keep_on_device=True)
    assert isinstance(value, ort.OrtValue) and value.device_name() == "cpu"
    np.testing.assert_array_equal(value.numpy(), plain)
    # an OrtValue input is bound as it is
    feed = ort.OrtValue.ortvalue_from_numpy(face_input)
    np.testing.assert_array_equal(model.run_bound({"input": feed})[0], plain)


def test_torch_tensors_in_and_out(testdata: Path, face_input: np.ndarray) -> None:
    model = OnnxModel(testdata / "models/mobilefacenet.onnx", RuntimeOptions(provider="cpu"))
    (plain,) = model.run({"input": face_input})
    # a float64, non-contiguous tensor is cast and made contiguous before binding
    wide = torch.from_numpy(face_input.astype(np.float64)).permute(0, 1, 3, 2).transpose(2, 3)
    (out,) = model.run_torch({"input": wide})
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert out.shape == (1, 128)
    np.testing.assert_allclose(out.numpy(), plain, rtol=0, atol=1e-6)


def test_an_fp16_model_gets_float16_inputs_from_every_kind_of_feed(tmp_path: Path) -> None:
    # on CUDA a torch feed is bound by pointer: it must already be float16 and contiguous
    path = tmp_path / "swapper_fp16.onnx"
    inswapper_like(path, 16, fp16=True)
    model = OnnxModel(path, RuntimeOptions(provider="cpu"))
    assert [s.dtype for s in model.inputs] == [np.float16, np.float16]
    rng = np.random.default_rng(4)
    latent = rng.standard_normal((2, 512)).astype(np.float32)
    feeds = {
        "target": rng.random((2, 3, 128, 128)).astype(np.float32),
        "source": latent / np.linalg.norm(latent, axis=1, keepdims=True),
    }
    (from_numpy,) = model.run(feeds)
    (from_plain,) = model.session.run(None, {k: v.astype(np.float16) for k, v in feeds.items()})
    wide = {k: torch.from_numpy(v.astype(np.float64)) for k, v in feeds.items()}
    wide["target"] = wide["target"].permute(0, 1, 3, 2).transpose(2, 3)  # not contiguous
    (from_torch,) = model.run_torch(wide)
    assert from_numpy.dtype == np.float16 and from_torch.dtype == torch.float16
    np.testing.assert_array_equal(from_numpy, from_plain)
    np.testing.assert_array_equal(from_torch.numpy(), from_plain)
    assert float(np.std(from_plain.astype(np.float32))) > 1e-3  # a real image


class RecordingModel(OnnxModel):
    """The real model, with the feeds of every ``run`` kept (to see the warm-up's runs)."""

    def __init__(self, path: Path, options: RuntimeOptions) -> None:
        self.feeds: list[dict[str, np.ndarray]] = []
        super().__init__(path, options)

    def run(self, feeds: Mapping[str, Any]) -> list[Any]:
        self.feeds.append({k: np.asarray(v) for k, v in feeds.items()})
        return super().run(feeds)


@pytest.mark.parametrize("runs", [0, 2])
def test_warmup_runs_and_close(testdata: Path, runs: int) -> None:
    """``warmup`` runs the session ``warmup_runs`` times on zeros of the declared input
    shapes; ``close`` drops the session."""
    model = RecordingModel(
        testdata / "models/landmarks_68_pfld.onnx",
        RuntimeOptions(provider="cpu", warmup_runs=runs),
    )
    assert model.feeds == []
    model.warmup()
    assert len(model.feeds) == runs
    (spec,) = model.inputs
    for feeds in model.feeds:
        (blob,) = feeds.values()
        assert blob.shape == tuple(spec.shape) and not blob.any()
    model.close()
    assert model.session is None


def test_cuda_graph_is_off_on_a_cpu_session(testdata: Path) -> None:
    model = OnnxModel(
        testdata / "models/mobilefacenet.onnx", RuntimeOptions(provider="cpu", cuda_graph=True)
    )
    assert model.cuda_graph is False  # only on a CUDA session with fixed shapes


def test_dynamic_batch_model_runs_a_batch_in_one_call(
    testdata: Path, tmp_path: Path, face_input: np.ndarray
) -> None:
    path = testdata / "models/mobilefacenet.onnx"
    fixed = OnnxModel(path, RuntimeOptions(provider="cpu"))
    dynamic = OnnxModel(
        path, RuntimeOptions(provider="cpu", cache_dir=tmp_path), dynamic_batch=True
    )
    assert fixed.fixed_batch == 1 and not fixed.batch_rewritten
    assert dynamic.batch_rewritten and dynamic.fixed_batch is None
    assert dynamic.loaded_path.parent == tmp_path / "onnx"
    assert dynamic.model_id == fixed.model_id == "mobilefacenet"
    batch = np.random.default_rng(2).uniform(-1, 1, (5, 3, 112, 112)).astype(np.float32)
    (looped,) = fixed.run_batch({"input": batch}, ["input"])
    (one_call,) = dynamic.run_batch({"input": batch}, ["input"])
    assert one_call.shape == (5, 128)
    np.testing.assert_allclose(one_call, looped, rtol=0, atol=1e-4 * np.abs(looped).max())
