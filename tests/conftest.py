"""Shared fixtures. Real test data lives in ../shared/testdata (never copied into the repo)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
