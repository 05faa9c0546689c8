"""Configuration: the settings tree, its validation, TOML, and the user's input files."""
