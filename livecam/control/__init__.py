"""The control plane: live changes to a running stream, the loader, hotkeys, the quality ladder."""
