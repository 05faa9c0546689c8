"""The bundled portraits (package data, ``livecam.assets``) as files that stay on disk.

``livecam demo`` and ``livecam check`` borrow them for one run (``importlib.resources``'s
``as_file``); the panel's moving-face test pattern keeps their paths in its saved config,
so it needs paths that outlive the call.
"""

from __future__ import annotations

import contextlib
import importlib.resources
from collections.abc import Iterator
from pathlib import Path

from livecam.errors import LivecamError, SourceError

#: the package data that holds the portraits (the repository's assets/ folder)
ASSETS_PACKAGE = "livecam.assets"
SOURCE_FACE = "grace_hopper.jpg"
TARGET = "astronaut.png"
REINSTALL = (
    "reinstall LiveCam (`pip install --force-reinstall livecam`; in a checkout `pip install -e .`)"
)


def bundled_portrait(name: str, package: str = ASSETS_PACKAGE) -> Path:
    """The path of the bundled portrait ``name`` of ``package``; SourceError with the fix
    when it is missing or not a plain file on disk (a zipped install)."""
    try:
        resource = importlib.resources.files(package) / name
    except ModuleNotFoundError:
        raise SourceError(
            f"the bundled portraits ({package}) are not installed", REINSTALL
        ) from None
    path = Path(str(resource))
    if not path.is_file():
        raise SourceError(f"the bundled portrait {name} is not a file on disk ({path})", REINSTALL)
    return path


@contextlib.contextmanager
def demo_portraits() -> Iterator[tuple[Path, Path]]:
    """(source face, target portrait) as files on disk, from the installed package data."""
    try:
        root = importlib.resources.files(ASSETS_PACKAGE)
    except ModuleNotFoundError:
        raise LivecamError(
            f"the demo portraits ({ASSETS_PACKAGE}) are not installed", REINSTALL
        ) from None
    with contextlib.ExitStack() as stack:
        paths = []
        for name in (SOURCE_FACE, TARGET):
            resource = root / name
            if not resource.is_file():
                raise LivecamError(
                    f"demo portrait {name} is missing from {ASSETS_PACKAGE}", REINSTALL
                )
            paths.append(stack.enter_context(importlib.resources.as_file(resource)))
        yield paths[0], paths[1]
