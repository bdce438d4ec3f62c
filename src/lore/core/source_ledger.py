"""The ledger of ingested sources, `raw/sources.jsonl`: one record per version read.

Ingestion appends a record once a source's notes and held claims are written, so the last
record of a source names the version its notes now come from.
"""

from __future__ import annotations

from pathlib import Path

from lore.core.storage import iter_records
from lore.core.vault import Vault


def ledger_path(vault: Vault) -> Path:
    return vault.layout.raw / "sources.jsonl"


def current_versions(vault: Vault) -> dict[str, str]:
    """The sha256 of the version of each source read last, by source URI."""
    versions: dict[str, str] = {}
    for record in iter_records(ledger_path(vault)):
        if record.get("uri") and record.get("sha256"):
            versions[str(record["uri"])] = str(record["sha256"])
    return versions
