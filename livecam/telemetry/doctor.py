"""What this machine can do (`livecam doctor`, and the panel's virtual-camera check): one
Check per part, with a fix for every problem."""

from __future__ import annotations

import dataclasses
import importlib.metadata as metadata
import logging
import platform
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Check:
    """One doctor finding. ``ok``: True works, False broken, None optional/not applicable."""

    name: str
    ok: bool | None
    detail: str
    fix: str = ""


#: the ONNX Runtime packages (all provide the ``onnxruntime`` module: one at a time)
ORT_DISTS = ("onnxruntime-gpu", "onnxruntime", "onnxruntime-directml")


@dataclass(frozen=True)
class _Package:
    label: str
    dists: tuple[str, ...]  # distribution names that provide it
    required: bool
    why: str = ""


PACKAGES = (
    _Package("numpy", ("numpy",), True),
    _Package(
        "OpenCV",
        (
            "opencv-python-headless",
            "opencv-contrib-python-headless",
            "opencv-python",
            "opencv-contrib-python",
        ),
        True,
    ),
    _Package("ONNX Runtime", ORT_DISTS, True),
    _Package("onnx", ("onnx",), True, "builds the provider test model"),
    _Package("pyvirtualcam", ("pyvirtualcam",), True),
    _Package("mss", ("mss",), True),
    _Package("PySide6", ("PySide6", "PySide6-Essentials"), True),
    _Package("nvidia-ml-py", ("nvidia-ml-py",), False, "GPU/VRAM readings"),
    _Package("torch", ("torch",), False, "GPU warps and blending"),
)


def _versions(dists: tuple[str, ...]) -> dict[str, str]:
    found = {}
    for d in dists:
        try:
            found[d] = metadata.version(d)
        except metadata.PackageNotFoundError:
            continue
    return found


def check_python() -> Check:
    v = sys.version_info
    text = f"{platform.python_version()} ({platform.python_implementation()}, {sys.platform})"
    if v >= (3, 11):
        return Check("Python", True, text)
    return Check("Python", False, text, "install Python 3.11 or newer")


def check_package(pkg: _Package) -> Check:
    found = _versions(pkg.dists)
    name = f"package {pkg.label}"
    listed = ", ".join(f"{d} {v}" for d, v in found.items())
    if not found:
        why = f" ({pkg.why})" if pkg.why else ""
        if pkg.required:
            return Check(name, False, "not installed" + why, f"pip install {pkg.dists[0]}")
        return Check(name, None, "not installed (optional" + (f": {pkg.why})" if pkg.why else ")"))
    if pkg.label == "ONNX Runtime":
        return check_onnxruntime(sys.platform, _has_nvidia(), found, platform.machine())
    if pkg.label == "OpenCV":
        reinstall = "pip uninstall -y " + " ".join(found) + " && pip install opencv-python-headless"
        if len(found) > 1:
            return Check(
                name,
                False,
                f"several OpenCV builds installed ({listed}); they overwrite each other",
                reinstall,
            )
        if "headless" not in next(iter(found)):
            return Check(
                name,
                False,
                f"{listed} bundles Qt 5 and points Qt at its plugins, which breaks LiveCam's "
                "PySide6 preview window",
                reinstall,
            )
    return Check(name, True, listed)


@dataclass(frozen=True)
class OrtChoice:
    """The ONNX Runtime package a machine should have: ``dist`` at least ``minimum``
    (``why``: what that version brings), and the other packages that serve it as well."""

    dist: str
    minimum: str
    why: str
    also: tuple[str, ...] = ()

    @property
    def requirement(self) -> str:
        return f"{self.dist}>={self.minimum}"


#: CUDA 13 builds from onnxruntime-gpu 1.27 (1.26 and older on PyPI are CUDA 12, without
#: RTX 50 / sm_120 kernels); CoreML compiles inswapper and GFPGAN to one partition from
#: onnxruntime 1.28 (Deep-Live-Cam PR #1894; Apple silicon only: PyPI's last Intel-Mac
#: wheel is 1.23.2). pyproject.toml's markers say the same
#: (tests/test_packaging.py checks both agree).
ORT_CUDA = OrtChoice("onnxruntime-gpu", "1.27", "CUDA 13")
ORT_MACOS = OrtChoice("onnxruntime", "1.28", "CoreML: inswapper and GFPGAN in one partition")
ORT_DIRECTML = OrtChoice("onnxruntime-directml", "1.18", "DirectML: any DirectX 12 GPU")
ORT_CPU = OrtChoice("onnxruntime", "1.18", "CPU")
ORT_INTEL_MAC = OrtChoice("onnxruntime", "1.18", "Intel Macs have no wheel after 1.23")
#: the one-line swap on Windows without an NVIDIA GPU (the two packages share the
#: ``onnxruntime`` module, so they cannot be installed side by side)
DIRECTML_SWAP = "pip uninstall -y onnxruntime-gpu && pip install onnxruntime-directml"


