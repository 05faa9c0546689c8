"""Shared fixtures. Real test data lives in ../shared/testdata (never copied into the repo).

One rule finds it: ``$LIVECAM_TESTDATA`` if set, else ``shared/testdata`` in a folder
above the checkout. A test that needs it and does not find it is skipped on a developer's
machine with the reason, and fails in CI (``CI`` set), where the data must be present.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import code_gates
import pytest
from http_files import FileServer, serve
from media import xvfb_display
from obs_studio import ObsStudio, obs_studio
from recording_backend import RecordingStore, register_recording_backend, unregister

if TYPE_CHECKING:
    from triton_serve import Served

    from livecam.obs.client import Session
    from ui.settings import UiSettings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO = Path(__file__).resolve().parents[1]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the code gates beside the suite when it includes them (tests/code_gates.py)."""
    code_gates.start_if_selected(session.config, session.items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    code_gates.stop_unfinished(session.config)


def find_testdata() -> Path | None:
    """The shared test-data folder, or None (the one rule every test and bench uses)."""
    env = os.environ.get("LIVECAM_TESTDATA")
    candidates = [Path(env)] if env else []
    candidates += [p / "shared" / "testdata" for p in REPO.parents]
    for c in candidates:
        if (c / "faces").is_dir():
            return c
    return None


def missing(what: str) -> NoReturn:
    """Skip the test (developer machine) or fail it (CI) because ``what`` is missing."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing in CI", pytrace=False)
    pytest.skip(what)


def other_hardware(what: str) -> NoReturn:
    """Skip, in CI too, a test written for the other kind of machine, told apart by hardware
    that a CI machine never has: an NVIDIA GPU or driver (and so a CUDA that works), or a
    real virtual-camera device. These tests check the machine without it, which is exactly
    what CI runs on (``.ci/run``: CPU wheels, no driver, no v4l2loopback), so in CI they
    always run; on a machine with the hardware, bench/ (``bench/gpu_check.sh``) measures
    the hardware path, and failing there would only say that the machine is not CI's.
    Every other missing thing goes through ``missing``."""
    pytest.skip(what)


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Analysed source faces, model files, accepted licences and TensorRT caches go to
    folders of this test session, not the user's (child processes inherit them through
    the environment; platformdirs reads the XDG variables)."""
    folder = tmp_path_factory.mktemp("livecam-cache")
    os.environ["LIVECAM_CACHE_DIR"] = str(folder)
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    os.environ.pop("LIVECAM_MODELS_DIR", None)
    return folder


@pytest.fixture(scope="session")
def testdata() -> Path:
    """The shared test-data folder (faces/, video/, models/)."""
    found = find_testdata()
    if found is None:
        missing("../shared/testdata not found (set LIVECAM_TESTDATA to its path)")
    assert found is not None
    return found


@pytest.fixture(scope="session")
def assets_dir() -> Path:
    return REPO / "assets"


@pytest.fixture(scope="module")
def xvfb() -> Iterator[str]:
    """A private 640x480 Xvfb display (``:N``)."""
    with xvfb_display() as display:
        if display is None:
            missing("Xvfb is not installed (apt-get install xvfb): these tests need a display")
        assert display is not None
        yield display


@pytest.fixture(scope="session")
def obs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObsStudio]:
    """A real OBS Studio (obs-websocket 5) on a private Xvfb and HOME, for the session
    (``tests/obs_studio.py``): ``obs.port``, ``obs.password``, ``obs.session()``."""
    with obs_studio(tmp_path_factory.mktemp("obs-home")) as running:
        if running is None:
            missing("obs-studio or Xvfb is not installed (apt-get install obs-studio xvfb)")
        assert running is not None
        yield running


@pytest.fixture
def studio(obs: ObsStudio, monkeypatch: pytest.MonkeyPatch) -> Iterator[Session]:
    """The ``obs`` OBS, running, with a microphone input at the user's own offset
    (``ObsStudio.prepared``), LiveCam given its password; a connection of the test's own."""
    monkeypatch.setenv("LIVECAM_OBS_PASSWORD", obs.password)
    session = obs.prepared()
    yield session
    session.close()


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> UiSettings:
    """The panel's settings in a config folder of the test's own (``LIVECAM_CONFIG_DIR``,
    so a ``UiSettings()`` made by the code under test reads the same files)."""
    from ui.settings import UiSettings

    folder = tmp_path / "config"
    monkeypatch.setenv("LIVECAM_CONFIG_DIR", str(folder))
    return UiSettings(folder)


@pytest.fixture
def server() -> Iterator[FileServer]:
    """A real HTTP file server on 127.0.0.1 (``tests/http_files.py``)."""
    with serve() as files:
        yield files


@pytest.fixture
def vcam() -> Iterator[RecordingStore]:
    """A recording backend registered with pyvirtualcam: the real ``pyvirtualcam.Camera``
    drives it and it keeps every frame it receives (``vcam.name`` is the backend name)."""
    store = register_recording_backend()
    yield store
    unregister(store.name)


@pytest.fixture(scope="session")
def remote_models(tmp_path_factory: pytest.TempPathFactory, testdata: Path) -> dict[str, Path]:
    """The models of the remote-swap tests: the narrow synthetic inswapper, the
    latent-to-colour oracle, a 512-d recognizer with ArcFace's interface and a small
    convolutional enhancer with GPEN-BFR-256's interface."""
    from face_parts_data import conv_enhancer

    from livecam.benchmark.synthetic_models import (
        arcface_like,
        inswapper_like,
        latent_colour_swapper,
    )

    folder = tmp_path_factory.mktemp("remote-models")
    files = {
        "narrow": folder / "narrow_swapper.onnx",
        "colour": folder / "colour_swapper.onnx",
        "recognizer": folder / "arcface_like.onnx",
        "enhancer": folder / "conv_enhancer_256.onnx",
    }
    conv_enhancer(files["enhancer"])
    inswapper_like(files["narrow"], 16)
    latent_colour_swapper(files["colour"], 128, "inswapper")
    arcface_like(files["recognizer"], testdata / "models" / "mobilefacenet.onnx")
    return files


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections for the whole test: bound by this
    process and not listening (a merely free port may be taken by another program)."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])


@pytest.fixture(scope="session")
def narrow_server(
    remote_models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """`livecam serve` of the narrow synthetic swapper and the small enhancer on 127.0.0.1,
    with a token, for the whole session (the tests that kill a server start their own)."""
    from triton_serve import needs_serve_extra, served

    needs_serve_extra()
    log = tmp_path_factory.mktemp("serve") / "narrow.log"
    with served(remote_models["narrow"], log, enhancer_model=remote_models["enhancer"]) as server:
        yield server
