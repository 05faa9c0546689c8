"""Seeded fuzzing of `livecam run`: random options and config files, run in process.

Every run must end in one of two ways: a clean run (exit 0) or a one-line error (exit 2,
one ``error:`` line). Never a traceback, never a pipeline thread that crashed (an error
logged or printed as "crashed", or an exception reaching ``threading.excepthook``), never
a thread left running. Runs are kept short (``--frames`` 1-3, small frames).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from livecam.cli.main import main
from livecam.config.option_map import FIELD_OPTIONS, config_settings
from livecam.config.setting import Setting, is_list, literal_choices, number_text, plain_type

REPO = Path(__file__).resolve().parents[2]
LONG = "a" * 300

#: test values of options, (good, bad); a value None is a flag. ``{tmp}``, ``{face}``,
#: ``{image}``, ``{video}`` and ``{yunet}`` are filled in per test. The face photo is rare
#: among the good values: a run with the swap stage loads its models (about a second).
#: Every other option's values come from its config field (``derived``): its choices, the
#: ends of its range and just beyond them, and flags; these are added to them.
VALUES: dict[str, tuple[list[str | None], list[str | None]]] = {
    "--source": (["synthetic", "synthetic", "{image}", "{video}"],
                 ["{tmp}", "{tmp}/missing.mp4", LONG, "screen", "camera:7", "0", "", " "]),
    "--fps": (["30", "60", "240", "29.97"],
              ["0", "-5", "1e-300", "1e300", "nan", "inf", "241", "x"]),
    "--output-fps": (["30", "120", "240"], ["1e-10", "0", "nan", "1000", "y"]),
    "--size": (["160x120", "320x240", "64x48", "16x16"], ["15x15", "0x0", "abc", "7682x4320"]),
    "--obs-host": (["127.0.0.1", "localhost"], ["", " "]),
    "--obs-audio-input": (["Mic/Aux"], ["", " "]),
    "--obs-blank-scene": (["BRB"], ["", " "]),
    "--sink": (["null", "{tmp}/o.png", "{tmp}/o.mp4"],
               ["bogus.xyz", "window", "auto", "virtualcam", "{tmp}/nofolder/o.mp4", "",
                "{tmp}/no/deeper/o.mp4"]),
    "--stage": (["passthrough", "facebox"], ["blur", "swap"]),
    "--face": (["{face}"], ["{tmp}", "/dev/zero", "{tmp}/garbage.jpg", LONG, "{image}"]),
    "--face-index": (["0"], ["1", "-1", "1000", "x"]),
    "--select": (["one", "all"], ["reference", "biggest"]),
    "--reference": ([], ["{face}", "{tmp}", "/dev/zero"]),
    "--preset": (["lite", "offline", "auto"], ["standard", "quality"]),
    "--detect-every": (["1", "3", "60"], ["0", "61"]),
    "--detect-size": (["160", "4096"], ["159", "5000"]),
    "--blend": (["feather", "seamless"], ["poisson"]),
    "--color": (["lab", "rct", "none"], ["hsv"]),
    "--face-motion": (["{face}"], ["{tmp}", LONG, "/dev/zero"]),
    "--batch": (["1", "4"], ["9", "0"]),
    "--yunet": (["{yunet}"], ["{tmp}/garbage.jpg", "{tmp}"]),
    "--stats-json": (["{tmp}/s.json", "/dev/null", "-"],
                     ["{tmp}/nofolder/s.json", "{tmp}", "{tmp}/s.txt", "", "{face}"]),
    "--camera-backend": ([], ["auto", "nope"]),  # no camera here: out of scope
    "--no-mjpg": ([], [None]),
    "--vcam-backend": ([], ["no-such-backend"]),
    "--vcam-device": ([], ["/dev/null"]),
    "--label": (["AI-modified"], ["", " ", "caf\u00e9", LONG]),
    "--mask-padding": ([], ["0,0,0,101", "1,2,3", "a,b,c,d"]),
    "--pixel-boost": ([], ["3", "0", "x"]),
    "--map": ([], ["{face}", "{face}={tmp}", "=", "{face}={face}"]),
    **{f"--{part}-model": ([], ["{tmp}/garbage.jpg", "{tmp}"]) for part in
       ("detector", "recognizer", "swapper", "enhancer")},
    # model names: good ones would download (bad: a licence not accepted, or no network)
    "--swapper": ([], ["nope"]),
    "--enhancer": ([], ["nope"]),
    "--save-config": ([], ["{tmp}/saved.toml", "{tmp}/nofolder/c.toml", "{tmp}"]),
    # the remote swap (used by the swap stage only; nothing listens on port 1)
    "--remote": (["grpc://127.0.0.1:1"], ["http://127.0.0.1:1", "grpc://", "grpc://h:99999", LONG]),
    "--remote-token": (["secret"], []),
    "--remote-ca": ([], ["{tmp}/missing.pem", "{tmp}"]),
}  # fmt: skip
#: the config field options the fuzz leaves out, and why
NOT_FUZZED: dict[str, str] = {
    "--frames": "drawn on its own (FRAMES_GOOD, FRAMES_BAD): a run stays short",
}


def derived(info: Setting, hint: Any) -> tuple[list[str | None], list[str | None]]:
    """Test values of an option from its config field: (good, bad)."""
    if plain_type(hint) is bool:
        return [None], []
    choices = info.choices() if info.choices is not None else literal_choices(hint)
    if choices is not None:
        return [str(c) for c in choices], ["nope"]
    if info.range is not None and not is_list(hint) and info.parse is None:
        low, high = info.range
        bad: list[str | None] = [number_text(low - 1), number_text(high + 1), "x"]
        return [number_text(low), number_text(high)], bad + ["nan"] * (plain_type(hint) is float)
    return [], []


def run_options() -> list[tuple[str, list[str | None], list[str | None], str]]:
    """(option, good values, bad values, its section) of every option of `livecam run`
    that sets a config field (``--save-config`` too); neural options only bad."""
    found = []
    for name, _field, hint, info in config_settings():
        assert info.option is not None
        good, bad = derived(info, hint)
        extra_good, extra_bad = VALUES.get(info.option, ([], []))
        good = extra_good if info.option in VALUES else good
        bad = list(dict.fromkeys([*bad, *extra_bad]))
        section = name.partition(".")[0]
        if info.group is not None:  # the neural presets' options: models, downloads, GPUs
            good, bad = [], bad or good
        found.append((info.option, good, bad, section))
        if info.off is not None:  # --realtime
            found.append((info.off, good, [], section))
    found.append(("--save-config", *VALUES["--save-config"], "run"))
    return [o for o in found if o[0] not in NOT_FUZZED]


OPTIONS = run_options()
#: options every run has unless it draws its own
BASE = {"--source": "synthetic", "--size": "160x120", "--sink": "null"}
#: options of the swap stage, drawn (good) only together with --face
SWAP_OPTIONS = tuple(o for o, _, _, section in OPTIONS if section == "swap" and o != "--face")
FRAMES_GOOD = ["1", "2", "3"]
FRAMES_BAD = ["0", "-1", "x", "1000000001"]
#: config fields with good TOML values; a bad one is any field with any of BAD_TOML
CONFIG_GOOD = {
    "source.spec": ['"synthetic"'],
    "source.fps": ["30", "240", "24.5"],
    "source.size": ["[160, 120]", "[7680, 4320]"],  # the command line's --size wins
    "source.unpaced": ["true", "false"],
    "source.reopen_interval_s": ["0.05", "60"],
    "buffer.capacity": ["1", "64"],
    "buffer.lossless": ["true", "false"],
    "output.sinks": ['["null"]'],
    "output.fps": ["30", "240"],
    "swap.detect.smoothing": ["0", "10"],
    "swap.detect.detect_every": ["1", "60"],
    "run.status_interval_s": ["0.1", "3600"],
    "run.frames": ["1000000000"],  # the command line's --frames wins
}
BAD_FIELDS = [*CONFIG_GOOD, "swap.face_index", "swap.select.reference_threshold", "run.x", "nope.x"]
BAD_TOML = [
    "0", "-1", "1e10", "1e-300", "inf", "nan", '"x"', "[15, 15]", "[]", '""', "65", "true",
    "[1, 2, 3]", "{ a = 1 }",
]  # fmt: skip


def command(
    options: list[tuple[str, str | None]],
    frames: str,
    config: dict[str, str] | None,
) -> tuple[list[str], str | None]:
    """The command line (with placeholders) and the config file's text."""
    args = ["run", "--frames", frames, "--quiet"]
    given = dict(options)
    for option, value in BASE.items():
        if option not in given:
            args += [option, value]
    for option, drawn in options:
        args += [option] if drawn is None else [option, drawn]
    if config is None:
        return args, None
    sections: dict[str, list[str]] = {}
    for name, value in config.items():
        section, _, key = name.partition(".")
        sections.setdefault(section, []).append(f"{key} = {value}")
    text = "".join(f"[{s}]\n" + "\n".join(lines) + "\n" for s, lines in sections.items())
    return [*args, "--config", "{tmp}/fuzz.toml"], text


