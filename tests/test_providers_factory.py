"""The provider named in the settings is the one that answers, and choosing it is cheap."""

from __future__ import annotations

import subprocess
import sys

from lore.config import ProviderSettings
from lore.core.providers.base import Provider
from lore.core.providers.factory import make_provider


def test_each_name_gives_its_provider() -> None:
    offline = make_provider(ProviderSettings())
    ollama = make_provider(ProviderSettings(name="ollama", model="llama3"))
    openai = make_provider(ProviderSettings(name="openai", model="gpt-4o-mini"))
    assert [p.name for p in (offline, ollama, openai)] == ["offline", "ollama", "openai"]
    assert (ollama.model, openai.model) == ("llama3", "gpt-4o-mini")
    assert all(isinstance(p, Provider) for p in (offline, ollama, openai))


def test_offline_provider_never_loads_the_http_stack() -> None:
    code = (
        "import sys\n"
        "from lore.config import ProviderSettings\n"
        "from lore.core.providers.factory import make_provider\n"
        "make_provider(ProviderSettings())\n"
        "print('httpx' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
