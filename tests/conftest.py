"""Shared fixtures. Real test data lives in ../shared/testdata (never copied into the repo)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from media import xvfb_display

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO = Path(__file__).resolve().parents[1]


def _find_testdata() -> Path | None:
    env = os.environ.get("LIVECAM_TESTDATA")
    candidates = [Path(env)] if env else []
    candidates += [p / "shared" / "testdata" for p in REPO.parents]
    for c in candidates:
        if (c / "faces").is_dir():
            return c
    return None


@pytest.fixture(scope="session")
def testdata() -> Path:
    """The shared test-data folder (faces/, video/, models/); skips when it is absent."""
    found = _find_testdata()
    if found is None:
        pytest.skip("../shared/testdata not found (set LIVECAM_TESTDATA to its path)")
    return found


@pytest.fixture(scope="session")
def assets_dir() -> Path:
    return REPO / "assets"


@pytest.fixture(scope="module")
def xvfb() -> Iterator[str]:
    """A private 640x480 Xvfb display (``:N``); skips where Xvfb is not installed."""
    with xvfb_display() as display:
        if display is None:
            pytest.skip("Xvfb is not installed (apt-get install xvfb): these tests need a display")
        yield display
