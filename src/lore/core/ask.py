"""Asking: question in, a stream of events out, and the turn recorded whatever happens.

`AskEngine.ask` resolves a follow-up, retrieves, builds the pack (the same `prepare` the
preview uses), streams the provider's reply, checks its citations against the notes the pack
delivered, and records the turn and its metrics. The consumer (the command line, the REPL,
the app) sees the same events:

    AskStarted(pack) -> AnswerDelta(text)* -> AskFinished(turn, pack, citations_removed)
                                            or AskFailed(turn, error_message)

A provider failure becomes an `error` turn, never a lost one. If the consumer cancels (task
cancellation, Ctrl-C, or closing the stream early) the turn is recorded as `cancelled`, which
later packs leave out, and the cancellation carries on.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from lore.core.citations import check_citations
from lore.core.dataclass_lite import dataclass_lite, dataclass_own_init
from lore.core.history import HistoryStore
from lore.core.loop_free import is_cancellation, off_loop, off_loop_to_the_end
from lore.core.memory import MemoryStore
from lore.core.notes import utc_now
from lore.core.pack import ContextPack, build_pack
from lore.core.providers.base import GenerationOptions, Provider
from lore.core.retrieval import Retrieval, retrieve
from lore.core.tokens import estimate_tokens
from lore.core.turns import Turn, TurnStatus, TurnTimings, new_conversation_id, new_turn_id
from lore.core.vault import Vault
from lore.errors import LoreError, UsageError

if TYPE_CHECKING:
    from lore.core.compaction import CompactionReport

# The live window can be long; the pack only ever fits the newest few dozen turns.
MAX_RECENT_TURNS = 32
_CANCELLED_EARLY = "cancelled before the answer was complete"
# How far back the history is read for the conversation's last answer.
_PREVIOUS_PROBE = 256


@dataclass_lite
class AskStarted:
    """The pack is built and the provider asked: what it was sent, how its notes were found, and
    the turn's id."""

    pack: ContextPack
    retrieval: Retrieval
    turn_id: str


@dataclass_own_init
class AnswerDelta:
    """The next piece of the streamed answer."""

    text: str


@dataclass_lite
class AskFinished:
    """The answer is complete and its turn recorded; `citations_removed` counts citations to
    notes the model was not shown."""

    turn: Turn
    pack: ContextPack
    citations_removed: int


@dataclass_lite
class AskFailed:
    """The ask failed: the turn is recorded as an error, and `error_message` says why."""

    turn: Turn
    error_message: str


@dataclass_lite
class MemoryCompacted:
    """After a completed turn, the live history passed its threshold and was compacted."""

    report: CompactionReport


@dataclass_lite
class CompactionFailed:
    """Compaction after a turn failed; the turn and the old memory are intact."""

    error_message: str


AskEvent = AskStarted | AnswerDelta | AskFinished | AskFailed | MemoryCompacted | CompactionFailed


@dataclass_lite
class PreparedAsk:
    """What an ask would send, before the provider is asked: the retrieval and the pack built
    from it."""

    retrieval: Retrieval
    pack: ContextPack


