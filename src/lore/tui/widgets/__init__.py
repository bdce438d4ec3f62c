"""Small widgets the app's frame and panes share."""
