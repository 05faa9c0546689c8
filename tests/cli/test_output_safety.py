"""What `livecam run` may write: a config file cannot make it replace the user's files
(its ``overwrite`` is ignored, stats must be ``.json``, relative output paths stay in the
config's folder), a file of another kind is never replaced even with ``--overwrite``, at
most the last folder of an output path is created (and said), ``--save-config`` keeps a
dangling or looping link, the stats go to a device or standard output as asked, empty
paths are errors, and an unusable ``LIVECAM_MODELS_DIR`` is a one-line error.

Every case runs the real CLI (in process, or as a child process where standard output or
the environment matters) on real files in ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_output import one_line_error

from livecam.cli.main import main
from livecam.errors import ModelError
from livecam.models.store import ModelStore

SMALL = ["run", "--source", "synthetic", "--size", "160x120", "--frames", "2", "-q"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([*SMALL, *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


def config(tmp: Path, text: str) -> str:
    path = tmp / "shared.toml"
    path.write_text(text)
    return str(path)


@pytest.fixture
def photo(tmp_path: Path, testdata: Path) -> Path:
    """A photo of the user's, beside the config file."""
    return Path(shutil.copy(testdata / "faces" / "obama_small_320x240.jpg", tmp_path / "me.jpg"))


def test_a_config_file_cannot_replace_the_users_files(
    tmp_path: Path,
    photo: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``[output] overwrite = true`` with a sink on a photo and the stats on a dot file:
    both stay as they were; the photo's sink writes a new name, the stats are refused."""
    bashrc = tmp_path / ".bashrc"
    bashrc.write_text("export PATH=$HOME/bin:$PATH\n")
    before = photo.read_bytes()
    text = '[output]\noverwrite = true\nsinks = ["me.jpg"]\n[run]\nstats_json = ".bashrc"\n'
    code, _out, err = run(capsys, "--config", config(tmp_path, text))
    assert code == 2 and "must end in .json" in one_line_error(err)
    assert "'output.overwrite' is ignored" in caplog.text
    assert bashrc.read_text() == "export PATH=$HOME/bin:$PATH\n"

    code, out, err = run(
        capsys, "--config", config(tmp_path, '[output]\noverwrite = true\nsinks = ["me.jpg"]\n')
    )
    assert code == 0, err
    assert photo.read_bytes() == before, "the photo is kept"
    written = [p for p in tmp_path.glob("me-*.jpg")]
    assert len(written) == 1 and f"wrote {written[0]}" in out


def test_only_the_command_line_overwrites_and_never_a_file_of_another_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stats = tmp_path / "stats.json"
    stats.write_text('{"old": true}\n')
    code, out, err = run(capsys, "--sink", "null", "--stats-json", str(stats), "--overwrite")
    assert code == 0, err
    assert json.loads(stats.read_text())["frames_in"] == 2, "--overwrite replaces the stats"
    notes = tmp_path / "notes.png"  # text under an image's name
    notes.write_text("my notes\n")
    code, _out, err = run(capsys, "--sink", str(notes), "--overwrite")
    assert code == 2 and "is not a PNG file" in one_line_error(err)
    assert notes.read_text() == "my notes\n"
    text = tmp_path / "text.json"
    text.write_bytes(b"\xff\xd8\xff\xe0 a JPEG named .json")
    code, _out, err = run(capsys, "--sink", "null", "--stats-json", str(text), "--overwrite")
    assert code == 2 and "is not a JSON file" in one_line_error(err)
    assert text.read_bytes().startswith(b"\xff\xd8")


def test_saved_configs_do_not_carry_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "saved.toml"
    saved.write_text("# old\n")
    code, _out, err = run(capsys, "--save-config", str(saved), "--overwrite")
    assert code == 0, err
    assert "overwrite = false" in saved.read_text()


def test_relative_output_paths_of_a_config_stay_in_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    for text in ('[output]\nsinks = ["../../x.png"]\n', '[run]\nstats_json = "../s.json"\n'):
        (inner / "c.toml").write_text(text)
        code, _out, err = run(capsys, "--sink", "null", "--config", str(inner / "c.toml"))
        assert code == 2 and "climbs out of the config file's folder" in one_line_error(err)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "c.toml"]
    (inner / "c.toml").write_text('[output]\nsinks = ["sub/x.png"]\n')
    code, out, err = run(capsys, "--config", str(inner / "c.toml"))
    assert code == 0 and (inner / "sub" / "x.png").is_file(), err


def test_only_the_last_folder_of_an_output_is_created_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    code, _out, err = run(capsys, "--sink", str(tmp_path / "typo" / "deeper" / "o.png"))
    assert code == 2 and "creates only the last folder" in one_line_error(err)
    assert not (tmp_path / "typo").exists()
    with caplog.at_level("INFO"):
        code, _out, err = run(capsys, "--sink", str(tmp_path / "new" / "o.png"))
    assert code == 0, err
    assert (tmp_path / "new" / "o.png").is_file()
    assert f"created the folder {tmp_path / 'new'}" in caplog.text


