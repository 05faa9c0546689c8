"""Never lose a user's file, through the CLI: a failed start leaves an existing recording
byte-identical; the stats JSON is kept unless --overwrite, written atomically with the
user's permissions, its folder checked before the run; an output that fails ends the run
with exit status 1 and one line saying why.

Virtual cameras are real ``pyvirtualcam.Camera`` objects driven by test backends."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from pyvirtualcam.camera import register_backend
from recording_backend import register_failing_backend, unique_name, unregister

from livecam.cli.main import main as cli_main


def synthetic(*extra: str) -> list[str]:
    return ["run", "--source", "synthetic", "--size", "160x120", "--quiet", *extra]


def backend_calling(action: Callable[[int], None]) -> type:
    """A pyvirtualcam backend whose ``send`` calls ``action(n)`` for its n-th frame."""

    class Backend:
        def __init__(self, **_: Any) -> None:
            self.sent = 0

        def send(self, frame: npt.NDArray[np.uint8]) -> None:
            self.sent += 1
            action(self.sent)

        def close(self) -> None: ...

        def device(self) -> str:
            return "/dev/test-camera"

        def native_fourcc(self) -> int | None:
            return None

    return Backend


@contextlib.contextmanager
def camera_calling(action: Callable[[int], None]) -> Iterator[str]:
    """A registered ``backend_calling(action)``; yields its name."""
    name = unique_name("livecam-test-camera")
    register_backend(name, backend_calling(action))
    try:
        yield name
    finally:
        unregister(name)


@pytest.fixture
def vanishing(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """(a folder, a virtual camera backend that removes it when it gets its 3rd frame)."""
    folder = tmp_path / "vanishing"
    folder.mkdir()

    def remove(n: int) -> None:
        if n == 3:
            shutil.rmtree(folder)

    with camera_calling(remove) as name:
        yield folder, name


@pytest.fixture
def camera_failing_at_frame_5() -> Iterator[str]:
    def fail(n: int) -> None:
        if n >= 5:
            raise OSError("simulated: the device was unplugged")

    with camera_calling(fail) as name:
        yield name


# --- a failed start ------------------------------------------------------------------


@pytest.mark.parametrize("overwrite", [False, True], ids=["keep", "overwrite"])
def test_a_failed_start_next_to_an_existing_recording_leaves_it_byte_identical(
    tmp_path: Path, testdata: Path, overwrite: bool
) -> None:
    """The recorder opens (and claims a name) before the virtual camera fails to open:
    the start-up error closes it and nothing beside the user's file is left."""
    out = tmp_path / "show.mp4"
    shutil.copy(testdata / "video" / "openmpf_video_01.mp4", out)
    before = out.read_bytes()
    camera = register_failing_backend()
    try:
        code = cli_main(
            synthetic(
                "--sink", str(out), "--sink", "virtualcam", "--vcam-backend", camera,
                *(["--overwrite"] if overwrite else []),
            )
        )  # fmt: skip
    finally:
        unregister(camera)
    assert code == 2
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["show.mp4"]


# --- an output that fails ------------------------------------------------------------