def choices(bad: bool, swap: bool = False) -> list[tuple[str, str | None]]:
    """Bad choices of every option, or good ones of the swap options or the others."""
    if bad:
        return [(o, v) for o, _, wrong, _ in OPTIONS for v in wrong]
    return [
        (o, v)
        for o, good, _, _ in OPTIONS
        for v in good
        if (o in SWAP_OPTIONS) == swap and o != "--face"
    ]


def unique(
    choice: st.SearchStrategy[tuple[str, str | None]], n: int
) -> st.SearchStrategy[list[tuple[str, str | None]]]:
    return st.lists(choice, max_size=n, unique_by=lambda c: c[0])


good_config = st.lists(
    st.sampled_from([(k, v) for k, values in CONFIG_GOOD.items() for v in values]),
    max_size=3,
    unique_by=lambda kv: kv[0],
).map(dict)
bad_config = st.dictionaries(
    st.sampled_from(BAD_FIELDS), st.sampled_from(BAD_TOML), min_size=1, max_size=2
)


@st.composite
def commands(draw: st.DrawFn) -> tuple[list[str], str | None]:
    """Good options (one run in twelve swaps faces), and at most one bad thing: an option,
    ``--frames`` or a config field."""
    options = draw(unique(st.sampled_from(choices(False)), 4))
    if draw(st.integers(0, 11)) == 0:
        options += [("--face", "{face}"), *draw(unique(st.sampled_from(choices(False, True)), 3))]
    bad = draw(st.sampled_from(["none", "none", "option", "frames", "config"]))
    if bad == "option":
        option = draw(st.sampled_from(choices(True)))
        options = [o for o in options if o[0] != option[0]] + [option]
    frames = draw(st.sampled_from(FRAMES_BAD if bad == "frames" else FRAMES_GOOD))
    config = draw(bad_config if bad == "config" else st.none() | good_config)
    return command(options, frames, config)


