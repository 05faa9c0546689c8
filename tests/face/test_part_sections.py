"""Each part gets its section of the swap config whole: the factories in face/build.py and
the swap stage's build (face/swap_stage.py) read no option of a part's section, they hand
the section to the part (``ClassicSwapper(classic)``, ``InSwapper.from_section(...,
neural, ...)``, ``SwapReuse.from_section(reuse, ...)``, ...). So a new option of any part
is its field in config/swap.py, its use in the part's module and a test: no line here.

The reads are found with ``ast`` (``<...>.SECTION.FIELD`` or ``SECTION.FIELD`` with a
section's name). The sessions' options come from ``RuntimeOptions.from_section(runtime)``.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Mapping
from pathlib import Path

from livecam.config.setting import setting_of
from livecam.config.swap import SECTIONS

ROOT = Path(__file__).resolve().parents[2]
#: the builders, and the options each may still read itself, with why
BUILDERS: Mapping[str, frozenset[str]] = {
    # the user's model files and the licences: the builder resolves and checks every file
    # once; the GPU and provider of each part's CUDA stream, which the builder makes
    "livecam/face/build.py": frozenset(
        f.name
        for name in SECTIONS
        for f in dataclasses.fields(SECTIONS[name])
        if setting_of(f).input is not None
    )
    | {"accept_licence", "gpu", "provider"},
    # the swap stage's own: its paste's opacity, which selector it makes and the photos it
    # loads for it (the selectors' own options are read by the selectors)
    "livecam/face/swap_stage.py": frozenset({"opacity", "select", "map", "reference"}),
}


def option_reads(source: str) -> list[str]:
    """``section.field`` of every read of a part section's option in ``source``."""
    fields = {name: {f.name for f in dataclasses.fields(SECTIONS[name])} for name in SECTIONS}
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        section = (
            owner.attr
            if isinstance(owner, ast.Attribute)
            else owner.id
            if isinstance(owner, ast.Name)
            else None
        )
        if section in fields and node.attr in fields[section]:
            found.append((node.lineno, f"{section}.{node.attr} (line {node.lineno})"))
    return [read for _, read in sorted(found)]


def test_the_builders_hand_each_part_its_section_and_read_none_of_its_options() -> None:
    for path, allowed in BUILDERS.items():
        source = (ROOT / path).read_text(encoding="utf-8")
        reads = [r for r in option_reads(source) if r.split()[0].split(".")[1] not in allowed]
        assert reads == [], (
            f"{path} reads a part's option: hand the part its section instead "
            f"(the option is read in the part's module)"
        )


def test_the_scan_sees_an_option_read_for_a_keyword() -> None:
    # what a per-field keyword in a factory looks like, in both spellings
    source = (
        "def make(w, neural, built):\n"
        "    return cls(w.session(), pixel_boost=neural.pixel_boost)\n"
        "masker = MouthMasker(self.cfg.masks.mouth_mask)\n"
        "reuse = SwapReuse(cfg.reuse.reuse_max)\n"
        "section = cfg.masks\n"  # the section whole: not a read
    )
    assert option_reads(source) == [
        "neural.pixel_boost (line 2)",
        "masks.mouth_mask (line 3)",
        "reuse.reuse_max (line 4)",
    ]
