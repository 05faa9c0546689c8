"""CUDA plumbing on CPU: stage streams and pinned buffers fall back to no-ops, the user
stream reaches only CUDA/TensorRT provider options, TensorRT engine caches are keyed by
model, GPU, ORT version and precision, and the device check plans within its budget.
The GPU side of all this is measured by bench/gpu_check.sh on a device machine."""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import logging
import sys
import threading
from pathlib import Path
from types import ModuleType

import cv2
import numpy as np
import onnxruntime as ort
import pytest
import torch
from conftest import missing, other_hardware
from face_parts_data import load_face_image, yunet_faces
from waiting import poll

from livecam.benchmark.synthetic_models import inswapper_like
from livecam.face.crops import align
from livecam.runtime import torch_ops as device
from livecam.runtime.cuda import (
    PinnedBuffers,
    StageStream,
    cuda_available,
    current_stream_event,
    synchronize_event,
)
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions
from livecam.runtime.providers import (
    CUDA,
    TENSORRT,
    cuda_options,
    load_cuda_libraries,
    tensorrt_options,
)
from livecam.runtime.tensorrt import EngineKey, announce_build, build_progress, engine_cache_dir

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gpu_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "bench/gpu_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses resolve their module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def narrow_swapper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("models") / "inswapper_w16.onnx"
    inswapper_like(path, 16)
    return path


def test_a_stage_stream_off_cuda_is_inert_and_lets_errors_through() -> None:
    for stream in (StageStream("cpu"), StageStream("cuda:0", enabled=False)):
        assert not stream.active and stream.handle is None and stream.stream is None
        assert stream.record() is None
        stream.wait(None)
        stream.wait_current()
        stream.synchronize()
        with pytest.raises(ValueError, match="inside"), stream as entered:
            assert entered is stream
            raise ValueError("inside")
    synchronize_event(None)  # no event: nothing to wait for


def test_without_cuda_every_stream_and_event_is_a_no_op() -> None:
    if cuda_available():
        other_hardware("CUDA is here: streams are real (bench/gpu_check.sh measures them)")
    stream = StageStream("cuda:0")
    assert not stream.active and stream.handle is None
    assert current_stream_event("cuda:0") is None
    assert not PinnedBuffers().pinned


def test_pinned_buffers_reuse_one_buffer_per_shape_and_round_trip_a_frame(
    testdata: Path,
) -> None:
    frame = cv2.imread(str(next((testdata / "faces").glob("*.jpg"))))
    assert frame is not None
    buffers = PinnedBuffers(enabled=False)
    first = buffers.get(frame.shape, np.uint8)
    assert buffers.get(frame.shape, np.uint8) is first
    assert buffers.get(frame.shape, np.float32) is not first
    assert buffers.get((2, *frame.shape), np.uint8) is not first
    original = frame.copy()
    tensor = buffers.upload(frame, "cpu")
    assert tensor.dtype == torch.uint8 and np.array_equal(tensor.numpy(), frame)
    back = buffers.download(tensor)
    assert np.array_equal(back, frame)
    tensor.zero_()  # the download is the caller's copy
    assert np.array_equal(back, original)
    buffers.clear()
    assert buffers.get(frame.shape, np.uint8) is not first


def test_two_threads_never_share_a_host_buffer(testdata: Path) -> None:
    # overlap runs one model (the recognizer) on two threads: each uploads through its own
    # buffer, so one thread's frame never lands in the buffer the other is copying from
    frame = cv2.imread(str(next((testdata / "faces").glob("*.jpg"))))
    assert frame is not None
    buffers = PinnedBuffers(enabled=False)
    mine = buffers.get(frame.shape, np.uint8)
    mine.numpy()[...] = frame
    theirs: list[torch.Tensor] = []

    def other_thread() -> None:
        buffer = buffers.get(frame.shape, np.uint8)
        buffer.numpy()[...] = 255 - frame
        theirs.append(buffer)

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    assert theirs[0] is not mine and buffers.get(frame.shape, np.uint8) is mine
    assert np.array_equal(mine.numpy(), frame), "the other thread's write is not in mine"
    assert np.array_equal(theirs[0].numpy(), 255 - frame)
    buffers.clear()  # every thread's buffers
    assert buffers.get(frame.shape, np.uint8) is not mine