@pytest.mark.parametrize("link", ["dangling", "looping"])
def test_save_config_keeps_a_link_that_leads_nowhere(
    tmp_path: Path, link: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.toml"
    path.symlink_to(tmp_path / "gone.toml" if link == "dangling" else path)
    code, _out, err = run(capsys, "--save-config", str(path))
    assert code == 2 and "already exists" in one_line_error(err)
    assert path.is_symlink() and not (tmp_path / "gone.toml").exists()


def test_stats_go_to_a_device_or_standard_output(tmp_path: Path) -> None:
    before = sorted(os.listdir("/dev"))
    env = {**os.environ, "LIVECAM_CACHE_DIR": str(tmp_path / "cache")}
    base = [sys.executable, "-m", "livecam", *SMALL, "--sink", "null"]
    done = subprocess.run(
        [*base, "--stats-json", "/dev/null"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir("/dev")) == before, "nothing new beside /dev/null"
    done = subprocess.run(
        [*base, "--stats-json", "-"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    stats, _end = json.JSONDecoder().raw_decode(done.stdout)
    assert stats["frames_in"] == 2
    assert not (tmp_path / "-").exists(), "standard output, not a file named -"


@pytest.mark.parametrize("option", ["--config", "--save-config", "--stats-json"])
def test_an_empty_path_is_an_error(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--sink", "null", option, "")
    assert code == 2, err
    one_line_error(err)
    assert "frames in" not in out, "nothing ran"


@pytest.mark.parametrize("kind", ["a file", "/dev/null"])
def test_an_unusable_models_dir_is_a_one_line_error(
    tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "models.txt" if kind == "a file" else Path("/dev/null")
    if kind == "a file":
        folder.write_text("not a folder")
    env = {**os.environ, "LIVECAM_MODELS_DIR": str(folder), "XDG_DATA_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "livecam", "models", "fetch", "scrfd-500m", "--accept-licence"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"LIVECAM_MODELS_DIR={folder} is not a folder" in one_line_error(done.stderr)
    store = ModelStore(models_dir=folder, data_dir=tmp_path / "data")
    with pytest.raises(ModelError, match="is not a folder"):
        store.require(["scrfd-500m"], download=False, accept_licence=True)
    with caplog.at_level("WARNING"):  # found elsewhere (bundled): said, not silent
        store.require(["mobilefacenet"], download=False, accept_licence=False)
    assert f"LIVECAM_MODELS_DIR={folder} is not a folder: ignored" in caplog.text


# ------------------------------------------- files written into folders others may write


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of the user's that a link planted in a shared folder points at."""
    path = tmp_path / "victim.txt"
    path.write_text("the user's own file\n")
    return path


def test_a_saved_config_a_signing_key_and_a_cached_model_replace_a_planted_link(
    tmp_path: Path, victim: Path, testdata: Path
) -> None:
    """A link named as the file each writes (config, key, cached rewrite) is replaced by
    the new file; the file it points at is never written."""
    from livecam.config.schema import Config
    from livecam.runtime.batch_rewrite import make_dynamic_batch
    from livecam.userfiles import write_private

    saved = tmp_path / "config.toml"
    saved.symlink_to(victim)
    Config().save(saved, overwrite=True)
    keys = tmp_path / "signing"
    keys.mkdir()
    (keys / "key.pem").symlink_to(victim)
    write_private(keys / "key.pem", b"-----BEGIN PRIVATE KEY-----\n")
    cache = tmp_path / "onnx"
    rewrite = make_dynamic_batch(testdata / "models" / "mobilefacenet.onnx", cache)
    assert rewrite is not None and rewrite.parent == cache
    rewrite.unlink()
    rewrite.symlink_to(victim)
    assert make_dynamic_batch(testdata / "models" / "mobilefacenet.onnx", cache) == rewrite
    for written in (saved, keys / "key.pem", rewrite):
        assert not written.is_symlink() and written.is_file(), written
    assert victim.read_text() == "the user's own file\n"


def test_a_temporary_file_swapped_for_a_link_is_never_given_the_name(
    tmp_path: Path, victim: Path
) -> None:
    """Someone who may write the folder puts a link in place of LiveCam's temporary file
    while it is written: the link is refused, not moved to the file's name."""
    from livecam.userfiles import write_atomically

    def swapped(tmp: Path) -> None:
        tmp.unlink()
        tmp.symlink_to(victim)

    with pytest.raises(OSError, match="is a symbolic link: refused"):
        write_atomically(tmp_path / "faces.npz", swapped)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["victim.txt"]


def test_a_key_folder_that_is_a_link_is_refused_before_its_mode_is_changed(
    tmp_path: Path,
) -> None:
    from livecam.userfiles import write_private

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    os.chmod(elsewhere, 0o755)
    (tmp_path / "signing").symlink_to(elsewhere)
    with pytest.raises(OSError, match="signing is a symbolic link: refused"):
        write_private(tmp_path / "signing" / "key.pem", b"key")
    assert elsewhere.stat().st_mode & 0o777 == 0o755 and not list(elsewhere.iterdir())
