"""Entry point: `python -m livecam` and the `livecam` console script."""

from __future__ import annotations

import atexit
import os
import sys
import threading

from livecam.cli.signals import deferred, exiting, stop_behind, stop_signals


def main() -> None:
    """Run the CLI. Ctrl-C or SIGTERM at any moment, even while the CLI's modules are
    still being imported (a signal inside onnxruntime's import surfaces as ImportError),
    exits with 130 / 143 and no traceback."""
    try:
        with stop_signals(restore=False):  # ours to the end: see ``stop_signals``
            try:
                with deferred():  # a signal during the imports is raised after them
                    from livecam.cli.main import main as cli_main

                code = cli_main()
            finally:
                exiting()  # the status is decided: a later signal changes nothing
    except BaseException as e:
        stop = stop_behind(e)
        if stop is None or isinstance(e, SystemExit):
            raise
        code = stop.exit_code
    if code in (130, 143) and threading.active_count() > 1:
        # a thread still stuck in native code (a camera or stream open that never returns)
        # cannot be joined, and finalising the interpreter under it can abort the process
        # ("terminate called without an active exception"): everything of ours is closed
        # by now, so leave at once with the signal's status
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if "ui.panel_app" in sys.modules:  # the panel ran and closed: leave without a teardown
        leave_now(code)
    sys.exit(code)


def leave_now(code: int) -> None:
    """Exit with ``code`` after the exit handlers (logging's flush, temporary files) but
    without finalising the interpreter: once the panel's window is closed, its stream
    stopped and its settings saved, nothing of ours is left to close, and tearing down
    Qt, ONNX Runtime and torch (and collecting a heap of ~2000 modules) took 1-3 s after
    the window had gone (issue: Ctrl+Q must end the process within 1 s)."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
