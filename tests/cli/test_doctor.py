"""ONNX Runtime provider handling, NVML readings and `livecam doctor` on this machine."""

from __future__ import annotations

import importlib.metadata as metadata
import logging
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from conftest import missing, other_hardware
from media import xvfb_display
from recording_backend import RecordingStore

from livecam.errors import ModelError
from livecam.models import store as store_module
from livecam.runtime.cuda import nvidia_driver_present
from livecam.runtime.providers import (
    CPU,
    CUDA,
    TENSORRT,
    create_session,
    probe_providers,
    provider_chain,
    short_name,
    tiny_model_bytes,
)
from livecam.telemetry.doctor import (
    DIRECTML_SWAP,
    ORT_DISTS,
    Check,
    check_display,
    check_onnxruntime,
    check_package,
    check_presets,
    check_window,
    format_checks,
    run_doctor,
)
from livecam.telemetry.doctor import _Package as Package
from livecam.telemetry.gpu import NvmlReader, gpu_snapshot


def _has_nvidia() -> bool:
    with NvmlReader() as r:
        return r.available


def test_provider_chain() -> None:
    every = [TENSORRT, CUDA, CPU]
    assert provider_chain("auto", every) == [CUDA, CPU]  # TensorRT only when asked for
    assert provider_chain("cuda", every) == [CUDA, CPU]
    assert provider_chain("tensorrt", every) == [TENSORRT, CUDA, CPU]
    assert provider_chain("cpu", every) == [CPU]
    assert provider_chain("cuda", [CPU]) == [CPU]  # plain onnxruntime build
    assert provider_chain("auto", ["DmlExecutionProvider", CPU]) == ["DmlExecutionProvider", CPU]
    trt = provider_chain("tensorrt", every, trt_cache_dir="/cache")[0]
    assert isinstance(trt, tuple) and trt[0] == TENSORRT
    assert trt[1]["trt_engine_cache_path"] == "/cache"
    with pytest.raises(ValueError, match="gpu"):
        provider_chain("gpu", every)  # type: ignore[arg-type]
    assert short_name(CUDA) == "cuda" and short_name("FooExecutionProvider") == "foo"


def test_probe_reports_cpu_working_and_gpu_providers_with_reasons() -> None:
    probes = {p.name: p for p in probe_providers()}
    assert set(probes) == set(ort.get_available_providers())
    assert probes[CPU].works and probes[CPU].detail
    if _has_nvidia():
        other_hardware("an NVIDIA GPU is present; the GPU probes are checked by bench/")
    for name in (CUDA, TENSORRT):
        if name in probes:  # listed as available by onnxruntime-gpu, but cannot work here
            assert probes[name].works is False
            assert len(probes[name].detail) > 10  # a reason, e.g. the missing CUDA library


def test_probe_of_an_unknown_provider_is_a_result_not_an_exception() -> None:
    (probe,) = probe_providers(["NoSuchExecutionProvider"])
    assert probe.works is False and "not in this ONNX Runtime build" in probe.detail


def test_create_session_runs_and_reports_the_provider(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="livecam.runtime.providers"):
        session, used = create_session(tiny_model_bytes(), "cpu")
    assert used == CPU == session.get_providers()[0]
    x = np.ones((1, 4), np.float32)
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], x + x)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_create_session_from_a_path(tmp_path: Path) -> None:
    path = tmp_path / "tiny.onnx"
    path.write_bytes(tiny_model_bytes())
    _, used = create_session(path, "cpu")
    assert used == CPU


def test_cpu_fallback_is_loud(caplog: pytest.LogCaptureFixture) -> None:
    if _has_nvidia():
        other_hardware("CUDA may really work on this machine")
    if CUDA not in ort.get_available_providers():
        missing("the CUDA provider of onnxruntime-gpu")
    with caplog.at_level(logging.WARNING, logger="livecam.runtime.providers"):
        session, used = create_session(tiny_model_bytes(), "cuda")
    assert used == CPU and session.get_providers() == [CPU]
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    text = warning.getMessage()
    assert "NOT CUDA" in text and "running on CPU" in text and "Fix:" in text


def test_auto_on_a_machine_without_an_nvidia_driver_is_the_cpu_quietly(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    """The GPU build of ONNX Runtime on a machine with no NVIDIA GPU (this one): ``auto``
    does not try CUDA, so nothing warns and ORT prints none of its own errors."""
    if nvidia_driver_present():
        other_hardware("an NVIDIA driver is installed here")
    assert CUDA in ort.get_available_providers(), "the project installs onnxruntime-gpu"
    with caplog.at_level(logging.WARNING):
        session, used = create_session(tiny_model_bytes(), "auto")
    assert used == CPU and session.get_providers() == [CPU]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "onnxruntime" not in capfd.readouterr().err
    assert provider_chain("auto") == [CPU] and provider_chain("cuda") == [CUDA, CPU]


def test_bad_model_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelError, match="bad.onnx"):
        create_session(bad, "cpu")


