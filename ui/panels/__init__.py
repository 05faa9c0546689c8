"""The panel's side panels: one ``XxxPanel(stream, settings, parent)`` QWidget per file."""
