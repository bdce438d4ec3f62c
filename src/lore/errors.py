"""The errors Lore raises on purpose.

Every error a user can cause or meet is a `LoreError`: the command line and the app turn it
into one line of text. Anything else escaping to the top is a bug.
"""

from __future__ import annotations


class LoreError(Exception):
    """Base of every error that is shown to the user as one line."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(LoreError):
    """The user asked for something that cannot be done as asked."""

    exit_code = 2


class ConfigError(LoreError):
    """A settings file (lore.yaml, trust_rules.yaml, a theme) is invalid."""


class VaultError(LoreError):
    """The vault is missing, unreadable, read-only, or inconsistent."""


class VaultNotFound(VaultError):
    pass


class VaultLocked(VaultError):
    """Another process held the vault lock for longer than we were willing to wait."""


class NoteNotFound(VaultError):
    pass


class AmbiguousNote(VaultError):
    pass


class NoteExists(VaultError):
    pass


class IngestError(LoreError):
    """A source could not be read or turned into claims."""


class QuarantineError(LoreError):
    pass


class BudgetError(LoreError):
    """The mandatory parts of a prompt do not fit the token budget."""


class ProviderError(LoreError):
    """A model provider failed; the message says what to do about it."""


class ProviderUnavailable(ProviderError):
    """The server is not running or cannot be reached."""


class ModelNotFound(ProviderError):
    pass


class ProviderAuthError(ProviderError):
    pass


class StreamInterrupted(ProviderError):
    """The reply was cut off mid-stream."""


class ProviderReplyInvalid(ProviderError):
    """The model answered, but not in the shape we asked for."""
