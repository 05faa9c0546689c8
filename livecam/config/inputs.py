"""The user's input files (photos, models, a source file): what is wrong with one, in words.

One check for every place that takes a path from the user, so a folder, a device such as
/dev/zero, an unreadable file or a name the system rejects ("File name too long") is
reported the same way, before anything tries to open it.
"""

from __future__ import annotations

import os
import stat


def input_file_problem(path: str) -> str | None:
    """None when ``path`` (``~`` expanded) is a readable, non-empty regular file; else
    what is wrong with it, as the end of a sentence ("does not exist", "is a folder ...")."""
    expanded = os.path.expanduser(path)
    try:
        st = os.stat(expanded)
    except (FileNotFoundError, NotADirectoryError):
        return "does not exist"
    except OSError as e:
        return f"cannot be opened: {e.strerror or e}"
    except ValueError as e:  # an embedded NUL byte
        return f"is not a valid path: {e}"
    if stat.S_ISDIR(st.st_mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a device, pipe or socket)"
    if st.st_size == 0:
        return "is empty"
    if not os.access(expanded, os.R_OK):
        return "cannot be read (permission denied)"
    return None
