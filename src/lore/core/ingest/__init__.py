"""Ingestion: documents in, claims through the admission gates, notes and held claims out."""

from lore.core.ingest.pipeline import (
    IngestEvent,
    IngestReport,
    SourceOutcome,
    ingest,
    ingest_text,
)

__all__ = ["IngestEvent", "IngestReport", "SourceOutcome", "ingest", "ingest_text"]
