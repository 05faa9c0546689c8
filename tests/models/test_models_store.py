"""The model store: the real manifest, lookup and verification with the real ONNX files of
the shared test data, downloads from a real HTTP server on 127.0.0.1, licence acceptance,
unknown hashes recorded after the structural check, user-supplied files, and the
`livecam models` command."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from http_files import FileServer
from onnx import TensorProto, helper

from livecam.cli.main import main
from livecam.errors import ModelError
from livecam.models.manifest import (
    SOURCES,
    TASKS,
    ModelEntry,
    contract_problems,
    load_manifest,
    model_identity,
)
from livecam.models.store import ModelStore

COMMON_NAMES = [
    "yunet-2023mar",
    "scrfd-10g",
    "scrfd-2.5g",
    "scrfd-500m",
    "pfld-68",
    "slim-68",
    "2d106det",
    "mobilefacenet",
    "arcface-w600k-r50",
    "inswapper-128",
    "inswapper-128-fp16",
    "hyperswap-1a-256",
    "hyperswap-1b-256",
    "hyperswap-1c-256",
    "gfpgan-1.4",
    "codeformer",
    "gpen-bfr-256",
    "gpen-bfr-512",
    "bisenet-resnet34",
]
# name -> (file in testdata/models, sha256 from SOURCES.md)
TESTDATA = {
    "yunet-2023mar": (
        "face_detection_yunet_2023mar.onnx",
        "8f2383e4dd3cfbb4553ea8718107fc0423210dc964f9f4280604804ed2552fa4",
    ),
    "pfld-68": (
        "landmarks_68_pfld.onnx",
        "2cb48550d2535bea4b1bba187fc37c407308806f870a022ef5cf8605de7c07e1",
    ),
    "slim-68": (
        "slim_160_latest.onnx",
        "6cf9b509fba3a3c5f89cbcfb19ce0d503254da1d854e9e977a3c45ba5d16dab8",
    ),
    "mobilefacenet": (
        "mobilefacenet.onnx",
        "f055d9c9a4d826d198c42666590fdefa0fdc1374a75ccb6306c3d1b1bf8f74c5",
    ),
    "scrfd-2.5g": (
        "scrfd_2.5g_kps.onnx",
        "9c162a817c7dd32d35d1f1c6ae6445032d6e73c6c5fe61d8b5b663ba8bc86b30",
    ),
    "scrfd-500m": (
        "scrfd_500m_kps.onnx",
        "517cb1980c72422e676738fc45431700fb7cbee56d0f825b623ee427b3e5ce58",
    ),
}


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private user data folder (platformdirs follows XDG_DATA_HOME)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("LIVECAM_MODELS_DIR", raising=False)
    return tmp_path / "xdg" / "livecam"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _manifest(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "manifest.toml"
    path.write_text(text)
    return path


def _entry_toml(name: str, file: str, urls: list[str], sha: str, size: int, extra: str) -> str:
    return f"""
