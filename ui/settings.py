"""What the panel remembers between runs, in the user config folder
(``~/.config/livecam`` on Linux, or ``$LIVECAM_CONFIG_DIR``).

* ``config.toml``: the stream's settings, the same TOML ``livecam run --config`` reads
  (first run: ``first_run_config``).
* ``panel.toml``: the panel's own state: recent source faces (newest first), whether the
  responsible-use notice was acknowledged, the window geometry and the splitter between
  the preview and the side tabs.

Both are written to a temporary file and renamed; a damaged file is kept aside
(``NAME.bad``) with a warning and defaults are used, so the panel always starts.
"""

from __future__ import annotations

import logging
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from livecam.config.schema import Config
from livecam.errors import ConfigError
from livecam.userfiles import user_config_dir, write_atomically

log = logging.getLogger(__name__)

MAX_RECENT_FACES = 12


def config_dir() -> Path:
    """``$LIVECAM_CONFIG_DIR``, else the user config folder for ``livecam``."""
    return user_config_dir()


def first_run_config() -> Config:
    """The panel's settings before the user changed any: webcam 0 at 1280x720 and 30 fps
    (what meeting apps expect; a camera that cannot give it is cropped to that aspect,
    never stretched) into the virtual camera; a video file chosen as the input loops
    (``source.loop``: the Input tab's Loop, on by default)."""
    return Config.from_dict(
        {
            "source": {"spec": "camera:0", "size": [1280, 720], "fps": 30, "loop": True},
            "output": {"sinks": ["virtualcam"]},
        }
    )


def _write_text(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file of its own (two panels may save at
    once: each leaves a whole file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text.encode("utf-8"))


def _set_aside(path: Path, why: str) -> None:
    bad = path.with_name(path.name + ".bad")
    log.warning("%s could not be read (%s): kept as %s, defaults used", path, why, bad.name)
    os.replace(path, bad)


@dataclass
class PanelState:
    """The panel's own state (``panel.toml``)."""

    recent_faces: list[str] = field(default_factory=list)
    notice_acknowledged: bool = False
    geometry: list[int] = field(default_factory=list)  # x, y, width, height
    splitter: list[int] = field(default_factory=list)  # preview and side tabs widths, px
    record_file: str = ""  # the file chosen to record to, kept while recording is off

    def to_dict(self) -> dict[str, Any]:
        return {
            "recent_faces": list(self.recent_faces),
            "notice_acknowledged": self.notice_acknowledged,
            "geometry": list(self.geometry),
            "splitter": list(self.splitter),
            "record_file": self.record_file,
        }


class UiSettings:
    """The stream config and panel state of this user, loaded at start and saved on change."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else config_dir()
        self.config_path = self.folder / "config.toml"
        self.panel_path = self.folder / "panel.toml"
        self.config = self._load_config()
        self.panel = self._load_panel()

    def _load_config(self) -> Config:
        if not self.config_path.is_file():
            return first_run_config()
        try:
            return Config.load(self.config_path)
        except ConfigError as e:
            _set_aside(self.config_path, e.message)
            return first_run_config()

    def _load_panel(self) -> PanelState:
        if not self.panel_path.is_file():
            return PanelState()
        try:
            data = tomllib.loads(self.panel_path.read_text(encoding="utf-8"))
            faces = [str(f) for f in data.get("recent_faces", [])][:MAX_RECENT_FACES]
            geometry = [int(v) for v in data.get("geometry", [])]
            splitter = [int(v) for v in data.get("splitter", [])]
            acknowledged = bool(data.get("notice_acknowledged", False))
            record_file = str(data.get("record_file", ""))
            return PanelState(faces, acknowledged, geometry, splitter, record_file)
        except (tomllib.TOMLDecodeError, TypeError, ValueError, UnicodeDecodeError) as e:
            _set_aside(self.panel_path, str(e))
            return PanelState()

    def save_config(self, config: Config) -> None:
        """Keep ``config`` (absolute paths) as this user's stream settings."""
        self.config = config
        _write_text(self.config_path, config.with_paths_from(Path.cwd()).to_toml())

    def save_panel(self) -> None:
        _write_text(self.panel_path, tomli_w.dumps(self.panel.to_dict()))

    def add_recent_face(self, path: str | Path) -> None:
        """Put ``path`` first in the recent faces (once; at most ``MAX_RECENT_FACES``) and save."""
        text = str(Path(path).expanduser().absolute())
        faces = [text] + [f for f in self.panel.recent_faces if f != text]
        self.panel.recent_faces = faces[:MAX_RECENT_FACES]
        self.save_panel()
