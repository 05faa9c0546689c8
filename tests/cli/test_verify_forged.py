"""`livecam verify` treats every provenance field as untrusted: a marked file whose tag
or manifest was forged (any type, any nesting, any size, in every field) is reported,
its damaged fields named, and the invisible mark is still looked for and found (exit 0:
marked). Such files used to end in "unexpected TypeError" with exit 1, the "not marked"
status. Fuzzed with hypothesis: the .mkv tag (unsigned: anyone can write it) and a PNG
re-signed by anyone with a throwaway key and odd parameters.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import c2pa
import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from livecam.cli.main import main as cli_main
from livecam.sinks.recording.provenance import Provenance
from livecam.sinks.recording.provenance.manifest import (
    C2PA_TYPES,
    TAG_KEY,
    FileFacts,
    SwapDetails,
    manifest_definition,
)
from livecam.sinks.recording.provenance.signing import C2PA_SETTINGS, _remux_with_tag

REPO = Path(__file__).resolve().parents[2]
FACE = REPO / "assets" / "grace_hopper.jpg"

# values JSON can carry (the C2PA builder refuses Infinity, as JSON does)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
FIELDS = ["action", "digitalSourceType", "models", "preset", "watermark", "generator"]
#: the cases seen in the field, besides what hypothesis draws
DEEP = "[" * 200_000 + "]" * 200_000
SEEN = ['{"models": 5}', '{"models": null}', DEEP, '{"models": ' + DEEP + "}", "x" * 1_000_000]


def tag_texts() -> st.SearchStrategy[str]:
    statements = st.fixed_dictionaries({}, optional=dict.fromkeys(FIELDS, json_values))
    return st.sampled_from(SEEN) | statements.map(json.dumps) | json_values.map(json.dumps)


@pytest.fixture(scope="module")
def marked(tmp_path_factory: pytest.TempPathFactory, testdata: Path) -> dict[str, Path]:
    """A marked .mkv and a marked, signed .png from `livecam run` (lite preset)."""
    folder = tmp_path_factory.mktemp("marked")
    clip = testdata / "video" / "liveportrait_d6.mp4"
    args = ["run", "--source", str(clip), "--face", str(FACE), "--frames", "12", "--quiet"]
    assert cli_main([*args, "--sink", str(folder / "m.mkv"), "--sink", str(folder / "m.png")]) == 0
    return {".mkv": folder / "m.mkv", ".png": folder / "m.png"}


def verify(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, str]:
    capsys.readouterr()
    code = cli_main(["verify", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "unexpected" not in err, err
    return code, out


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=tag_texts())
def test_a_forged_mkv_tag_is_reported_and_the_mark_still_found(
    text: str,
    marked: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    forged = tmp_path / "forged.mkv"
    _remux_with_tag(marked[".mkv"], forged, text)
    code, out = verify(capsys, forged)
    assert code == 0, out  # marked: the invisible mark is found whatever the tag says
    assert "invisible mark: FOUND" in out and "LiveCam container tag: present" in out, out
    assert len(out) < 4000, out  # no field is echoed whole


def test_the_forged_tags_seen_name_their_damage(
    marked: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for text, says in [
        ('{"models": 5}', "DAMAGED fields: models"),
        ('{"models": null, "preset": [1]}', "DAMAGED fields: preset"),
        (DEEP, f"a damaged {TAG_KEY} tag"),
    ]:
        forged = tmp_path / "forged.mkv"
        _remux_with_tag(marked[".mkv"], forged, text)
        code, out = verify(capsys, forged)
        assert code == 0 and says in out, out


def resign(png: Path, parameters: Any, key_folder: Path) -> bytes:
    """The pixels of ``png`` (the mark in them) in a new PNG signed with a throwaway key
    by a manifest whose AI action has ``parameters``."""
    pixels = cv2.imread(str(png), cv2.IMREAD_COLOR)
    assert pixels is not None
    ok, data = cv2.imencode(".png", pixels)
    assert ok
    details = SwapDetails("lite", (), None)
    definition = manifest_definition(details, FileFacts("forged.png", 1, 1), 0x1234)
    assert definition is not None
    definition = copy.deepcopy(definition)
    definition["assertions"][0]["data"]["actions"][1]["parameters"] = parameters
    builder = c2pa.Builder(definition, context=c2pa.Context.from_dict(C2PA_SETTINGS))
    signer = Provenance(lambda: details, key_folder=key_folder).signer
    out = io.BytesIO()
    builder.sign(signer, C2PA_TYPES[".png"], io.BytesIO(data.tobytes()), out)
    return out.getvalue()


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(parameters=st.fixed_dictionaries({}, optional=dict.fromkeys(FIELDS, json_values)))
def test_a_png_resigned_with_odd_parameters_is_reported_and_the_mark_still_found(
    parameters: dict[str, Any],
    marked: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    forged = tmp_path / "forged.png"
    forged.write_bytes(resign(marked[".png"], parameters, tmp_path / "throwaway"))
    code, out = verify(capsys, forged)
    assert code == 0, out
    assert "invisible mark: FOUND" in out and "C2PA manifest: present" in out, out


def test_a_png_whose_header_claims_60000x60000_is_refused_before_decoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok, data = cv2.imencode(".png", np.zeros((8, 8, 3), np.uint8))
    assert ok
    png = bytearray(data.tobytes())
    png[16:24] = (60000).to_bytes(4, "big") * 2  # IHDR width and height
    huge = tmp_path / "huge.png"
    huge.write_bytes(bytes(png))
    capsys.readouterr()
    code = cli_main(["verify", str(huge)])
    err = capsys.readouterr().err
    assert code == 2, err
    [line] = [line for line in err.splitlines() if line.strip()]
    assert "60000x60000" in line and "too large to decode" in line, line