[models.{name}]
task = "recognizer"
part = "arcface"
file = "{file}"
urls = {json.dumps(urls)}
size = {size}
sha256 = "{sha}"
licence = "MIT"
commercial = true
{extra}
[models.{name}.contract]
input_size = 112
template = "arcface_112"
mean = 127.5
std = 127.5
color = "rgb"
[models.{name}.facts]
dim = 128
"""


MOBILEFACENET_IO = """inputs = [{ name = "input", shape = [1, 3, 112, 112] }]
outputs = [{ name = "output", shape = [1, 128] }]
"""


def _tiny_recognizer(path: Path, dim: int = 128) -> Path:
    """An ONNX model with a recognizer's I/O: input [1,3,112,112] -> output [1,dim]."""
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 112, 112])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, dim])
    w = helper.make_tensor("w", TensorProto.FLOAT, [3, dim], [0.01] * (3 * dim))
    nodes = [
        helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["flat"]),
        helper.make_node("MatMul", ["flat", "w"], ["output"]),
    ]
    graph = helper.make_graph(nodes, "tiny", [x], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


# ---------------------------------------------------------------- the manifest


def test_the_manifest_has_every_model_with_a_task_urls_licence_and_contract() -> None:
    manifest = load_manifest()
    assert list(manifest) == COMMON_NAMES
    for entry in manifest.values():
        assert entry.task in TASKS and entry.part and entry.licence
        assert entry.urls and all(u.startswith("https://") for u in entry.urls)
        # YuNet runs in OpenCV: its input contract is a fact, not constructor keywords
        where = entry.facts if entry.part == "yunet" else entry.contract
        assert {"input_size", "mean", "std", "color"} <= set(where), entry.name
        assert entry.inputs, entry.name
    by_source = {s: [n for n, e in manifest.items() if e.source == s] for s in SOURCES}
    assert by_source["bundled"] == ["yunet-2023mar", "slim-68", "mobilefacenet"]  # lite's
    # what the graph does is a fact, never a constructor keyword
    assert manifest["scrfd-10g"].facts == {"strides": [8, 16, 32], "anchors": 2}
    assert manifest["arcface-w600k-r50"].facts == {"dim": 512}
    assert all("points" not in e.contract and "dim" not in e.contract for e in manifest.values())
    restricted = {n for n, e in manifest.items() if not e.commercial}
    assert {"inswapper-128", "scrfd-10g", "arcface-w600k-r50", "gpen-bfr-512"} <= restricted
    assert {"hyperswap-1a-256", "codeformer"} <= restricted
    assert "ResearchRAIL" in manifest["hyperswap-1a-256"].licence
    assert manifest["hyperswap-1a-256"].sha256 == "" and "unknown" in (
        manifest["hyperswap-1a-256"].hash_source
    )
    assert manifest["inswapper-128"].sha256.startswith("e4a3f08c")
    assert manifest["inswapper-128"].size == 554_253_681
    for name, (file, sha) in TESTDATA.items():
        assert (manifest[name].file, manifest[name].sha256) == (file, sha)


def test_the_testdata_models_fit_their_own_contracts(testdata: Path) -> None:
    manifest = load_manifest()
    for name, (file, _) in TESTDATA.items():
        assert contract_problems(testdata / "models" / file, manifest[name]) == [], name
    # and a model of another role does not
    problems = contract_problems(testdata / "models" / "mobilefacenet.onnx", manifest["pfld-68"])
    assert problems == ["output output[1,128] does not fit output[1,136]"]


def test_a_malformed_manifest_names_the_field(tmp_path: Path) -> None:
    bad = _entry_toml("x", "x.onnx", [], "", 0, MOBILEFACENET_IO).replace(
        'task = "recognizer"', 'task = "swap"'
    )
    with pytest.raises(ModelError, match=r"models\.x\.task must be one of detector"):
        load_manifest(_manifest(tmp_path, bad))


def test_a_misspelt_manifest_key_or_source_fails_to_load(tmp_path: Path) -> None:
    good = _entry_toml("x", "x.onnx", [], "", 0, MOBILEFACENET_IO)
    assert load_manifest(_manifest(tmp_path, good))["x"].source == "download"
    typo = good.replace('licence = "MIT"', 'licence = "MIT"\nhash_sorce = "typo"')
    with pytest.raises(ModelError, match=r"models\.x\.hash_sorce is not a manifest key"):
        load_manifest(_manifest(tmp_path, typo))
    unknown = good.replace('part = "arcface"', 'part = "arcface"\nsource = "wheel"')
    with pytest.raises(ModelError, match=r"models\.x\.source must be one of download"):
        load_manifest(_manifest(tmp_path, unknown))
    gone = good.replace('part = "arcface"', 'part = "arcface"\nsource = "package"')
    with pytest.raises(
        ModelError, match=r"(?m)models\.x\.source must be one of download, bundled$"
    ):
        load_manifest(_manifest(tmp_path, gone))  # no Python package's files any more


# ---------------------------------------------------------------- lookup and verification


def test_testdata_serves_the_lite_models_verified(testdata: Path, data_dir: Path) -> None:
    store = ModelStore(models_dir=testdata / "models")
    paths = store.require(
        ["pfld-68", "mobilefacenet", "yunet-2023mar"], download=False, accept_licence=False
    )
    for name, path in paths.items():
        assert path == testdata / "models" / TESTDATA[name][0]
        assert _sha(path) == TESTDATA[name][1]


def test_lookup_order_env_then_data_then_bundled(
    testdata: Path, data_dir: Path, tmp_path: Path
) -> None:
    env = tmp_path / "env"
    env.mkdir()
    store = ModelStore(models_dir=env)
    assert [w for w, _ in store.folders][:2] == ["env", "data"]
    # in this checkout: its models/ folder (beside livecam/), then LiveCam's assets/
    repo = Path(__file__).resolve().parents[2]
    assert [f for w, f in store.folders if w in ("checkout", "bundled")] == [
        repo / "models",
        repo / "assets",
    ]
    assert store.download_dir == env
    # the bundled YuNet is found when no folder has it
    assert store.locate("yunet-2023mar") is not None
    assert store.candidates("yunet-2023mar")[-1].where == "bundled"
    (data_dir / "models").mkdir(parents=True)
    shutil.copy(testdata / "models" / "mobilefacenet.onnx", data_dir / "models")
    shutil.copy(testdata / "models" / "mobilefacenet.onnx", env)
    # MobileFaceNet ships inside LiveCam too: the user's folders come first
    assert [f.where for f in store.candidates("mobilefacenet")] == ["env", "data", "bundled"]
    assert store.locate("mobilefacenet") == env / "mobilefacenet.onnx"


def test_offline_error_names_every_missing_file_url_and_folder(
    tmp_path: Path, data_dir: Path
) -> None:
    store = ModelStore(models_dir=tmp_path / "none")
    names = ["inswapper-128", "hyperswap-1a-256", "2d106det"]
    with pytest.raises(ModelError) as err:
        store.require(names, download=False, accept_licence=True)
    text = str(err.value)
    for name in names:
        entry = store.entry(name)
        assert entry.file in text and name in text
        assert all(url in text for url in entry.urls)
    assert f"put them in {tmp_path / 'none'}" in err.value.hint
    assert "livecam models fetch inswapper-128 hyperswap-1a-256 2d106det" in err.value.hint


def test_a_truncated_copy_is_never_used_and_is_fetched_again(
    testdata: Path, data_dir: Path, tmp_path: Path, server: FileServer
) -> None:
    # under a name of its own: LiveCam's bundled copy of mobilefacenet.onnx is not found
    real = (testdata / "models" / "mobilefacenet.onnx").read_bytes()
    url = server.add("/mfn.onnx", real)
    sha = hashlib.sha256(real).hexdigest()
    manifest = load_manifest(
        _manifest(tmp_path, _entry_toml("mfn", "mfn.onnx", [url], sha, len(real), ""))
    )
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "mfn.onnx").write_bytes(real[:1000])
    store = ModelStore(manifest, models_dir=folder)
    assert store.locate("mfn") is None
    with pytest.raises(ModelError, match="1000 bytes, expected 3973728"):
        store.require(["mfn"], download=False, accept_licence=False)
    paths = store.require(["mfn"], download=True, accept_licence=False, progress=False)
    assert paths["mfn"].read_bytes() == real
    # a copy of the right size but wrong content is caught by its sha256
    corrupt = bytearray(real)
    corrupt[5000] ^= 1
    paths["mfn"].write_bytes(bytes(corrupt))
    assert store.locate("mfn") is not None  # the cheap size check can't tell
    with pytest.raises(ModelError, match=f"expected {sha}"):
        store.require(["mfn"], download=False, accept_licence=False)