def ort_choice(platform_name: str, has_nvidia: bool, machine: str = "x86_64") -> OrtChoice:
    """The ONNX Runtime package for ``platform_name`` (``sys.platform``) on ``machine``
    (``platform.machine()``), with or without an NVIDIA GPU."""
    if platform_name == "darwin":
        return ORT_MACOS if machine == "arm64" else ORT_INTEL_MAC
    if platform_name == "win32":
        return ORT_CUDA if has_nvidia else ORT_DIRECTML
    if machine.lower() in ("x86_64", "amd64"):
        # the default install: the CUDA build, whose CPU provider serves a machine without one
        plain = "CUDA 13; without an NVIDIA GPU it runs on the CPU, as the plain onnxruntime does"
        return (
            ORT_CUDA
            if has_nvidia
            else dataclasses.replace(ORT_CUDA, why=plain, also=("onnxruntime",))
        )
    return ORT_CPU


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version)[:3])


def check_onnxruntime(
    platform_name: str, has_nvidia: bool, installed: Mapping[str, str], machine: str = "x86_64"
) -> Check:
    """Whether ``installed`` (distribution -> version, from ``importlib.metadata``) is
    the one ONNX Runtime package this machine should have (``ort_choice``)."""
    name = "package ONNX Runtime"
    want = ort_choice(platform_name, has_nvidia, machine)
    gpu = "an NVIDIA GPU" if has_nvidia else "no NVIDIA GPU"
    should = f"this machine ({platform_name}, {gpu}) should use {want.requirement} ({want.why})"
    listed = ", ".join(f"{d} {v}" for d, v in installed.items()) or "none"
    install = f'pip install "{want.requirement}"'
    if len(installed) > 1:
        return Check(
            name,
            False,
            f"several ONNX Runtime builds installed ({listed}); they overwrite each other "
            f"and GPU providers silently disappear; {should}",
            f"pip uninstall -y {' '.join(installed)} && {install}",
        )
    if not installed:
        return Check(name, False, f"not installed; {should}", install)
    ((dist, version),) = installed.items()
    detail = f"{should}; installed: {dist} {version}"
    if dist not in (want.dist, *want.also):
        swap = (
            DIRECTML_SWAP
            if want is ORT_DIRECTML and dist == "onnxruntime-gpu"
            else f"pip uninstall -y {dist} && {install}"
        )
        return Check(name, False, detail, swap)
    if dist == want.dist and _release(version) < _release(want.minimum):
        return Check(
            name,
            False,
            f"{detail}, older than {want.minimum}",
            f'pip install -U "{want.requirement}"',
        )
    return Check(name, True, detail)


def _has_nvidia() -> bool:
    """Whether an NVIDIA driver answers here (NVML)."""
    from livecam.telemetry.gpu import NvmlReader

    with NvmlReader() as reader:
        return reader.available


def check_providers() -> list[Check]:
    """One check per ONNX Runtime provider, each really running a tiny model."""
    from livecam.runtime.providers import fix_for, probe_providers, short_name
    from livecam.telemetry.gpu import NvmlReader

    with NvmlReader() as reader:
        gpu_error = reader.error
    checks = []
    for probe in probe_providers():
        name = f"ONNX Runtime {short_name(probe.name)}"
        if probe.works:
            checks.append(Check(name, True, f"{probe.name} {probe.detail}"))
        elif gpu_error is not None and probe.name in (
            "CUDAExecutionProvider",
            "TensorrtExecutionProvider",
        ):
            checks.append(Check(name, None, f"not usable: {gpu_error}; {probe.detail}"))
        else:
            checks.append(Check(name, False, probe.detail, fix_for(probe.name)))
    return checks


def check_gpu() -> Check:
    from livecam.telemetry.gpu import NvmlReader

    with NvmlReader() as reader:
        snap = reader.snapshot()
        error = reader.error
    if snap is None:
        return Check("GPU", None, f"{error or 'NVML read failed'}; LiveCam runs on the CPU")
    return Check(
        "GPU",
        True,
        f"{snap.name}: {snap.vram_used_mb:.0f} / {snap.vram_total_mb:.0f} MB VRAM used, "
        f"{snap.util_percent:.0f}% busy, driver {snap.driver}",
    )


def check_virtualcam(backend: str | None = None, device: str | None = None) -> Check:
    from livecam.errors import VirtualCameraUnavailable
    from livecam.sinks.virtualcam import open_camera

    try:
        cam = open_camera(64, 48, 30.0, backend, device)
    except VirtualCameraUnavailable as e:
        return Check("virtual camera", False, e.message, e.hint)
    try:
        return Check("virtual camera", True, f"{cam.device} (backend {cam.backend})")
    finally:
        cam.close()


def check_cameras() -> Check:
    try:
        from livecam.sources.camera import list_cameras
    except ImportError as e:
        return Check("cameras", None, f"camera listing is not available ({e})")
    cams = list(list_cameras())
    if not cams:
        return Check(
            "cameras",
            False,
            "no camera found",
            "connect a webcam and close other apps using it; on Linux add yourself to the "
            "'video' group; a video file or screen region works as a source too",
        )
    return Check("cameras", True, f"{len(cams)} found: " + "; ".join(map(_describe, cams)))


