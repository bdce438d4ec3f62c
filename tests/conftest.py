"""Isolation for every test: per-user folders in tmp_path, no vault discovery, no network."""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from lore.core.vault import Vault, init_vault

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"


def _is_loopback(address: object) -> bool:
    if isinstance(address, tuple) and address:
        host = address[0]
    else:
        return True  # Unix sockets and the like stay on this machine.
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("lore-home")
    monkeypatch.setenv("LORE_HOME", str(home))
    monkeypatch.delenv("LORE_VAULT", raising=False)
    monkeypatch.delenv("LORE_DEBUG", raising=False)
    # Settings a person exported in their shell (LORE_PROVIDER__MODEL=…) must not reach tests.
    for name in [name for name in os.environ if name.startswith("LORE_") and "__" in name]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("EDITOR", "true")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.chdir(home)

    real_connect = socket.socket.connect

    def guarded_connect(self: socket.socket, address: object) -> object:
        if not _is_loopback(address):
            raise OSError(f"tests may not reach the network (tried {address!r})")
        return real_connect(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    """An empty vault in a temporary folder."""
    root = init_vault(tmp_path / "vault", "Test")
    opened = Vault.open(root)
    yield opened
    opened.close()


@pytest.fixture
def sample_vault(tmp_path: Path) -> Vault:
    """A private copy of samples/vault (derived state left behind)."""
    target = tmp_path / "sample-vault"
    shutil.copytree(
        SAMPLES / "vault",
        target,
        ignore=shutil.ignore_patterns(
            ".lore",
            "history.jsonl",
            "metrics.jsonl",
            "audit.jsonl",
            "memory",
            "quarantine",
            "raw",
            "trash",
        ),
    )
    opened = Vault.open(target)
    yield opened
    opened.close()


@pytest.fixture
def spills(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The times a similarity index moved its claims into its store on disk: one item each."""
    from lore.core.gates.similarity_spill import SpilledClaims

    made: list[int] = []
    spill = SpilledClaims.spill

    def counted(self: SpilledClaims, *args: Any) -> None:
        made.append(1)
        spill(self, *args)

    monkeypatch.setattr(SpilledClaims, "spill", counted)
    return made
