"""Entry point: `python -m livecam` and the `livecam` console script."""

from __future__ import annotations

import sys

from livecam.cli import main as cli_main


def main() -> None:
    sys.exit(cli_main())


if __name__ == "__main__":
    main()
