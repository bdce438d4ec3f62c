"""One module per pane of the app."""
