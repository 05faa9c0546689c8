"""The `livecam` command line: options, the terminal run, live commands, demo, doctor, models."""