def test_when_the_only_sink_fails_the_run_ends_with_status_1_and_says_why(
    camera_failing_at_frame_5: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli_main(
        synthetic("--sink", "virtualcam", "--vcam-backend", camera_failing_at_frame_5)
    )  # no --frames: the run would go on for ever
    assert code == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    assert "every output failed, so the stream stopped" in errors[0]
    assert "simulated: the device was unplugged" in errors[0]


def test_a_failing_sink_beside_a_working_one_is_reported_with_status_1(
    camera_failing_at_frame_5: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "kept.mp4"
    argv = ["--sink", str(out), "--sink", "virtualcam", "--vcam-backend"]
    code = cli_main(synthetic(*argv, camera_failing_at_frame_5, "--frames", "30"))
    assert code == 1
    captured = capsys.readouterr()
    assert f"wrote {out}" in captured.out, "the recording went on to the end"
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "an output failed: sink virtualcam" in errors[0]


def test_an_image_sink_whose_folder_is_removed_fails_the_run(
    vanishing: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A still written on close into a folder removed meanwhile: an error, not a warning."""
    folder, camera = vanishing
    argv = ["--sink", str(folder / "last.png"), "--sink", "virtualcam", "--vcam-backend"]
    code = cli_main(synthetic(*argv, camera, "--frames", "10"))
    assert code == 1
    err = capsys.readouterr().err
    assert "error: an output failed: sink image: cannot write" in err
    assert "last.png" in err and not folder.exists()


def test_a_still_written_before_its_folder_went_is_one_error_and_never_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The still is written at 1 s, its folder is removed at 1.5 s, the write at 2 s
    fails: the sink is reported once (close does not try again) and no "wrote" names
    the file that went with its folder."""
    folder = tmp_path / "vanishing"
    folder.mkdir()

    def remove(n: int) -> None:
        if n == 45:
            shutil.rmtree(folder)

    out = folder / "last.png"
    with camera_calling(remove) as camera:
        argv = ["--sink", str(out), "--sink", "virtualcam", "--vcam-backend", camera]
        code = cli_main(synthetic(*argv, "--frames", "90"))
    assert code == 1
    captured = capsys.readouterr()
    assert "wrote" not in captured.out
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].count("sink image") == 1, errors
    assert f"cannot write {out}" in errors[0]


# --- the stats JSON --------------------------------------------------------------------


def test_an_existing_stats_file_is_kept_and_a_new_name_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stats = tmp_path / "stats.json"
    stats.write_text('{"frames_in": 1, "week": "last"}\n')  # JSON: --overwrite replaces it
    assert cli_main(synthetic("--sink", "null", "--frames", "5", "--stats-json", str(stats))) == 0
    assert stats.read_text() == '{"frames_in": 1, "week": "last"}\n'
    (new,) = [p for p in tmp_path.iterdir() if p != stats]
    assert new.name.startswith("stats-") and new.suffix == ".json"
    assert json.loads(new.read_text())["frames_in"] == 5
    assert f"wrote {new}" in capsys.readouterr().out

    argv = ["--sink", "null", "--frames", "6", "--stats-json", str(stats), "--overwrite"]
    assert cli_main(synthetic(*argv)) == 0
    assert json.loads(stats.read_text())["frames_in"] == 6
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary file"


def test_the_stats_file_gets_the_users_normal_permissions(tmp_path: Path) -> None:
    stats = tmp_path / "stats.json"
    previous = os.umask(0o022)
    try:
        assert (
            cli_main(synthetic("--sink", "null", "--frames", "3", "--stats-json", str(stats))) == 0
        )
    finally:
        os.umask(previous)
    assert stat.S_IMODE(stats.stat().st_mode) == 0o644


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("missing/stats.json", "does not exist"),
        ("a-file/stats.json", "is not a folder"),
        ("/proc/livecam-stats.json", "is not writable"),  # not even root may create files there
    ],
    ids=["missing", "file", "unwritable"],
)
def test_a_stats_file_that_cannot_be_written_is_an_error_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, why: str
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    stats = tmp_path / where
    still = tmp_path / "never.png"
    argv = ["--sink", str(still), "--frames", "3", "--stats-json", str(stats)]
    assert cli_main(synthetic(*argv)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --stats-json") and why in err and "Traceback" not in err
    assert not still.exists(), "the run did not start"


def test_a_stats_file_whose_folder_vanishes_during_the_run_fails_it(
    vanishing: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, camera = vanishing
    argv = ["--sink", "virtualcam", "--vcam-backend", camera, "--frames", "5"]
    code = cli_main(synthetic(*argv, "--stats-json", str(folder / "stats.json")))
    assert code == 1
    err = capsys.readouterr().err
    assert "error: the stats file" in err and "was not written" in err
