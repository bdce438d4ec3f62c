"""A process killed in the middle of compaction leaves the old archive or the new one, whole."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from history_helpers import assert_every_turn_accounted_for, bulk_append, configure, random_turn
from lore.core.compaction import compact
from lore.core.history import HistoryStore
from lore.core.memory import MemoryStore
from lore.core.vault import Vault

SETTINGS = {"threshold": 300, "keep": 4, "budget": 400, "fanout": 4}

# The child opens the vault, applies the same settings and compacts. `HOOK` is replaced by
# code that crashes it at a chosen point.
CHILD = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from lore.core.compaction import compact
    from lore.core.vault import Vault

    vault = Vault.open(Path(sys.argv[1]))
    settings = vault.config.history
    settings.compact_threshold_tokens = {threshold}
    settings.keep_recent_turns = {keep}
    settings.memory_budget_tokens = {budget}
    settings.memory_fanout = {fanout}
    HOOK
    print("compacting", flush=True)
    compact(vault)
    print("done", flush=True)
    """
)


def child_script(hook: str = "") -> str:
    return CHILD.format(**SETTINGS).replace("HOOK", hook)


def run_child(vault: Vault, hook: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", child_script(hook), str(vault.root)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def seed_history(vault: Vault, turns: int, seed: int = 0) -> None:
    configure(vault, **SETTINGS)
    rng = random.Random(seed)
    bulk_append(vault, [random_turn(rng, number) for number in range(turns)])


def archive_text(vault: Vault) -> str | None:
    path = vault.layout.memory / "memory.json"
    return path.read_text() if path.exists() else None


def test_a_crash_just_before_the_archive_is_replaced_keeps_the_old_one(vault: Vault) -> None:
    seed_history(vault, 200)
    compact(vault)
    before = archive_text(vault)
    bulk_append(vault, [random_turn(random.Random(1), 1000 + n) for n in range(200)])
    hook = textwrap.dedent(
        """
        real_replace = os.replace
        def crashing_replace(source, target):
            if str(target).endswith("memory.json"):
                os._exit(9)
            real_replace(source, target)
        os.replace = crashing_replace
        """
    )
    result = run_child(vault, hook)
    assert result.returncode == 9, result.stderr
    assert archive_text(vault) == before
    assert HistoryStore(vault).count() == 400
    assert_every_turn_accounted_for(vault)
    # The lock died with the process: the next compaction runs and finishes the job.
    assert compact(vault).compacted
    assert_every_turn_accounted_for(vault)


def test_a_crash_just_after_the_archive_is_replaced_keeps_the_new_one(vault: Vault) -> None:
    seed_history(vault, 300)
    hook = textwrap.dedent(
        """
        real_replace = os.replace
        def replace_then_crash(source, target):
            real_replace(source, target)
            if str(target).endswith("memory.json"):
                os._exit(9)
        os.replace = replace_then_crash
        """
    )
    result = run_child(vault, hook)
    assert result.returncode == 9, result.stderr
    store = MemoryStore(vault)
    assert store.problem is None
    assert len(store.live_turns()) == SETTINGS["keep"]
    assert_every_turn_accounted_for(vault)


@pytest.mark.slow
def test_killed_at_random_moments_the_archive_is_always_whole(vault: Vault) -> None:
    seed_history(vault, 8000, seed=5)
    rng = random.Random(11)
    for attempt in range(3):
        if attempt:
            bulk_append(vault, [random_turn(rng, 100_000 * attempt + n) for n in range(1500)])
        child = subprocess.Popen(
            [sys.executable, "-c", child_script(), str(vault.root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "compacting"
        time.sleep(rng.uniform(0.05, 0.8))
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        store = MemoryStore(Vault.open(vault.root))
        assert store.problem is None
        assert_every_turn_accounted_for(vault)
    # Whatever the timing, a later compaction completes and accounts for everything.
    compact(vault)
    assert_every_turn_accounted_for(vault)
    leftovers = [p for p in Path(vault.layout.memory).glob(".memory.json.*")]
    assert all(p.suffix == ".tmp" for p in leftovers)