def test_licences_must_be_accepted_once(testdata: Path, data_dir: Path) -> None:
    store = ModelStore(models_dir=testdata / "models")
    with pytest.raises(ModelError) as err:
        store.require(["scrfd-500m", "pfld-68"], download=False, accept_licence=False)
    assert "licence not accepted for scrfd-500m: InsightFace SCRFD weights" in err.value.message
    assert "pfld-68" not in err.value.message  # MIT: nothing to accept
    assert "--accept-licence" in err.value.hint
    assert not (data_dir / "accepted_licences.json").exists()

    store.require(["scrfd-500m"], download=False, accept_licence=True)
    record = json.loads((data_dir / "accepted_licences.json").read_text())
    assert record["scrfd-500m"]["licence"] == store.entry("scrfd-500m").licence
    # remembered, also by a new store
    ModelStore(models_dir=testdata / "models").require(
        ["scrfd-500m"], download=False, accept_licence=False
    )
    asked: list[str] = []

    def ask(entry: ModelEntry) -> bool:
        asked.append(entry.name)
        return True

    store.check_licences([store.entry("scrfd-2.5g")], accept=False, ask=ask)
    assert asked == ["scrfd-2.5g"] and store.licence_accepted(store.entry("scrfd-2.5g"))


def test_unknown_hash_is_checked_structurally_and_recorded(
    testdata: Path, data_dir: Path, tmp_path: Path, server: FileServer
) -> None:
    real = (testdata / "models" / "mobilefacenet.onnx").read_bytes()
    url = server.add("/m.onnx", real)
    wrong_io = MOBILEFACENET_IO.replace("[1, 128]", "[1, 512]")
    text = _entry_toml("good", "good.onnx", [url], "", 0, MOBILEFACENET_IO)
    text += _entry_toml("wrong-io", "wrong.onnx", [url], "", 0, wrong_io)
    manifest = load_manifest(_manifest(tmp_path, text))
    folder = tmp_path / "models"
    store = ModelStore(manifest, models_dir=folder)

    path = store.require(["good"], download=True, accept_licence=False, progress=False)["good"]
    recorded = json.loads((data_dir / "known_hashes.json").read_text())["good"]
    assert recorded["sha256"] == hashlib.sha256(real).hexdigest() == store.recorded_hash("good")
    assert (recorded["size"], recorded["source"]) == (len(real), url)

    # from now on the file must keep that hash
    path.write_bytes((testdata / "models" / "landmarks_68_pfld.onnx").read_bytes())
    with pytest.raises(ModelError, match="from known_hashes.json"):
        store.require(["good"], download=False, accept_licence=False)

    # a download that does not fit the contract is never kept
    with pytest.raises(ModelError, match=r"output output\[1,128\] does not fit output\[1,512\]"):
        store.require(["wrong-io"], download=True, accept_licence=False, progress=False)
    assert not (folder / "wrong.onnx").exists() and store.recorded_hash("wrong-io") == ""


