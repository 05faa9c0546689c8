"""The model manifest, packaged as ``livecam.modeldata`` (see setup.py): ``manifest.toml``
is read by ``livecam.models.manifest.load_manifest`` when LiveCam runs from a wheel."""