def test_gpu_snapshot_or_none_with_reason() -> None:
    reader = NvmlReader()
    try:
        if reader.available:
            snap = reader.snapshot()
            assert snap is not None and snap.vram_total_mb > 0
            assert 0 <= snap.vram_used_mb <= snap.vram_total_mb
            return
        assert reader.snapshot() is None
        assert reader.error
    finally:
        reader.close()
        reader.close()
    assert gpu_snapshot() is None


def test_package_check_flags_both_onnxruntime_builds() -> None:
    both = Package("ONNX Runtime", ("onnxruntime-gpu", "pyvirtualcam"), True)  # two present
    check = check_package(both)
    assert check.ok is False and "several" in check.detail and "uninstall" in check.fix
    missing = check_package(Package("x", ("no-such-dist-livecam",), True))
    assert missing.ok is False and missing.fix == "pip install no-such-dist-livecam"
    optional = check_package(Package("y", ("no-such-dist-livecam",), False, "extras"))
    assert optional.ok is None


def test_doctor_names_the_onnxruntime_of_this_venv_from_its_metadata() -> None:
    present = {dist.metadata["Name"].lower() for dist in metadata.distributions()}
    installed = {d: metadata.version(d) for d in ORT_DISTS if d in present}
    assert installed == {"onnxruntime-gpu": ort.__version__}  # this venv: the CUDA build
    check = check_onnxruntime(sys.platform, _has_nvidia(), installed, "x86_64")
    assert check.ok is True, check
    assert "should use onnxruntime-gpu>=1.27 (CUDA 13" in check.detail
    assert check.detail.endswith(f"installed: onnxruntime-gpu {ort.__version__}")
    # the same check is the doctor's package line
    doctor = check_package(Package("ONNX Runtime", tuple(installed), True))
    assert doctor == check


@pytest.mark.parametrize(
    ("where", "nvidia", "installed", "ok", "should", "fix"),
    [
        ("linux", True, {"onnxruntime-gpu": "1.31.1"}, True, "onnxruntime-gpu>=1.27", ""),
        ("linux", False, {"onnxruntime": "1.32.0"}, True, "onnxruntime-gpu>=1.27", ""),
        # a CUDA 12 build: no RTX 50 kernels
        (
            "linux",
            True,
            {"onnxruntime-gpu": "1.26.0"},
            False,
            "CUDA 13",
            'pip install -U "onnxruntime-gpu>=1.27"',
        ),
        ("win32", True, {"onnxruntime-gpu": "1.27.0"}, True, "onnxruntime-gpu>=1.27", ""),
        ("win32", False, {"onnxruntime-directml": "1.24.4"}, True, "onnxruntime-directml", ""),
        ("win32", False, {"onnxruntime-gpu": "1.31.1"}, False, "DirectML", DIRECTML_SWAP),
        (
            "win32",
            True,
            {"onnxruntime": "1.31.1"},
            False,
            "onnxruntime-gpu>=1.27",
            'pip uninstall -y onnxruntime && pip install "onnxruntime-gpu>=1.27"',
        ),
        ("darwin", False, {"onnxruntime": "1.28.0"}, True, "onnxruntime>=1.28 (CoreML", ""),
        (
            "darwin",
            False,
            {"onnxruntime": "1.27.2"},
            False,
            "onnxruntime>=1.28",
            'pip install -U "onnxruntime>=1.28"',
        ),
        ("darwin", False, {"onnxruntime": "1.23.2"}, True, "Intel Macs", ""),  # x86_64
        ("linux", True, {}, False, "onnxruntime-gpu>=1.27", 'pip install "onnxruntime-gpu>=1.27"'),
        (
            "linux",
            True,
            {"onnxruntime-gpu": "1.31.1", "onnxruntime": "1.31.1"},
            False,
            "onnxruntime-gpu>=1.27",
            'pip uninstall -y onnxruntime-gpu onnxruntime && pip install "onnxruntime-gpu>=1.27"',
        ),
    ],
)
def test_doctor_names_the_onnxruntime_package_each_machine_should_have(
    where: str, nvidia: bool, installed: dict[str, str], ok: bool, should: str, fix: str
) -> None:
    intel_mac = "Intel Macs" in should
    machine = "x86_64" if where != "darwin" or intel_mac else "arm64"
    check = check_onnxruntime(where, nvidia, installed, machine)
    assert check.ok is ok, check
    assert f"this machine ({where}, " in check.detail and should in check.detail
    listed = ", ".join(f"{d} {v}" for d, v in installed.items())
    assert (listed or "not installed") in check.detail
    if len(installed) > 1:
        assert "several ONNX Runtime builds installed" in check.detail
    assert check.fix == fix


