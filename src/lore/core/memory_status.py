"""How full the live history is and what the compressed memory holds, read cheaply.

The History pane shows this on every change, so it must not cost a scan of the whole
history: the live turns are read backwards from the end only until they pass the compaction
threshold. Past that point the exact figure does not matter, only that compaction is due.
Turns are counted as compaction counts them: question and answer, estimated.
"""

from __future__ import annotations

from dataclasses import field

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.json_decode import decode_json
from lore.core.memory import MemoryStore
from lore.core.tokens import estimate_tokens
from lore.core.vault import Vault


@dataclass_own_init
class LevelStatus:
    """How many entries one level of memory holds, and their tokens."""

    entries: int
    tokens: int


@dataclass_own_init
class MemoryStatus:
    """How full the live history is against the compaction threshold, and what memory holds
    level by level."""

    threshold_tokens: int
    live_turns: int = 0
    live_tokens: int = 0
    # True when the scan stopped at the threshold: there are at least this many.
    live_over_threshold: bool = False
    watermark: str | None = None
    levels: dict[int, LevelStatus] = field(default_factory=dict)
    frontier_tokens: int = 0
    problem: str | None = None

    @property
    def compaction_due(self) -> bool:
        return self.live_tokens > self.threshold_tokens

    def describe(self) -> str:
        if self.problem:
            return f"memory: {self.problem}"
        more = "+" if self.live_over_threshold else ""
        turns = "turn" if self.live_turns == 1 and not more else "turns"
        parts = [
            f"live {self.live_turns:,}{more} {turns}, {self.live_tokens:,}{more} / "
            f"{self.threshold_tokens:,} tokens"
            + (" (compaction due)" if self.compaction_due else "")
        ]
        if self.levels:
            shown = " ".join(
                f"L{level} {status.entries}×{status.tokens:,}t"
                for level, status in self.levels.items()
            )
            parts.append(f"memory {shown}, {self.frontier_tokens:,} tokens sent")
        else:
            parts.append("memory empty")
        parts.append(f"watermark {self.watermark}" if self.watermark else "nothing compacted yet")
        return " · ".join(parts)


def memory_status(vault: Vault) -> MemoryStatus:
    threshold = vault.config.history.compact_threshold_tokens
    store = MemoryStore(vault)
    state = store.state()
    status = MemoryStatus(threshold_tokens=threshold, watermark=state.watermark)
    if store.problem:
        status.problem = store.problem
        return status
    for level, entries in store.levels().items():
        status.levels[level] = LevelStatus(len(entries), sum(entry.tokens for entry in entries))
    status.frontier_tokens = store.frontier_tokens()
    start, covered = store.live_start()
    for _, line in store.history.iter_lines_backwards(start):
        if not line.endswith(b"\n"):
            continue  # a torn last line is not a turn yet
        try:
            record = decode_json(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            continue
        if covered is not None and record["id"] in covered:
            continue
        status.live_turns += 1
        status.live_tokens += estimate_tokens(str(record.get("question") or ""))
        status.live_tokens += estimate_tokens(str(record.get("answer") or ""))
        if status.live_tokens > threshold:
            status.live_over_threshold = True
            break
    return status