def test_warp_crops_take_affines_as_an_array_or_a_tensor_alike(testdata: Path) -> None:
    # the inverse affines and the crop regions are computed on the host (no device sync):
    # affines given as a tensor are read back once and give the same crops
    image = load_face_image(testdata, "obama_biden_two_people.jpg")
    affines = np.stack([align.align_affine(f.kps, "arcface_112", 112) for f in yunet_faces(image)])
    frames = device.frames_to_tensor([image])
    from_array = device.warp_crops(frames, affines, 112)
    from_tensor = device.warp_crops(frames, torch.from_numpy(affines), 112)
    assert from_array.shape == (2, 112, 112, 3)
    torch.testing.assert_close(from_tensor, from_array, rtol=0, atol=1e-3)
    for crop, affine in zip(from_array, affines, strict=True):
        reference = align.warp_crop(image, affine, 112).astype(np.float64)
        assert np.abs(crop.round().numpy() - reference).mean() < 0.5


def test_missing_cuda_libraries_are_named_without_printing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if CUDA not in ort.get_available_providers():
        missing("the CUDA provider of onnxruntime-gpu")
    error = load_cuda_libraries()
    if error is None:
        other_hardware("the CUDA provider library loads here")
    assert ".so" in error or ".dll" in error, error  # the library that is missing
    assert capsys.readouterr().out == ""


def test_the_user_stream_is_a_cuda_and_tensorrt_option_only_when_given(tmp_path: Path) -> None:
    assert "user_compute_stream" not in cuda_options()
    assert cuda_options(compute_stream=1234)["user_compute_stream"] == "1234"
    assert cuda_options(compute_stream=1234)["has_user_compute_stream"] == "1"
    trt = tensorrt_options(tmp_path, compute_stream=99)
    assert trt["user_compute_stream"] == "99" and trt["has_user_compute_stream"] == "1"
    assert "has_user_compute_stream" not in tensorrt_options(tmp_path)
    options = RuntimeOptions(cache_dir=tmp_path).provider_options_for(False, compute_stream=7)
    assert options["cuda"]["user_compute_stream"] == "7"
    assert "user_compute_stream" not in RuntimeOptions().provider_options_for(False)["cuda"]


def test_a_cpu_session_ignores_the_stream_and_a_cuda_request_hands_it_to_ort(
    narrow_swapper: Path, tmp_path: Path
) -> None:
    feeds = {
        "target": np.full((1, 3, 128, 128), 0.5, np.float32),
        "source": np.ones((1, 512), np.float32) / np.sqrt(512),
    }
    cpu = OnnxModel(narrow_swapper, RuntimeOptions(provider="cpu"), compute_stream=1234)
    assert cpu.compute_stream is None and not cpu.has_user_compute_stream
    assert all(isinstance(s, str) for s in cpu.provider_chain)  # the CPU provider: no options
    expected = cpu.run(feeds)[0]
    options = RuntimeOptions(provider="cuda", cache_dir=tmp_path)
    asked = OnnxModel(narrow_swapper, options, compute_stream=1234)
    chain = dict(s if isinstance(s, tuple) else (s, {}) for s in asked.provider_chain)
    if CUDA in ort.get_available_providers():
        assert chain[CUDA]["user_compute_stream"] == "1234"
    if asked.device == "cpu":  # fell back: no stream kept, same numbers
        assert asked.compute_stream is None
        assert not asked.stage_stream().active
        np.testing.assert_array_equal(asked.run(feeds)[0], expected)


def test_tensorrt_engine_folders_change_with_model_precision_ort_and_gpu(
    narrow_swapper: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other.onnx"
    inswapper_like(other, 16, seed=1)
    key = EngineKey.for_model(narrow_swapper, fp16=True)
    assert key.ort_version == ort.__version__ and len(key.model_sha256) == 64
    assert EngineKey.for_model(narrow_swapper, fp16=True) == key  # stable
    variants = [
        EngineKey.for_model(other, fp16=True),
        EngineKey.for_model(narrow_swapper, fp16=False),
        dataclasses.replace(key, ort_version="9.9.9"),
        dataclasses.replace(key, gpu_name="NVIDIA H200"),
        dataclasses.replace(key, compute_capability="8.6"),
    ]
    folders = {engine_cache_dir(tmp_path, k) for k in [key, *variants]}
    assert len(folders) == 6
    assert all(f.is_relative_to(tmp_path) for f in folders)


def test_trt_session_options_point_at_the_models_own_engine_folder(
    narrow_swapper: Path, tmp_path: Path
) -> None:
    options = RuntimeOptions(provider="tensorrt", cache_dir=tmp_path, tensorrt_fp16=True)
    model = OnnxModel(narrow_swapper, options)
    if TENSORRT not in ort.get_available_providers():
        missing("the TensorRT provider of onnxruntime-gpu")
    chain = dict(s if isinstance(s, tuple) else (s, {}) for s in model.provider_chain)
    key = EngineKey.for_model(narrow_swapper, fp16=True)
    engines = engine_cache_dir(tmp_path / "tensorrt", key)
    assert chain[TENSORRT]["trt_engine_cache_path"] == str(engines) and engines.is_dir()
    assert chain[TENSORRT]["trt_timing_cache_path"] == str(engines.parent)


def test_the_first_build_is_announced_and_a_cached_engine_is_not(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="livecam.runtime.tensorrt"):
        assert announce_build(tmp_path / "e", "inswapper.onnx")
    assert "building TensorRT engine for inswapper.onnx (minutes on first use" in caplog.text
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "TensorrtExecutionProvider_x.engine").write_bytes(b"engine")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="livecam.runtime.tensorrt"):
        assert not announce_build(tmp_path / "e", "inswapper.onnx")
    assert caplog.text == ""


