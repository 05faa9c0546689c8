"""Model files: the manifest, where files are, verified downloads, and the presets (model sets)."""
