"""The provider named in `lore.yaml` (or on the command line), ready to stream.

Provider modules are imported only when chosen, so starting Lore with the offline provider
never loads the HTTP code, and the other way round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.config import ProviderSettings
from lore.core.providers.base import Provider
from lore.errors import ConfigError

if TYPE_CHECKING:
    import httpx

PROVIDER_NAMES = ("offline", "ollama", "openai")


def make_provider(
    settings: ProviderSettings, *, transport: httpx.AsyncBaseTransport | None = None
) -> Provider:
    """A provider for `settings`. `transport` lets tests answer HTTP requests in process."""
    if settings.name == "offline":
        from lore.core.providers.offline import OfflineProvider

        return OfflineProvider()
    if settings.name == "ollama":
        from lore.core.providers.ollama import OllamaProvider

        return OllamaProvider(settings, transport=transport)
    if settings.name == "openai":
        from lore.core.providers.openai_compat import OpenAICompatProvider

        return OpenAICompatProvider(settings, transport=transport)
    raise ConfigError(
        f"provider.name: unknown provider {settings.name!r} (expected one of "
        f"{', '.join(PROVIDER_NAMES)})"
    )


def background_provider(settings: ProviderSettings) -> Provider | None:
    """The model for work done on a thread of its own (ingest, compaction), or None offline.

    Every face calls this, so the review gate and the summaries judge the same way from the
    command line, the REPL and the app. It is a provider of its own: that work runs on its
    own event loop and must not share an answer's HTTP client.
    """
    if settings.name == "offline":
        return None
    return make_provider(settings)