class AskEngine:
    """Asks against one vault. The provider is made from lore.yaml unless one is given.

    An engine is one conversation: follow-ups and recent turns come from its own turns only.
    Without a `conversation` id it starts a new one (the app and each REPL session do);
    `lore ask` passes the id of the conversation its terminal continues.
    """

    def __init__(
        self,
        vault: Vault,
        provider: Provider | None = None,
        *,
        conversation: str | None = None,
        history: HistoryStore | None = None,
    ) -> None:
        self.vault = vault
        self._provider = provider
        # Made here, not on first use: the threads an ask runs on would race to make them.
        self._history = history or HistoryStore(vault)
        self._memory = MemoryStore(vault, self._history)
        self.last_turn: Turn | None = None
        # A conversation this engine starts has no turns in the history to look back at.
        self._continued = conversation is not None
        self.conversation = conversation or new_conversation_id()

    # -- collaborators -----------------------------------------------------------------------

    @property
    def provider(self) -> Provider:
        if self._provider is None:
            from lore.core.providers.factory import make_provider

            self._provider = make_provider(self.vault.config.provider)
        return self._provider

    async def aclose(self) -> None:
        """Close the provider's connections, if one was made."""
        if self._provider is not None:
            await self._provider.aclose()

    def use_provider(self, provider: Provider | None) -> None:
        """Switch provider (None: make it again from the settings on next use)."""
        self._provider = provider

    @property
    def history(self) -> HistoryStore:
        return self._history

    @property
    def memory(self) -> MemoryStore:
        return self._memory

    # -- the one path to a pack --------------------------------------------------------------

    def check_question(self, question: str) -> str:
        """The question stripped, or a UsageError before anything is sent."""
        limit = self.vault.config.ask.max_question_chars
        if len(question) > limit:
            raise UsageError(
                f"the question is {len(question):,} characters, over the limit of {limit:,} "
                "(ask.max_question_chars); nothing was sent. Put long text in a note "
                "(/ingest) and ask about it"
            )
        question = question.strip()
        if not question:
            raise UsageError("ask a question (it was empty)")
        return question

    def last_completed_turn(self) -> Turn | None:
        """The newest `ok` turn: this session's last answer, else the history's."""
        if self.last_turn is not None and self.last_turn.status == "ok":
            return self.last_turn
        return self.previous_turn()

    def previous_turn(self) -> Turn | None:
        """This conversation's last completed turn, which a follow-up is resolved against."""
        last = self.last_turn
        if last is not None and last.status == "ok" and last.conversation == self.conversation:
            return last
        if not self._continued and last is None:
            return None
        from lore.core.history import decode_turn

        marker = self.conversation.encode("utf-8")
        for number, (_, line) in enumerate(self.history.iter_lines_backwards()):
            if number >= _PREVIOUS_PROBE:
                break
            if marker not in line:
                continue  # another conversation's turn: not even worth parsing
            turn = decode_turn(line)
            if turn is not None and turn.conversation == self.conversation and turn.status == "ok":
                return turn
        return None

    def prepare(self, question: str) -> PreparedAsk:
        """Retrieve and pack for `question` exactly as an ask would (an empty question packs
        the memory and recent turns alone)."""
        settings = self.vault.config.ask
        retrieval = retrieve(self.vault, question, previous=self.previous_turn())
        pack = build_pack(
            question=question,
            resolved_question=retrieval.resolved_question,
            followup=retrieval.followup,
            settings=settings,
            evidence=retrieval.candidates,
            terms=retrieval.terms,
            weights=retrieval.weights,
            recent_turns=self.memory.live_turns(
                MAX_RECENT_TURNS, only_ok=True, conversation=self.conversation
            ),
            memory=self.memory.ranked(),
        )
        return PreparedAsk(retrieval, pack)

    def preview(self, question: str = "") -> ContextPack:
        """Exactly what the next ask of `question` would send."""
        if question.strip():
            question = self.check_question(question)
        return self.prepare(question.strip()).pack

    # -- asking ------------------------------------------------------------------------------

    def _options(self) -> GenerationOptions:
        ask = self.vault.config.ask
        return GenerationOptions(
            temperature=self.vault.config.provider.temperature,
            max_tokens=ask.reply_tokens or None,
            context_tokens=ask.budget_tokens + ask.reply_tokens,
        )

    async def ask(self, question: str) -> AsyncIterator[AskEvent]:
        """Ask `question`, yielding events; the turn is recorded before the last event."""
        question = self.check_question(question)
        provider = self.provider
        started = time.perf_counter()
        turn = Turn(
            id=new_turn_id(),
            time=utc_now(),
            question=question,
            provider=provider.name,
            model=provider.model,
            conversation=self.conversation,
        )
        parts: list[str] = []
        citations = [0, 0]  # kept, removed
        recorded = False
        prepared: PreparedAsk | None = None
        first_token_at: float | None = None

        def finish(status: TurnStatus, error: str | None = None) -> Turn:
            nonlocal recorded
            answer = "".join(parts)
            turn.status = status
            turn.error = error
            if status == "ok" and prepared is not None:
                check = check_citations(answer, prepared.pack.delivered)
                answer = check.text
                turn.cited = check.cited_note_ids
                citations[:] = [check.kept, check.removed]
            turn.answer = answer
            turn.timings = TurnTimings(
                retrieval_ms=round(prepared.retrieval.elapsed_ms, 3) if prepared else 0.0,
                first_token_ms=(
                    round((first_token_at - started) * 1000, 3) if first_token_at else None
                ),
                total_ms=round((time.perf_counter() - started) * 1000, 3),
            )
            turn.usage.estimated_prompt_tokens = prepared.pack.total_tokens if prepared else 0
            turn.usage.estimated_completion_tokens = estimate_tokens(answer)
            recorded = True
            self.last_turn = turn
            self.history.append(turn)
            self._record_metrics(turn, prepared, kept=citations[0], removed=citations[1])
            return turn

        try:
            prepared = await off_loop(self.prepare, question)
            turn.resolved_question = prepared.retrieval.resolved_question
            yield AskStarted(prepared.pack, prepared.retrieval, turn.id)
            try:
                async for chunk in provider.stream(prepared.pack.messages(), self._options()):
                    if chunk.usage is not None:
                        turn.usage.prompt_tokens = chunk.usage.prompt_tokens
                        turn.usage.completion_tokens = chunk.usage.completion_tokens
                    if chunk.text:
                        if first_token_at is None:
                            first_token_at = time.perf_counter()
                        parts.append(chunk.text)
                        yield AnswerDelta(chunk.text)
            except LoreError as exc:
                failed = await off_loop(finish, "error", exc.message)
                yield AskFailed(failed, exc.message)
                return
            except Exception as exc:
                # A provider should raise ProviderError; anything else still ends as an
                # error turn and one line, never a lost turn or a traceback.
                message = f"the provider failed: {type(exc).__name__}: {exc}"
                failed = await off_loop(finish, "error", message)
                yield AskFailed(failed, message)
                return
            if not "".join(parts).strip():
                message = f"{provider.name} sent back an empty answer; nothing to show"
                failed = await off_loop(finish, "error", message)
                yield AskFailed(failed, message)
                return
            done = await off_loop(finish, "ok")
            yield AskFinished(done, prepared.pack, citations[1])
            compaction = await self._compact_if_due()
            if compaction is not None:
                yield compaction
        except BaseException as stopped:
            if recorded:
                raise
            if is_cancellation(stopped):
                # Recording waits for the vault lock and an fsync: on a thread, so the
                # caller's event loop (the app's, say) goes on drawing meanwhile. Carried
                # to its end, so a second cancellation cannot lose the turn.
                await off_loop_to_the_end(finish, "cancelled", _CANCELLED_EARLY)
            elif isinstance(stopped, (KeyboardInterrupt, GeneratorExit)):
                finish("cancelled", _CANCELLED_EARLY)
            raise

    async def _compact_if_due(self) -> MemoryCompacted | CompactionFailed | None:
        """Keep the live history near its threshold without ever deleting a turn.

        The summaries come from a provider of their own: compaction runs on a thread with
        its own event loop, and the answer's client belongs to the caller's.
        """
        from lore.core.compaction_due import compaction_due

        if not await off_loop(compaction_due, self.vault):
            return None
        # Only now the compaction machinery: most asks find nothing due.
        from lore.core.compaction import compact_if_due
        from lore.core.providers.factory import background_provider

        summariser = background_provider(self.vault.config.provider)
        try:
            report = await off_loop(compact_if_due, self.vault, provider=summariser)
        except LoreError as exc:
            return CompactionFailed(f"compaction after this answer failed: {exc.message}")
        return MemoryCompacted(report) if report is not None else None

    def _record_metrics(
        self, turn: Turn, prepared: PreparedAsk | None, *, kept: int, removed: int
    ) -> None:
        from lore.core.metrics import MetricsStore

        pack = prepared.pack if prepared else None
        MetricsStore(self.vault).record(
            turn,
            evidence_count=len(pack.delivered) if pack else 0,
            dropped=[f"{item.section}: {item.label}" for item in pack.dropped] if pack else [],
            citations_kept=kept,
            citations_removed=removed,
            estimated_prompt_tokens=pack.total_tokens if pack else 0,
        )