def test_a_first_build_shows_its_elapsed_time_until_the_session_is_made(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shown = io.StringIO()
    with (
        caplog.at_level(logging.INFO, logger="livecam.runtime.tensorrt"),
        build_progress(tmp_path / "e", "inswapper.onnx", shown),
    ):
        # the session being made: the line is redrawn meanwhile
        assert poll(lambda: shown.getvalue().count("building TensorRT engine") >= 2, 30)
    text = shown.getvalue()
    assert "building TensorRT engine for inswapper.onnx: 00:0" in text
    assert text.count("building TensorRT engine") >= 2, "redrawn while building"
    assert "ready after" in caplog.text
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "TensorrtExecutionProvider_x.engine").write_bytes(b"engine")
    quiet = io.StringIO()
    with build_progress(tmp_path / "e", "inswapper.onnx", quiet):
        pass
    assert quiet.getvalue() == "", "a cached engine: nothing to show"


def test_the_device_check_plans_within_its_budget(gpu_check: ModuleType) -> None:
    cases = gpu_check.build_cases(["ort-cuda"], dry=False, has_bench=True)
    names = [c.name for c in cases]
    assert "trt/fp16/b4" in names and any(n.endswith("/stage") for n in names)
    assert {"swapper/ort-cuda/fp16/b1", "swapper/ort-cuda/fp32/b8"} <= set(names)
    assert any(n.startswith("naive/") for n in names)
    for budget in (30.0, 120.0, 420.0):
        planned, skipped = gpu_check.plan_matrix(cases, budget, reserve_s=15)
        assert sum(c.est_s for c in planned) <= budget - 15
        assert sorted(planned + skipped, key=lambda c: c.name) == sorted(
            cases, key=lambda c: c.name
        )
        assert [c.priority for c in planned] == sorted(c.priority for c in planned)
    few, _ = gpu_check.plan_matrix(cases, 60.0, reserve_s=15)
    assert few[0].name == "bench/cache-off/overlap-on"  # the live headline first
    no_bench = gpu_check.build_cases(["ort-cuda"], dry=False, has_bench=False)
    few, _ = gpu_check.plan_matrix(no_bench, 60.0, reserve_s=15)
    assert few[0].name == "frames/ort-cuda/fp16/1080p/f1/bl1/ort"  # then the device path
    everything, none = gpu_check.plan_matrix(cases, 1e6)
    assert len(everything) == len(cases) and none == []
    torch_only = gpu_check.build_cases(["torch"], dry=False, has_bench=False)
    assert {c.kind for c in torch_only} == {"swapper"}


def test_the_torch_fallback_runs_the_swapper_graph_as_onnx_runtime_does(
    gpu_check: ModuleType, narrow_swapper: Path
) -> None:
    rng = np.random.default_rng(3)
    latent = rng.standard_normal((2, 512)).astype(np.float32)
    feeds = {
        "target": rng.random((2, 3, 128, 128)).astype(np.float32),
        "source": latent / np.linalg.norm(latent, axis=1, keepdims=True),
    }
    expected = OnnxModel(narrow_swapper, RuntimeOptions(provider="cpu")).run(feeds)[0]
    graph = gpu_check.TorchGraph(narrow_swapper, "cpu")
    with torch.inference_mode():
        got = graph({k: torch.from_numpy(v) for k, v in feeds.items()})[0].numpy()
    assert got.shape == expected.shape == (2, 3, 128, 128)
    np.testing.assert_allclose(got, expected, atol=2e-4)
    assert float(np.std(expected)) > 1e-3  # a real image, not a constant
