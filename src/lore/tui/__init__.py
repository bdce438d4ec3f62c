"""The full-screen Textual app: a thin face over `lore.core`."""