def test_every_option_that_sets_a_config_field_is_fuzzed() -> None:
    """A new config option lands in the fuzz by itself (values from its field), or the
    fuzz says why not; every one has a value to draw."""
    fuzzed = {o for o, good, bad, _ in OPTIONS if good or bad}
    options = {option for option, _ in FIELD_OPTIONS.values()}
    assert options - set(NOT_FUZZED) <= fuzzed, sorted(options - fuzzed - set(NOT_FUZZED))
    assert "--fps" in fuzzed and "--mouth-mask" in fuzzed and "--reuse-max" in fuzzed


class Crashes(logging.Handler):
    """Collects log records of crashed pipeline threads."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "crashed" in message or record.exc_info is not None:
            self.messages.append(message)


@pytest.fixture
def crashes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Crash reports of this test: crashed workers' logs and uncaught thread exceptions."""
    handler = Crashes()
    logger = logging.getLogger("livecam")
    logger.addHandler(handler)
    uncaught: list[str] = []
    monkeypatch.setattr(
        threading, "excepthook", lambda a: uncaught.append(f"{a.thread}: {a.exc_value!r}")
    )
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
        assert not uncaught, uncaught


@pytest.fixture
def places(tmp_path: Path, testdata: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """What the placeholders stand for; no display, so windows and screens are errors."""
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    (tmp_path / "garbage.jpg").write_bytes(b"not an image")
    return {
        "{tmp}": str(tmp_path),
        "{face}": str(REPO / "assets" / "grace_hopper.jpg"),
        "{image}": str(testdata / "faces" / "obama_small_320x240.jpg"),
        "{video}": str(testdata / "video" / "openmpf_video_01_short_h264_aac.mp4"),
        "{yunet}": str(testdata / "models" / "face_detection_yunet_2023mar.onnx"),
    }


def fill(text: str, places: dict[str, str]) -> str:
    for key, value in places.items():
        text = text.replace(key, value)
    return text


# 100 fixed examples keep the suite within its 15 minutes (every option stays in the pool, see
# test_every_option_that_sets_a_config_field_is_fuzzed); bench/fuzz_cli.py fuzzes wider,
# with fresh seeds, in real processes
@pytest.mark.timeout(900)  # 100 examples: 1 to 2 minutes on a loaded machine
@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,  # the same examples on every run (a fixed seed)
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=commands())
def test_random_command_lines_run_cleanly_or_fail_in_one_line(
    case: tuple[list[str], str | None],
    places: dict[str, str],
    crashes: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    args, config = case
    if config is not None:
        Path(places["{tmp}"], "fuzz.toml").write_text(config)
    argv = [fill(a, places) for a in args]
    crashes.clear()
    code = main(argv)
    out, err = capsys.readouterr()
    shown = f"livecam {' '.join(argv)}\nconfig:\n{config}\nexit {code}\n{err[-3000:]}"
    assert "Traceback" not in err, shown
    assert not crashes and "crashed" not in err, shown
    assert "did not stop" not in err, shown
    assert not [t.name for t in threading.enumerate() if t.name.startswith("livecam-")], shown
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    event(f"exit {code}")
    if code == 0:
        assert not errors, shown
    else:
        assert code == 2 and len(errors) == 1, shown