def test_doctor_on_this_machine() -> None:
    checks = run_doctor()
    by_name = {c.name: c for c in checks}
    assert by_name["Python"].ok is True
    assert by_name["package numpy"].ok is True and np.__version__ in by_name["package numpy"].detail
    assert by_name["ONNX Runtime cpu"].ok is True
    cam = by_name["virtual camera"]
    if cam.ok:
        other_hardware("a real virtual camera works here")
    if sys.platform == "linux":
        assert "'v4l2loopback' backend" in cam.detail
        assert "sudo modprobe v4l2loopback devices=1 video_nr=10 exact_nr=1" in cam.fix
    for c in checks:
        assert c.ok is True or c.detail  # every problem says what it is
        if c.ok is False:
            assert c.fix, c.name
    assert {"GPU", "cameras", "display"} <= set(by_name)
    if sys.platform == "linux" and not list(Path("/dev").glob("video*")):
        assert by_name["cameras"].ok is False
    text = format_checks(checks)
    assert "✘ virtual camera" in text and "    fix: " in text


def test_doctor_virtual_camera_ok_with_backend(vcam: RecordingStore) -> None:
    checks = run_doctor(virtualcam_backend=vcam.name)
    (cam,) = [c for c in checks if c.name == "virtual camera"]
    assert cam.ok is True and vcam.device in cam.detail


def test_format_checks() -> None:
    checks = [
        Check("a", True, "fine", "ignored"),
        Check("b", False, "broken\nsecond line", "do this"),
        Check("c", None, "absent", "maybe that"),
    ]
    assert format_checks(checks).splitlines() == [
        "✔ a: fine",
        "✘ b: broken",
        "    second line",
        "    fix: do this",
        "– c: absent",
        "    fix: maybe that",
    ]
    assert format_checks(checks, ascii_only=True).splitlines()[1] == "x b: broken"


def test_display_check_without_and_with_xvfb(monkeypatch: pytest.MonkeyPatch) -> None:
    if sys.platform != "linux":
        missing("Linux (display detection by environment is Linux-only)")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    absent = check_display()
    assert absent.ok is None and "DISPLAY" in absent.detail and "xvfb-run" in absent.fix
    with xvfb_display() as display:
        if display is None:
            missing("Xvfb is not installed (apt-get install xvfb)")
        monkeypatch.setenv("DISPLAY", display)
        present = check_display()
    assert (
        present.ok is True
        and display in present.detail
        and "screen capture works" in present.detail
    )


def test_opencv_check_wants_the_headless_build() -> None:
    """opencv-python bundles Qt 5 and breaks the PySide6 window; headless is the right one.
    Other installed distributions stand in for the builds that are not installed here."""
    ok = check_package(Package("OpenCV", ("opencv-python-headless",), True))
    assert ok.ok is True and "opencv-python-headless" in ok.detail
    gui = check_package(Package("OpenCV", ("pyvirtualcam",), True))
    assert gui.ok is False and "PySide6 preview window" in gui.detail
    assert gui.fix == "pip uninstall -y pyvirtualcam && pip install opencv-python-headless"
    several = check_package(Package("OpenCV", ("opencv-python-headless", "mss"), True))
    assert several.ok is False and "several OpenCV builds" in several.detail


def test_window_check_without_and_with_a_display(
    monkeypatch: pytest.MonkeyPatch, xvfb: str
) -> None:
    if sys.platform != "linux":
        missing("Linux (display detection by environment is Linux-only)")
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("DISPLAY", raising=False)
    absent = check_window()
    assert absent.ok is None and "DISPLAY" in absent.detail and "xvfb-run" in absent.fix
    monkeypatch.setenv("DISPLAY", ":4711")
    dead = check_window()
    assert dead.ok is False and "no X server answers on DISPLAY=:4711" in dead.detail
    monkeypatch.setenv("DISPLAY", xvfb)
    assert check_window().ok is True


def test_presets_say_which_are_ready_and_how_to_get_the_others(
    testdata: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVECAM_MODELS_DIR", str(testdata / "models"))
    checks = {c.name: c for c in check_presets()}
    assert checks["preset lite"].ok is True  # bundled; "offline" is another name for it
    assert checks["preset lite"].detail == "ready (3 bundled model files, nothing to download)"
    standard = checks["preset standard"]
    assert standard.ok is None  # optional: nothing is broken
    assert "inswapper_128_fp16.onnx" in standard.detail and "det_10g.onnx" in standard.detail
    assert str(testdata / "models") in standard.detail  # where it looked
    assert standard.fix.startswith("livecam models fetch standard")


def test_a_broken_install_without_the_bundled_models_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the installed package's assets folder lost its model files
    monkeypatch.setattr(store_module, "_bundled_dir", lambda: tmp_path)
    lite = {c.name: c for c in check_presets()}["preset lite"]
    assert lite.ok is False and "reinstall" in lite.fix
    for file in ("face_detection_yunet_2023mar.onnx", "slim_160_latest.onnx", "mobilefacenet.onnx"):
        assert file in lite.detail
