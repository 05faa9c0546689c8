"""``livecam obs add-source``, ``status`` and ``password`` against a real OBS (``obs``
fixture): the scene holds exactly one LiveCam source after two runs, pointing at the
right device; faults are one line with the fix."""

from __future__ import annotations

import io
import stat
from pathlib import Path

import pytest
from cli_output import one_line_error
from obs_studio import ObsStudio, free_port

from livecam.cli.main import main
from livecam.obs.client import Session
from livecam.obs.secret import password_file, read_password
from livecam.obs.source import CAMERA_KIND, SOURCE_NAME


def livecam_obs(obs: ObsStudio, *args: str) -> int:
    return main(["obs", *args, "--obs-host", "127.0.0.1", "--obs-port", str(obs.port)])


def livecam_items(session: Session) -> list[dict[str, object]]:
    scene = session.call("GetCurrentProgramScene")["currentProgramSceneName"]
    items = session.call("GetSceneItemList", {"sceneName": scene})["sceneItems"]
    return [i for i in items if i["sourceName"] == SOURCE_NAME]


def test_add_source_twice_leaves_one_source_on_the_device_of_now(
    obs: ObsStudio, studio: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    obs.remove(studio, SOURCE_NAME)
    assert livecam_obs(obs, "add-source", "--device", "/dev/video10") == 0
    assert "added LiveCam (the virtual camera /dev/video10)" in capsys.readouterr().out
    assert livecam_obs(obs, "add-source", "--device", "/dev/video10") == 0
    assert "already in OBS's scene" in capsys.readouterr().out
    items = livecam_items(studio)
    assert len(items) == 1 and items[0]["inputKind"] == CAMERA_KIND
    settings = studio.call("GetInputSettings", {"inputName": SOURCE_NAME})["inputSettings"]
    assert settings["device_id"] == "/dev/video10"
    # after a device change: the same one source, pointed at the new device
    assert livecam_obs(obs, "add-source", "--device", "/dev/video11") == 0
    assert len(livecam_items(studio)) == 1
    settings = studio.call("GetInputSettings", {"inputName": SOURCE_NAME})["inputSettings"]
    assert settings["device_id"] == "/dev/video11"


def test_add_source_to_a_missing_scene_is_one_line(
    obs: ObsStudio, studio: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    assert livecam_obs(obs, "add-source", "--device", "/dev/video10", "--scene", "Gone") == 2
    assert "OBS has no scene named 'Gone'" in one_line_error(capsys.readouterr().err)


def test_without_a_virtual_camera_add_source_tries_the_window(
    obs: ObsStudio, studio: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    """No v4l2loopback here: the window is captured, where OBS can (this OBS runs on an
    Xvfb without a window manager, so it has no window capture: one line says so)."""
    kinds = set(studio.call("GetInputKindList")["inputKinds"])
    code = livecam_obs(obs, "add-source")
    out, err = capsys.readouterr()
    assert "no virtual camera here" in out
    if "xcomposite_input" in kinds:
        assert code == 0 and "the window 'LiveCam'" in out
    else:
        assert code == 2 and "OBS has no window capture source here" in err


def test_status_and_its_faults(
    obs: ObsStudio,
    studio: Session,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert livecam_obs(obs, "status") == 0
    assert "connected to OBS 2" in capsys.readouterr().out
    monkeypatch.setenv("LIVECAM_OBS_PASSWORD", "wrong")
    assert livecam_obs(obs, "status") == 2
    err = capsys.readouterr().err
    assert "refused the WebSocket password" in one_line_error(err) and "livecam obs password" in err
    port = free_port()  # nothing listens there
    assert main(["obs", "status", "--obs-host", "127.0.0.1", "--obs-port", str(port)]) == 2
    err = capsys.readouterr().err
    assert "OBS is not running" in one_line_error(err) and "Tools > WebSocket Server" in err


def test_password_is_kept_readable_by_the_user_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LIVECAM_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("LIVECAM_OBS_PASSWORD", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO("s3cret pass\n"))
    assert main(["obs", "password"]) == 0
    assert "s3cret" not in capsys.readouterr().out
    path = password_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_password() == "s3cret pass"
    assert main(["obs", "password", "--clear"]) == 0
    assert not path.exists() and read_password() == ""
