"""The obs-websocket password: a secret, kept out of config files (which are plain text
the panel saves and users share) and out of every log line.

It is read from ``$LIVECAM_OBS_PASSWORD`` when set, else from ``obs-password`` in the
user's LiveCam config folder, a file readable by the user only (mode 0600, like the C2PA
signing key) that ``livecam obs password`` and the panel's OBS box write.
"""

from __future__ import annotations

import os
from pathlib import Path

from livecam.userfiles import user_config_dir, write_private

ENV = "LIVECAM_OBS_PASSWORD"
FILE_NAME = "obs-password"


def password_file() -> Path:
    """Where the password is kept."""
    return user_config_dir() / FILE_NAME


def read_password() -> str:
    """The password (``$LIVECAM_OBS_PASSWORD``, else the password file), "" when none."""
    env = os.environ.get(ENV)
    if env is not None:
        return env
    try:
        return password_file().read_text(encoding="utf-8").rstrip("\r\n")
    except FileNotFoundError:
        return ""


def save_password(password: str) -> Path:
    """Keep ``password`` in the password file (mode 0600); "" removes the file."""
    path = password_file()
    if password:
        write_private(path, password.encode("utf-8"))
    else:
        path.unlink(missing_ok=True)
    return path
