"""Bundled demo portraits and their attribution (ATTRIBUTION.md), installed as the package
``livecam.assets``; ``livecam.demo`` reads them with ``importlib.resources``."""