def _describe(cam: object) -> str:
    """``camera:0 1280x720 @ 30 fps (V4L2)`` from a list_cameras() entry."""
    if not isinstance(cam, dict):
        return str(cam)
    text = f"camera:{cam.get('index', '?')}"
    if cam.get("width") and cam.get("height"):
        text += f" {cam['width']}x{cam['height']}"
    if cam.get("fps"):
        text += f" @ {float(cam['fps']):g} fps"
    return text + (f" ({cam['backend']})" if cam.get("backend") else "")


def check_display() -> Check:
    from livecam.sinks.preview import display_available

    ok, detail = display_available()
    if not ok:
        return Check(
            "display",
            None,
            f"{detail}: no preview window or screen capture",
            "run inside a desktop session, or under `xvfb-run` for headless use",
        )
    try:
        import mss

        factory = getattr(mss, "MSS", None) or mss.mss  # mss >= 10 renamed the factory
        with factory() as grabber:
            shot = grabber.grab({"left": 0, "top": 0, "width": 1, "height": 1})
        return Check("display", True, f"{detail}; screen capture works ({shot.size.width}x1 grab)")
    except Exception as e:
        return Check(
            "display",
            False,
            f"{detail}, but screen capture failed: {e}",
            "on Wayland allow screen capture for this app or run it under XWayland",
        )


def check_window() -> Check:
    """Whether the Qt preview window (the ``window`` sink) can open here."""
    from livecam.sinks.preview import display_available, window_problem

    why = window_problem()
    if why is None:
        return Check("preview window", True, "a Qt window can open here")
    no_display = not display_available()[0]
    return Check(
        "preview window",
        None if no_display else False,
        why,
        "run inside a desktop session (or under `xvfb-run`)"
        if no_display
        else "install what is named above, or use another sink (virtualcam, a file, null)",
    )


def check_presets() -> list[Check]:
    """Per preset: whether its model files are on this machine (size checked; `livecam
    models verify` hashes them), where they are looked up, and how to get the missing."""
    from livecam.models.presets import PRESETS
    from livecam.models.store import ModelStore

    store = ModelStore()
    folders = ", ".join(str(path) for where, path in store.folders if where != "bundled")
    checks = []
    for row in PRESETS.values():
        names = row.model_names()
        missing = [store.entry(n).file for n in names if store.locate(n) is None]
        bundled = [
            store.entry(n).file
            for n in row.parts_for().values()
            if n in store.manifest and store.entry(n).source == "bundled"
        ]
        shipped = dict(store.folders)["bundled"]
        lost = [file for file in bundled if not (shipped / file).is_file()]
        name = f"preset {row.name}"
        if lost:
            checks.append(
                Check(
                    name,
                    False,
                    f"model files that ship inside LiveCam are missing: {', '.join(lost)}",
                    "reinstall LiveCam (`pip install --force-reinstall livecam`)",
                )
            )
        elif not names:
            where = f"{len(bundled)} bundled model files" if bundled else "no model file needed"
            checks.append(Check(name, True, f"ready ({where}, nothing to download)"))
        elif not missing:
            checks.append(Check(name, True, f"ready ({len(names)} model files present)"))
        else:
            checks.append(
                Check(
                    name,
                    None,
                    f"{len(missing)} of {len(names)} model files missing ({', '.join(missing)}; "
                    f"looked in {folders})",
                    f"livecam models fetch {row.name} (downloads {row.needs_download})",
                )
            )
    return checks


def _guarded(name: str, fn: Callable[[], Check | list[Check]]) -> list[Check]:
    try:
        result = fn()
    except Exception as e:  # a broken probe is a finding, not a crash
        log.debug("doctor check %s crashed", name, exc_info=True)
        return [Check(name, False, f"check crashed: {type(e).__name__}: {e}")]
    return result if isinstance(result, list) else [result]


def run_doctor(
    virtualcam_backend: str | None = None, virtualcam_device: str | None = None
) -> list[Check]:
    """Run every check (a few seconds at most) and return them in display order."""
    checks = _guarded("Python", check_python)
    for pkg in PACKAGES:
        checks += _guarded(f"package {pkg.label}", lambda p=pkg: check_package(p))  # type: ignore[misc]
    checks += _guarded("ONNX Runtime providers", check_providers)
    checks += _guarded("GPU", check_gpu)
    checks += _guarded(
        "virtual camera", lambda: check_virtualcam(virtualcam_backend, virtualcam_device)
    )
    checks += _guarded("cameras", check_cameras)
    checks += _guarded("display", check_display)
    checks += _guarded("preview window", check_window)
    checks += _guarded("presets", check_presets)
    return checks


def format_checks(checks: list[Check], ascii_only: bool = False) -> str:
    """Lines for the CLI: ✔ works, ✘ broken, – optional/absent; the fix under problems."""
    marks = {True: "+", False: "x", None: "-"} if ascii_only else {True: "✔", False: "✘", None: "–"}
    lines = []
    for c in checks:
        detail = c.detail.replace("\n", "\n    ")
        lines.append(f"{marks[c.ok]} {c.name}: {detail}")
        if c.ok is not True and c.fix:
            lines.append(f"    fix: {c.fix}")
    return "\n".join(lines)
