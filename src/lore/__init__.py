"""Lore: a local-first LLM wiki that lives in the terminal."""

__version__ = "0.1.0"
