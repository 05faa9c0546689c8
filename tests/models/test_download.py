"""livecam.models.download against a real HTTP server on 127.0.0.1 (tests/http_files.py): resume
with Range, truncated transfers, wrong hashes, 404s and mirrors. The payload is a real
ONNX model from the shared test data."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import socket
from pathlib import Path

import pytest
from http_files import FileServer

from livecam.errors import ModelError
from livecam.models.download import DownloadFailed, download, part_path, sha256_of
from livecam.models.manifest import load_manifest
from livecam.models.store import ModelStore


@pytest.fixture
def payload(testdata: Path) -> bytes:
    return (testdata / "models" / "mobilefacenet.onnx").read_bytes()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_happy_path_verifies_renames_and_shows_progress(
    server: FileServer, payload: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = server.add("/m.onnx", payload)
    target = tmp_path / "models" / "mobilefacenet.onnx"
    got = download([url], target, sha256=_sha(payload), size=len(payload), progress=True)
    assert got.path == target and target.read_bytes() == payload
    assert (got.url, got.sha256, got.size) == (url, _sha(payload), len(payload))
    assert not part_path(target).exists()
    err = capsys.readouterr().err
    assert "mobilefacenet.onnx" in err and "3.79M" in err  # tqdm's bar on stderr


def test_a_truncated_transfer_is_resumed_with_range_and_verified(
    server: FileServer, payload: bytes, tmp_path: Path
) -> None:
    url = server.add("/m.onnx", payload, mode="truncate", times=1)
    target = tmp_path / "m.onnx"
    download([url], target, sha256=_sha(payload), size=len(payload), progress=False)
    assert target.read_bytes() == payload
    (first, second) = server.requests("/m.onnx")
    assert first[1] is None and first[2] == len(payload) // 2
    assert second[1] == f"bytes={len(payload) // 2}-"  # resumed, not restarted
    assert first[2] + second[2] == len(payload)


def test_a_mirror_that_keeps_stopping_early_hands_over_to_the_next(
    server: FileServer, payload: bytes, tmp_path: Path
) -> None:
    bad = server.add("/a/m.onnx", payload, mode="truncate")
    good = server.add("/b/m.onnx", payload)
    target = tmp_path / "m.onnx"
    got = download([bad, good], target, sha256=_sha(payload), progress=False)
    assert got.url == good and sha256_of(target) == _sha(payload)
    assert len(server.requests("/a/m.onnx")) == 4  # the first try and 3 resumes
    # the next mirror continued the partial file
    assert server.requests("/b/m.onnx")[0][1] is not None


def test_wrong_hash_moves_to_the_next_mirror_and_never_leaves_the_file(
    server: FileServer, payload: bytes, tmp_path: Path
) -> None:
    corrupt = bytearray(payload)
    corrupt[len(corrupt) // 2] ^= 0xFF
    wrong = server.add("/wrong/m.onnx", bytes(corrupt))
    right = server.add("/right/m.onnx", payload)
    target = tmp_path / "m.onnx"
    got = download([wrong, right], target, sha256=_sha(payload), progress=False)
    assert got.url == right and target.read_bytes() == payload

    other = tmp_path / "other.onnx"
    with pytest.raises(DownloadFailed) as failed:
        download([wrong], other, sha256=_sha(payload), progress=False)
    assert f"sha256 {_sha(bytes(corrupt))}, expected {_sha(payload)}" in str(failed.value)
    assert not other.exists() and not part_path(other).exists()


def test_404_then_mirror(server: FileServer, payload: bytes, tmp_path: Path) -> None:
    url = server.add("/m.onnx", payload)
    target = tmp_path / "m.onnx"
    got = download([server.url("/gone.onnx"), url], target, sha256=_sha(payload), progress=False)
    assert got.url == url and target.read_bytes() == payload
    with pytest.raises(DownloadFailed) as failed:
        download([server.url("/gone.onnx")], tmp_path / "x.onnx", progress=False)
    assert failed.value.reasons == [f"{server.url('/gone.onnx')}: HTTP 404 Not Found"]


def test_an_existing_part_file_is_resumed(
    server: FileServer, payload: bytes, tmp_path: Path
) -> None:
    url = server.add("/m.onnx", payload)
    target = tmp_path / "m.onnx"
    part_path(target).write_bytes(payload[:100_000])
    download([url], target, sha256=_sha(payload), size=len(payload), progress=False)
    assert target.read_bytes() == payload
    assert server.requests("/m.onnx") == [("/m.onnx", "bytes=100000-", len(payload) - 100_000)]


def test_a_server_without_range_support_restarts_from_zero(
    server: FileServer, payload: bytes, tmp_path: Path
) -> None:
    url = server.add("/m.onnx", payload, mode="no-range")
    target = tmp_path / "m.onnx"
    part_path(target).write_bytes(b"stale bytes of another file")
    download([url], target, sha256=_sha(payload), progress=False)
    assert target.read_bytes() == payload


def test_a_complete_part_file_is_checked_without_downloading_again(
    server: FileServer, payload: bytes, tmp_path: Path
) -> None:
    url = server.add("/m.onnx", payload)
    target = tmp_path / "m.onnx"
    part_path(target).write_bytes(payload)
    download([url], target, sha256=_sha(payload), size=len(payload), progress=False)
    assert target.read_bytes() == payload and server.requests("/m.onnx") == []


def test_without_a_hash_the_check_decides_and_a_failed_check_leaves_nothing(
    server: FileServer, payload: bytes, tmp_path: Path
) -> None:
    url = server.add("/m.onnx", payload)
    seen: list[bytes] = []

    def accept(part: Path) -> None:
        seen.append(part.read_bytes())

    got = download([url], tmp_path / "a.onnx", check=accept, progress=False)
    assert seen == [payload] and got.sha256 == _sha(payload)

    def reject(part: Path) -> None:
        raise ValueError("outputs do not match")

    target = tmp_path / "b.onnx"
    with pytest.raises(DownloadFailed, match="outputs do not match"):
        download([url], target, check=reject, progress=False)
    assert not target.exists() and not part_path(target).exists()


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_a_part_file_planted_as_a_link_is_refused_and_its_target_untouched(
    server: FileServer, payload: bytes, tmp_path: Path, link: str
) -> None:
    """A link named like a partial download in a models folder others may write must not
    redirect the download into another file (a victim file grew to the model's size)."""
    url = server.add("/m.onnx", payload)
    target = tmp_path / "models" / "m.onnx"
    target.parent.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"the user's own file")
    if link == "symbolic":
        part_path(target).symlink_to(victim)
    else:
        os.link(victim, part_path(target))
    with pytest.raises(OSError, match="refused") as refused:
        download([url], target, sha256=_sha(payload), size=len(payload), progress=False)
    assert str(part_path(target)) in str(refused.value)
    assert victim.read_bytes() == b"the user's own file"
    assert not target.exists() and server.requests("/m.onnx") == []