def test_mirrors_are_tried_in_order_by_the_store(
    testdata: Path, data_dir: Path, tmp_path: Path, server: FileServer
) -> None:
    real = (testdata / "models" / "mobilefacenet.onnx").read_bytes()
    urls = [server.url("/missing.onnx"), server.add("/m.onnx", real, mode="truncate", times=1)]
    sha = hashlib.sha256(real).hexdigest()
    manifest = load_manifest(
        _manifest(tmp_path, _entry_toml("mfn", "mfn.onnx", urls, sha, len(real), ""))
    )
    store = ModelStore(manifest, models_dir=tmp_path / "models")
    path = store.require(["mfn"], download=True, accept_licence=False, progress=False)["mfn"]
    assert _sha(path) == sha and not store.part_file("mfn").exists()
    assert [r[1] for r in server.requests("/m.onnx")] == [None, f"bytes={len(real) // 2}-"]


def test_user_files_are_checked_against_the_role(
    testdata: Path, data_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = ModelStore(models_dir=tmp_path / "none")
    known = shutil.copy(testdata / "models" / "mobilefacenet.onnx", tmp_path / "renamed.onnx")
    assert store.user_file(known, "recognizer") == Path(known)

    tiny = _tiny_recognizer(tmp_path / "my_recognizer.onnx")
    with caplog.at_level(logging.WARNING, logger="livecam.models.store"):
        assert store.user_file(tiny, "recognizer") == tiny
    assert _sha(tiny) in caplog.text and "mobilefacenet" in caplog.text

    with pytest.raises(ModelError) as err:
        store.user_file(tiny, "swapper")
    assert "does not fit the swapper contract" in err.value.message
    assert "as inswapper-128: 1 inputs" in err.value.message
    with pytest.raises(ModelError, match="does not fit the arcface-w600k-r50 contract"):
        store.user_file(
            _tiny_recognizer(tmp_path / "r.onnx", dim=64), store.entry("arcface-w600k-r50")
        )
    with pytest.raises(ModelError, match="not found"):
        store.user_file(tmp_path / "nothing.onnx", "swapper")


def test_model_identity_names_the_content(testdata: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copy(testdata / "models" / "mobilefacenet.onnx", tmp_path))
    assert model_identity(copy) == "mobilefacenet-f055d9c9a4d8"
    copy.write_bytes(b"other bytes")
    os.utime(copy, ns=(1, 1))
    assert (
        model_identity(copy) == f"mobilefacenet-{hashlib.sha256(b'other bytes').hexdigest()[:12]}"
    )


# ---------------------------------------------------------------- the CLI


def test_models_list_path_and_verify_through_the_cli(
    testdata: Path,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LIVECAM_MODELS_DIR", str(testdata / "models"))
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line}
    assert rows["pfld-68"][:5] == ["pfld-68", "landmarker", "2.9", "MB", "yes"]
    assert rows["inswapper-128"][4:8] == ["no", "-", "no", "known"]
    assert rows["hyperswap-1a-256"][3:7] == ["no", "-", "no", "unknown"]

    assert main(["models", "path", "mobilefacenet"]) == 0
    assert capsys.readouterr().out.strip() == str(testdata / "models" / "mobilefacenet.onnx")

    assert main(["models", "verify"]) == 0
    out = capsys.readouterr().out
    assert f"ok   pfld-68: {testdata / 'models' / 'landmarks_68_pfld.onnx'}" in out

    assert main(["models", "path", "inswapper-128"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: 1 model file(s) missing: inswapper_128.onnx")
    assert len(err) == 2 and err[1].startswith("  fix: put them in")


def test_models_verify_reports_a_bad_file_with_exit_1(
    testdata: Path, data_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    data = bytearray((testdata / "models" / "landmarks_68_pfld.onnx").read_bytes())
    data[-10] ^= 1
    (folder / "landmarks_68_pfld.onnx").write_bytes(bytes(data))
    env = {**os.environ, "LIVECAM_MODELS_DIR": str(folder), "XDG_DATA_HOME": str(data_dir.parent)}
    livecam = Path(sys.executable).with_name("livecam")
    proc = subprocess.run(
        [livecam, "models", "verify", "pfld-68", "mobilefacenet", "scrfd-2.5g"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert f"BAD  pfld-68: {folder / 'landmarks_68_pfld.onnx'}: sha256 " in proc.stdout
    assert "--   scrfd-2.5g: not present" in proc.stdout
    assert "ok   mobilefacenet: " in proc.stdout  # LiveCam's own copy, its sha256 checked
    assert "Traceback" not in proc.stderr

    proc = subprocess.run(
        [livecam, "models", "fetch", "scrfd-500m"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: licence not accepted for scrfd-500m")
    assert "Traceback" not in proc.stderr


def test_models_list_says_which_model_files_are_links_and_where_they_point(
    testdata: Path,
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A link named like a model (planted, or the user's own) is not shown as a plain
    "present" file: the table says "link" and a line says where it points."""
    folder = tmp_path / "models"
    folder.mkdir()
    real = testdata / "models" / "landmarks_68_pfld.onnx"
    (folder / real.name).symlink_to(real)
    monkeypatch.setenv("LIVECAM_MODELS_DIR", str(folder))
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line}
    assert rows["pfld-68"][4] == "link"
    assert f"pfld-68: {folder / real.name} is a symbolic link to {real}" in out


def test_models_list_warns_when_the_models_folder_variable_names_a_file(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LIVECAM_MODELS_DIR", "/etc/passwd")
    main(["models", "list"])
    out = capsys.readouterr().out
    assert "WARNING: LIVECAM_MODELS_DIR=/etc/passwd is not a folder" in out
    assert "downloads go to" not in out, "never promise downloads into a file"
    assert "downloads cannot go to /etc/passwd (see the warning)" in out


@pytest.mark.parametrize("name", ["known_hashes.json", "accepted_licences.json"])
def test_a_deeply_nested_store_file_is_ignored_with_a_warning(
    data_dir: Path,
    name: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Like any other damaged store file (it was "unexpected RecursionError")."""
    data_dir.mkdir(parents=True)
    (data_dir / name).write_text("[" * 100_000 + "]" * 100_000)
    store = ModelStore()
    with caplog.at_level(logging.WARNING):
        assert main(["models", "list"]) == 0
        assert store.recorded_hash("pfld-68") == ""
        needing = [e for e in store.manifest.values() if e.needs_acceptance]
        assert not store.licence_accepted(needing[0])
    assert "unexpected" not in capsys.readouterr().err
    assert f"ignoring {data_dir / name}: it is damaged" in caplog.text
