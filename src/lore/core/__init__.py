"""Lore's headless core. Nothing in this package imports Textual or prompt-toolkit."""