def test_an_unknown_host_or_a_closed_port_is_said_in_words_with_the_folder_to_fill(
    tmp_path: Path, testdata: Path
) -> None:
    with socket.socket() as closed:  # a port nothing listens on once closed
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    urls = ["http://livecam-no-such-host.invalid/m.onnx", f"http://127.0.0.1:{port}/m.onnx"]
    with pytest.raises(DownloadFailed) as failed:
        download(urls, tmp_path / "m.onnx", progress=False)
    dns, refused = failed.value.reasons
    assert dns.startswith(
        f"{urls[0]}: cannot find the server livecam-no-such-host.invalid (no network, or its "
        "name does not resolve: "
    ), dns
    assert refused == f"{urls[1]}: 127.0.0.1 refused the connection"

    entry = dataclasses.replace(
        load_manifest()["mobilefacenet"], source="download", urls=(urls[0],)
    )
    store = ModelStore({entry.name: entry}, models_dir=tmp_path / "models", data_dir=tmp_path)
    with pytest.raises(ModelError) as error:
        store.fetch(entry, progress=False)
    assert error.value.message.startswith(
        "mobilefacenet.onnx (mobilefacenet) could not be downloaded"
    )
    assert error.value.hint == (
        "check the network connection and try again; or download mobilefacenet.onnx (from "
        f"{urls[0]}) by hand into {tmp_path / 'models'}, then try again"
    )