_CITATION_MARKERS = re.compile(r"\s*\[\d+\]")


def save_answer(vault: Vault, turn: Turn, *, title: str | None = None) -> dict[str, Any]:
    """File an answer as a note through the admission gates, like any other source.

    Citation numbers only mean something inside their pack, so they are replaced by links to
    the notes the answer cited.
    """
    from lore.core.ingest import ingest_text

    if turn.status != "ok" or not turn.answer.strip():
        raise UsageError("only a completed answer can be saved")
    if not turn.cited:
        # An answer resting on no note is not knowledge the wiki should file as its own.
        raise UsageError("the answer cites no note, so there is nothing to file as a note")
    heading = " ".join((title or turn.question).split())[:120]
    body = _CITATION_MARKERS.sub("", turn.answer).strip()
    links = []
    for note_id in turn.cited:
        for fields in vault.index.lookup(id=note_id):
            links.append(f"- [[{fields.get('title', note_id)}]]")
    if links:
        body += "\n\n## Cited notes\n\n" + "\n".join(links)
    report = ingest_text(
        vault,
        f"# {heading}\n\n{body}\n",
        uri=f"lore:turn/{turn.id}",
        title=heading,
        trust="semi-trusted",
    )
    data: dict[str, Any] = report.to_dict()
    return data
