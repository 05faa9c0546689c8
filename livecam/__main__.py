"""Entry point: `python -m livecam` and the `livecam` console script."""

from __future__ import annotations

import sys

from livecam.signals import exit_code, stop_signals


def main() -> None:
    """Run the CLI. Ctrl-C or SIGTERM at any moment, even while the CLI's modules are
    still being imported, exits with 130 / 143 and no traceback."""
    try:
        with stop_signals():
            from livecam.cli import main as cli_main

            code = cli_main()
    except KeyboardInterrupt as e:
        code = exit_code(e)
    sys.exit(code)


if __name__ == "__main__":
    main()
