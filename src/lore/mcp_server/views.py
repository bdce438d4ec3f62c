"""Session results as the models tools return: what an agent reads back."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import yaml
from mcp.server.fastmcp import Context
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from lore.core.public import (
    AskEvent,
    AskFailed,
    AskFinished,
    AskListener,
    AskNotice,
    ContextPack,
    IngestReport,
    Note,
)
from lore.core.session import LoreSession
from lore.errors import NoteNotFound
from lore.mcp_server import models


def structured(reply: BaseModel) -> CallToolResult:
    """A reply its pydantic model has already checked, sent as it is. Returned as a model,
    the SDK would check it again against the JSON schema, building the validator each call:
    some 20 ms, more than most tools take to do their work."""
    data = reply.model_dump(mode="json")
    text = json.dumps(data, ensure_ascii=False, indent=2)
    return CallToolResult(content=[TextContent(type="text", text=text)], structuredContent=data)


REVIEW = (
    "held claims wait in the quarantine until the person promotes or rejects them "
    "(lore quarantine list); nothing here can promote them"
)


def tag_list(value: str | None) -> list[str]:
    return [tag for tag in (value or "").split(",") if tag]


def note_ref(fields: dict[str, Any]) -> models.NoteRef:
    return models.NoteRef(id=fields["id"], title=fields["title"], path=fields["path"])


def note_content(session: LoreSession, note: Note) -> models.NoteContent:
    backlinks: list[models.NoteRef] = []
    for path in session.backlinks(note.title):
        backlinks.extend(note_ref(fields) for fields in session.lookup(path=path))
    return models.NoteContent(
        id=note.id,
        title=note.title,
        path=note.path,
        markdown=note.body,
        tags=list(note.tags),
        trust=note.trust,
        status=note.status,
        sources=[models.NoteSource(uri=source.uri, title=source.title) for source in note.sources],
        created=note.created,
        updated=note.updated,
        backlinks=backlinks,
    )


def preview(pack: ContextPack) -> models.ContextPreview:
    return models.ContextPreview(
        question=pack.question,
        resolved_question=pack.resolved_question,
        followup=pack.followup,
        budget=pack.budget,
        total_tokens=pack.total_tokens,
        reply_tokens=pack.reply_tokens,
        sections=[
            models.PackSection(
                name=section.name,
                cap=section.cap,
                tokens=section.tokens,
                items=[
                    models.PackItem(
                        kind=item.kind,
                        label=item.label,
                        ref=item.ref,
                        tokens=item.tokens,
                        trimmed=item.trimmed,
                        why=item.why,
                        number=item.number,
                    )
                    for item in section.items
                ],
            )
            for section in pack.sections
        ],
        dropped=[
            models.DroppedItem(
                section=item.section,
                kind=item.kind,
                label=item.label,
                ref=item.ref,
                tokens=item.tokens,
                reason=item.reason,
            )
            for item in pack.dropped
        ],
    )


def submission(report: IngestReport) -> models.Submission:
    claims = report.claim_counts()
    return models.Submission(
        sources=[
            models.SourceReport(
                target=source.target,
                uri=source.uri,
                title=source.title,
                outcome=source.outcome,
                trust=source.trust,
                admitted=source.admitted,
                merged=source.merged,
                held=source.held,
                reasons=list(source.reasons),
                notes=list(source.notes),
                held_ids=list(source.held_ids),
            )
            for source in report.sources
        ],
        admitted=claims["admitted"],
        merged=claims["merged"],
        held=claims["held"],
        review=REVIEW,
    )


class AnswerCollector(AskListener):
    """Keeps the answer and the notices; streams the answer as progress when asked to."""

    def __init__(self, ctx: Context[Any, Any, Any]) -> None:
        self.ctx = ctx
        self.parts = 0
        self.done: AskFinished | None = None
        self.failed_event: AskFailed | None = None
        self.notices: list[str] = []

    async def delta(self, text: str) -> None:
        self.parts += 1
        await self.ctx.report_progress(self.parts, message=text)

    async def finished(self, event: AskFinished) -> None:
        self.done = event

    async def failed(self, event: AskFailed) -> None:
        self.failed_event = event

    async def notice(self, notice: AskNotice, event: AskEvent) -> None:
        if not isinstance(event, AskFailed):
            self.notices.append(notice.text)


def answer(event: AskFinished, notices: list[str]) -> models.Answer:
    turn, cited = event.turn, set(event.turn.cited)
    return models.Answer(
        answer=turn.answer,
        turn_id=turn.id,
        provider=turn.provider,
        model=turn.model,
        sources=[
            models.CitedSource(
                id=item.ref,
                title=item.label,
                path=item.path or "",
                number=item.number,
                trust=item.trust,
                cited=item.ref in cited,
            )
            for item in event.pack.notes()
        ],
        notices=notices,
    )


# -- checks on what an agent sends ---------------------------------------------------------------


def vault_summary(session: LoreSession) -> str:
    docs = session.note_documents()
    tags = Counter(tag for doc in docs for tag in tag_list(doc.get("tags")))
    recent = sorted(docs, key=lambda doc: doc.get("updated") or "", reverse=True)[:10]
    provider, model = session.model_label
    summary = {
        "name": session.name,
        "notes": len(docs),
        "tags": dict(tags.most_common(20)),
        "recently_changed": [
            {**note_ref(doc).model_dump(), "updated": doc.get("updated")} for doc in recent
        ],
        "held_claims": len(session.quarantine.list()),
        "answers_from": f"{provider}/{model}" if model else provider,
        "agents_may": "read, search, ask, and propose notes or sources through the gates",
        "agents_may_not": "promote, reject, edit or delete notes or held claims",
    }
    return json.dumps(summary, ensure_ascii=False, indent=1)


def note_markdown(session: LoreSession, note_id: str) -> str:
    matches = session.lookup(id=note_id)
    if not matches:
        raise NoteNotFound(f"no note with id {note_id!r}")
    note = session.read_note(matches[0]["path"])
    front = {
        "id": note.id,
        "title": note.title,
        "tags": list(note.tags),
        "trust": note.trust,
        "status": note.status,
        "sources": [source.uri for source in note.sources],
        "updated": note.updated,
    }
    header = yaml.safe_dump(front, allow_unicode=True, sort_keys=False)
    return f"---\n{header}---\n{note.body}"
