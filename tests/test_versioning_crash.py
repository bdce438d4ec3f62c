"""A versioned vault under stress: a process killed between its writes and its commit, and
two processes writing at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lore.core.audit import AuditLog
from lore.core.ingest import ingest
from lore.core.vault import Vault

# The child opens the vault and runs ACTION; with `kill_before` set, the commit whose
# message starts with it kills the process (SIGKILL) before git is asked to commit.
CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from lore.core.ingest import ingest
    from lore.core.vault import Vault
    from lore.core.versioning import recorder

    kill_before = sys.argv[2]
    real_commit = recorder.commit

    def commit(repo, paths, message, **options):
        if kill_before and message.startswith(kill_before):
            os.kill(os.getpid(), signal.SIGKILL)
        return real_commit(repo, paths, message, **options)

    recorder.commit = commit
    vault = Vault.open(Path(sys.argv[1]))
    ACTION
    """
)


def run_child(vault: Vault, action: str, kill_before: str = "") -> subprocess.Popen[str]:
    script = CHILD.replace("ACTION", textwrap.dedent(action).strip().replace("\n", "\n    "))
    return subprocess.Popen(
        [sys.executable, "-c", script, str(vault.root), kill_before],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    ).stdout


def subjects(vault: Vault) -> list[str]:
    return git(vault.root, "log", "--format=%s").splitlines()


def test_a_kill_between_writes_and_commit_is_committed_next_time_as_recovered(
    vault: Vault,
) -> None:
    child = run_child(
        vault, 'vault.create_note("Interrupted", "Written, never committed.")', "create:"
    )
    _, err = child.communicate(timeout=120)
    assert child.returncode == -9, err
    # The vault works: the note is whole, found and searchable; it is just not committed.
    reopened = Vault.open(vault.root)
    assert reopened.find("Interrupted").body.strip() == "Written, never committed."
    assert [hit.title for hit in reopened.index.search("never committed")] == ["Interrupted"]
    assert git(vault.root, "status", "--porcelain", "-uall") == "?? notes/interrupted.md\n"
    assert len(list((vault.layout.state / "operations").glob("*.json"))) == 1

    reopened.create_note("After", "The next operation.")
    assert subjects(reopened) == [
        "create: After",
        "recovered: create: Interrupted",
        "init: Test",
    ]
    assert git(vault.root, "show", "--format=", "--name-only", "HEAD~1").split() == [
        "notes/interrupted.md"
    ]
    assert git(vault.root, "status", "--porcelain") == ""
    assert list((vault.layout.state / "operations").glob("*.json")) == []
    # The audit log gives the interrupted operation the commit that recovered it.
    recovered = git(vault.root, "rev-parse", "HEAD~1").strip()
    assert recovered in {entry.commit for entry in AuditLog(reopened).read(commits=True)}
    reopened.close()


def test_a_killed_ingest_is_recovered_and_its_rerun_commits_the_rest(
    vault: Vault, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for number in range(30):
        (folder / f"doc{number}.md").write_text(f"# Doc {number}\n\nFact number {number}.\n")
    child = run_child(vault, f"ingest(vault, [{str(folder)!r}])", "ingest:")
    _, err = child.communicate(timeout=300)
    assert child.returncode == -9, err
    reopened = Vault.open(vault.root)
    assert len(reopened.index.all_documents()) == 30
    report = ingest(reopened, [str(folder)])
    assert report.counts()["unchanged"] == 30
    assert subjects(reopened)[0].startswith("recovered: ingest: 30 sources")
    assert git(vault.root, "status", "--porcelain") == ""
    tracked = git(vault.root, "ls-files", "notes").split()
    assert len(tracked) == 30
    reopened.close()


@pytest.mark.parametrize("notes_each", [12])
def test_two_processes_writing_at_once_make_a_commit_each_and_lose_nothing(
    vault: Vault, notes_each: int
) -> None:
    action = """
        for number in range({count}):
            vault.create_note(f"{name} {{number}}", "From one of two writers.")
        """
    writers = [
        run_child(vault, action.format(count=notes_each, name=name)) for name in ("Left", "Right")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
    logged = subjects(vault)
    assert logged[-1] == "init: Test"
    creates = sorted(logged[:-1])
    expected = sorted(
        f"create: {name} {number}" for name in ("Left", "Right") for number in range(notes_each)
    )
    assert creates == expected
    assert len(git(vault.root, "ls-files", "notes").split()) == 2 * notes_each
    assert git(vault.root, "status", "--porcelain") == ""
    for rev in range(2 * notes_each):
        assert len(git(vault.root, "show", "--format=", "--name-only", f"HEAD~{rev}").split()) == 1
