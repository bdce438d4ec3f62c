"""The types and text helpers a face may name: the rest of the core is private to it.

Faces (the app, the REPL, the command line, the MCP server) do their work through
`lore.core.session.LoreSession`; what its operations take and return is named here. Each
name is imported from its module the first time it is asked for, so naming one type costs
no more start-up than importing its module directly would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.lazy_names import lazy_names

if TYPE_CHECKING:
    from lore.core.ask import (
        AnswerDelta,
        AskEvent,
        AskFailed,
        AskFinished,
        AskStarted,
        CompactionFailed,
        MemoryCompacted,
    )
    from lore.core.ask_notices import AskListener, AskNotice, notice_for, relay_ask
    from lore.core.commands import (
        ApplyTheme,
        AskAgain,
        ClearTranscript,
        CommandAction,
        CommandRegistry,
        CommandResult,
        ModelSwitched,
        Quit,
        Refresh,
        ShowNote,
        ShowPane,
        SlashCommand,
        TableData,
        ingest_summary,
    )
    from lore.core.compaction import CompactionReport
    from lore.core.conversations import CONTINUE_WINDOW_S
    from lore.core.display_text import (
        json_for_terminal,
        linkable_uri,
        visible,
        visible_with_offsets,
    )
    from lore.core.doctor import DoctorReport
    from lore.core.editor import editor_command
    from lore.core.history import decode_turn
    from lore.core.history_export import turn_markdown, turn_summary
    from lore.core.ingest import IngestEvent, IngestReport
    from lore.core.links import WIKI_LINK
    from lore.core.loop_free import run_without_loop
    from lore.core.memory_status import MemoryStatus
    from lore.core.metrics import MetricRecord, MetricsSummary, summarise
    from lore.core.notes import Note
    from lore.core.pack import ContextPack
    from lore.core.providers.base import Provider
    from lore.core.quarantine import (
        OUTDATED_NOTICE,
        HeldClaim,
        Promotion,
        is_hidden_char,
        make_visible,
    )
    from lore.core.search import SearchHit
    from lore.core.theme_cache import themes_at_start
    from lore.core.themes import (
        DEFAULT_THEME,
        LORE_VARIABLES,
        ThemeCatalogue,
        ThemeSpec,
        load_themes,
        remember_theme,
        remembered_theme,
    )
    from lore.core.tokens import estimate_tokens
    from lore.core.turns import Turn
    from lore.core.utf8_safe import utf8_text
    from lore.core.versioning.versions import (
        NoteAtVersion,
        NoteVersion,
        NotVersioned,
        RestoreResult,
        UnknownRevision,
    )

_HOMES: dict[str, tuple[str, ...]] = {
    "lore.core.ask": (
        "AnswerDelta",
        "AskEvent",
        "AskFailed",
        "AskFinished",
        "AskStarted",
        "CompactionFailed",
        "MemoryCompacted",
    ),
    "lore.core.ask_notices": ("AskListener", "AskNotice", "notice_for", "relay_ask"),
    "lore.core.commands": (
        "ApplyTheme",
        "AskAgain",
        "ClearTranscript",
        "CommandAction",
        "CommandRegistry",
        "CommandResult",
        "ModelSwitched",
        "Quit",
        "Refresh",
        "ShowNote",
        "ShowPane",
        "SlashCommand",
        "TableData",
        "ingest_summary",
    ),
    "lore.core.compaction": ("CompactionReport",),
    "lore.core.conversations": ("CONTINUE_WINDOW_S",),
    "lore.core.display_text": (
        "json_for_terminal",
        "linkable_uri",
        "visible",
        "visible_with_offsets",
    ),
    "lore.core.doctor": ("DoctorReport",),
    "lore.core.editor": ("editor_command",),
    "lore.core.history": ("decode_turn",),
    "lore.core.history_export": ("turn_markdown", "turn_summary"),
    "lore.core.search": ("SearchHit",),
    "lore.core.ingest": ("IngestEvent", "IngestReport"),
    "lore.core.links": ("WIKI_LINK",),
    "lore.core.memory_status": ("MemoryStatus",),
    "lore.core.metrics": ("MetricRecord", "MetricsSummary", "summarise"),
    "lore.core.notes": ("Note",),
    "lore.core.pack": ("ContextPack",),
    "lore.core.loop_free": ("run_without_loop",),
    "lore.core.providers.base": ("Provider",),
    "lore.core.quarantine": (
        "OUTDATED_NOTICE",
        "HeldClaim",
        "Promotion",
        "is_hidden_char",
        "make_visible",
    ),
    "lore.core.utf8_safe": ("utf8_text",),
    "lore.core.themes": (
        "DEFAULT_THEME",
        "LORE_VARIABLES",
        "ThemeCatalogue",
        "ThemeSpec",
        "load_themes",
        "remember_theme",
        "remembered_theme",
    ),
    "lore.core.theme_cache": ("themes_at_start",),
    "lore.core.tokens": ("estimate_tokens",),
    "lore.core.turns": ("Turn",),
    "lore.core.versioning.versions": (
        "NoteAtVersion",
        "NoteVersion",
        "NotVersioned",
        "RestoreResult",
        "UnknownRevision",
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


__getattr__ = lazy_names(globals(), _HOME_OF)


__all__ = [
    "CONTINUE_WINDOW_S",
    "DEFAULT_THEME",
    "LORE_VARIABLES",
    "OUTDATED_NOTICE",
    "WIKI_LINK",
    "AnswerDelta",
    "ApplyTheme",
    "AskAgain",
    "AskEvent",
    "AskFailed",
    "AskFinished",
    "AskListener",
    "AskNotice",
    "AskStarted",
    "ClearTranscript",
    "CommandAction",
    "CommandRegistry",
    "CommandResult",
    "CompactionFailed",
    "CompactionReport",
    "ContextPack",
    "DoctorReport",
    "HeldClaim",
    "IngestEvent",
    "IngestReport",
    "MemoryCompacted",
    "MemoryStatus",
    "MetricRecord",
    "MetricsSummary",
    "ModelSwitched",
    "NotVersioned",
    "Note",
    "NoteAtVersion",
    "NoteVersion",
    "Promotion",
    "Provider",
    "Quit",
    "Refresh",
    "RestoreResult",
    "SearchHit",
    "ShowNote",
    "ShowPane",
    "SlashCommand",
    "TableData",
    "ThemeCatalogue",
    "ThemeSpec",
    "Turn",
    "UnknownRevision",
    "decode_turn",
    "editor_command",
    "estimate_tokens",
    "ingest_summary",
    "is_hidden_char",
    "json_for_terminal",
    "linkable_uri",
    "load_themes",
    "make_visible",
    "notice_for",
    "relay_ask",
    "remember_theme",
    "remembered_theme",
    "run_without_loop",
    "summarise",
    "themes_at_start",
    "turn_markdown",
    "turn_summary",
    "utf8_text",
    "visible",
    "visible_with_offsets",
]
