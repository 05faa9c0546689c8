"""The bundled portraits (package data, ``livecam.assets``) as files that stay on disk.

``livecam demo`` and ``livecam check`` borrow them for one run (``importlib.resources``'s
``as_file``); the panel's moving-face test pattern keeps their paths in its saved config,
so it needs paths that outlive the call.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from livecam.errors import SourceError

REINSTALL = (
    "reinstall LiveCam (`pip install --force-reinstall livecam`; in a checkout `pip install -e .`)"
)


def bundled_portrait(name: str, package: str = "livecam.assets") -> Path:
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
