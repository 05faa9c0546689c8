"""The one part of the package layout pyproject.toml cannot say: the top-level ``assets/``
folder ships as the package ``livecam.assets`` (the demo portraits and their attribution,
read with ``importlib.resources``). Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["livecam", "livecam.*", "ui", "ui.*"]), "livecam.assets"],
    package_dir={"livecam.assets": "assets"},
)
