"""The one part of the package layout pyproject.toml cannot say: the top-level ``assets/``
folder ships as the package ``livecam.assets`` (the demo portraits and their attribution,
read with ``importlib.resources``) and ``models/`` as ``livecam.modeldata`` (the model
manifest; never the weights). Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["livecam", "livecam.*", "ui", "ui.*"]),
        "livecam.assets",
        "livecam.modeldata",
    ],
    package_dir={"livecam.assets": "assets", "livecam.modeldata": "models"},
)
