"""Packaging: the wheel holds every module, ui/, the demo assets and the lite preset's three
bundled models (YuNet, slim-160, MobileFaceNet) with their licences, and `livecam demo`
runs from it without dlib; the livecam package never loads Qt (only ui/ does, lazily).

The wheel is built from a clean copy of this checkout (tracked files and untracked ones
git does not ignore) into ``$LIVECAM_WHEEL_DIR`` when set (CI keeps it), else a temporary
folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from media import read_video

from livecam.models.manifest import load_manifest

REPO = Path(__file__).resolve().parents[1]
ASSETS = (
    "astronaut.png",
    "grace_hopper.jpg",
    "ATTRIBUTION.md",
    "face_detection_yunet_2023mar.onnx",  # the lite preset's detector,
    "face_detection_yunet_2023mar.LICENSE",
    "slim_160_latest.onnx",  # its landmarker
    "slim_160_latest.LICENSE",
    "mobilefacenet.onnx",  # and its recognizer
    "mobilefacenet.LICENSE",
)
#: Python packages the installed wheel must not need (the lite preset replaced dlib's)
GONE = ("dlib", "face_recognition_models")


def checkout_files() -> list[str]:
    """Files of this checkout: tracked, and untracked ones git does not ignore."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    return [f for f in out.decode().split("\0") if f and (REPO / f).is_file()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a clean copy of the checkout (no stale build/ folder)."""
    src = tmp_path_factory.mktemp("src")
    for name in checkout_files():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, src / name)
    out = Path(os.environ.get("LIVECAM_WHEEL_DIR") or tmp_path_factory.mktemp("dist"))
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("livecam-*.whl"):
        old.unlink()
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + ["-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (built,) = out.glob("livecam-*.whl")
    return built


def test_wheel_holds_every_module_ui_and_the_demo_assets(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for asset in ASSETS:
        assert f"livecam/assets/{asset}" in names
    assert {"ui/__init__.py", "ui/preview_window.py"} <= names
    bundled = [e for e in load_manifest().values() if e.source == "bundled"]
    assert {e.name for e in bundled} == {"yunet-2023mar", "slim-68", "mobilefacenet"}
    with zipfile.ZipFile(wheel) as whl:
        for entry in bundled:  # the very bytes the manifest pins
            data = whl.read(f"livecam/assets/{entry.file}")
            assert (len(data), hashlib.sha256(data).hexdigest()) == (entry.size, entry.sha256)
        metadata = whl.read("livecam-0.1.0.dist-info/METADATA").decode()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert requires and not [r for r in requires if any(n in r.replace("-", "_") for n in GONE)]
    assert "livecam/modeldata/manifest.toml" in names  # the model store's manifest
    modules = {
        f for f in checkout_files() if f.endswith(".py") and f.startswith(("livecam/", "ui/"))
    }
    assert modules and modules <= names, sorted(modules - names)


def test_demo_runs_from_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    """A fresh venv with only the wheel installed (dependencies are borrowed from this
    environment's site-packages through a .pth path, so no editable mapping applies)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    for name in GONE:  # shadow them, should this environment still have them
        Path(site, f"{name}.py").write_text(f"raise ImportError('{name} is not installed')\n")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps"]
        + [str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    where = subprocess.run(
        [python, "-c", "import livecam.assets, ui; print(livecam.assets.__file__, ui.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout.split()
    assert all(Path(p).is_relative_to(venv) for p in where), where

    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    out = tmp_path / "X.mp4"
    demo = subprocess.run(
        [venv / "bin" / "livecam", "demo", "--frames", "10", "--output", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "lite preset" in demo.stdout and "frames in 10, out 10" in demo.stdout
    frames, _ = read_video(out)
    assert len(frames) == 10


def test_livecam_never_imports_qt() -> None:
    """Every livecam module imported in a fresh interpreter loads no Qt binding."""
    code = """
import importlib, pkgutil, sys
import livecam
names = [m.name for m in pkgutil.walk_packages(livecam.__path__, "livecam.")]
for name in names:
    importlib.import_module(name)
qt = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6", "PyQt5", "PyQt6"))
print(len(names), "modules;", "Qt:", ",".join(qt) or "none")
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    count, _ = proc.stdout.split(" modules;")
    assert int(count) > 20 and proc.stdout.strip().endswith("Qt: none"), proc.stdout


#: (sys_platform, platform_machine, an NVIDIA GPU) of the machines the markers must serve
MACHINES = [
    ("linux", "x86_64", True),
    ("linux", "aarch64", False),
    ("win32", "AMD64", True),
    ("darwin", "arm64", False),
    ("darwin", "x86_64", False),
]


@pytest.mark.parametrize(("platform_name", "machine", "nvidia"), MACHINES)
def test_the_default_install_picks_one_onnxruntime_per_platform_as_the_doctor_says(
    platform_name: str, machine: str, nvidia: bool
) -> None:
    import tomllib

    from packaging.requirements import Requirement

    from livecam.telemetry.doctor import ORT_DISTS, ort_choice

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    env = {"sys_platform": platform_name, "platform_machine": machine, "python_version": "3.11"}
    wanted = [
        req
        for req in map(Requirement, project["dependencies"])
        if req.name in ORT_DISTS and (req.marker is None or req.marker.evaluate(env))
    ]
    assert len(wanted) == 1, wanted  # exactly one ONNX Runtime: two overwrite each other
    (req,) = wanted
    choice = ort_choice(platform_name, nvidia, machine)
    assert (req.name, str(req.specifier)) == (choice.dist, f">={choice.minimum}")
    for extra in project.get("optional-dependencies", {}).values():
        assert not [r for r in map(Requirement, extra) if r.name in ORT_DISTS]


def test_the_readme_names_the_directml_swap_the_doctor_gives() -> None:
    from livecam.telemetry.doctor import DIRECTML_SWAP

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert DIRECTML_SWAP in readme and "onnxruntime-gpu>=1.27" in readme
