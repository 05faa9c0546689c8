"""Model files: the manifest, where files are, and verified downloads."""
