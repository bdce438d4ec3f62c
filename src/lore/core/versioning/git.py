"""Running `git` for a vault: a clean environment, no prompts, no hooks, nothing outside it.

Lore writes no object-format code of its own; every read and write of the repository is a
`git` command run here. The environment is rebuilt for each run, so neither the person's
global settings nor variables such as GIT_DIR (set inside a git hook) can change what a
command does or where it writes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from lore.core.dataclass_lite import dataclass_own_init
from lore.errors import VaultError

IDENTITY_NAME = "Lore"
IDENTITY_EMAIL = "lore@localhost"
# A marker in the repository's own config: this repository was made by `lore init`, so every
# change in the vault is Lore's to commit.
OWNER_KEY = "lore.vault"

# Settings that keep a repository's own configuration from changing what Lore's commands do.
# A person's hooks are for their own commits (a pre-commit check must not refuse a note), a
# signing key may ask for a passphrase, and a filesystem monitor would start a daemon.
# Objects are first written at zlib's fastest level: the commit of a long history's memory
# archive (15 MB for 100,000 turns) takes half the time; `git gc` packs them as usual.
_OVERRIDES = (
    "-c", "core.looseCompression=1",
    "-c", "core.hooksPath=" + os.devnull,
    "-c", "commit.gpgSign=false",
    "-c", "core.fsmonitor=false",
    "-c", "core.quotePath=false",
    "-c", "core.excludesFile=" + os.devnull,
    "-c", "core.attributesFile=" + os.devnull,
    "-c", "init.defaultBranch=main",
    "-c", "log.showSignature=false",
    "-c", "color.ui=false",
    "-c", "i18n.logOutputEncoding=UTF-8",
)  # fmt: skip

GIT_TIMEOUT_S = 300.0


class GitFailed(VaultError):
    """A git command failed; the message is git's own first line."""


_found: dict[str, str | None] = {}


def find_git() -> str | None:
    """The `git` program on PATH, or None when it is not installed."""
    search = os.environ.get("PATH", os.defpath)
    if search not in _found:
        _found[search] = shutil.which("git", path=search)
    return _found[search]


def _environment() -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": os.environ.get("HOME", "/"),
        "LC_ALL": "C",
        "TZ": "UTC",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": IDENTITY_NAME,
        "GIT_AUTHOR_EMAIL": IDENTITY_EMAIL,
        "GIT_COMMITTER_NAME": IDENTITY_NAME,
        "GIT_COMMITTER_EMAIL": IDENTITY_EMAIL,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_EDITOR": ":",
        "GIT_PAGER": "cat",
    }


@dataclass_own_init(frozen=True)
class Git:
    """`git` run in one folder (the vault's root)."""

    executable: str
    cwd: Path

    def run(
        self,
        args: Sequence[str],
        *,
        input: bytes | None = None,
        accept: Sequence[int] = (0,),
    ) -> subprocess.CompletedProcess[bytes]:
        command = next((arg for arg in args if not arg.startswith("-")), "")
        try:
            done = subprocess.run(
                [self.executable, *_OVERRIDES, *args],
                cwd=self.cwd,
                env=_environment(),
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise GitFailed(
                f"git {command} took over {GIT_TIMEOUT_S:.0f}s and was stopped"
            ) from None
        except OSError as exc:
            raise GitFailed(f"cannot run git: {exc.strerror or exc}") from None
        if done.returncode not in accept:
            raise GitFailed(f"git {command}: {first_line(done.stderr) or 'failed'}")
        return done

    def run_together(self, runs: Sequence[tuple[Sequence[str], bytes]]) -> list[int]:
        """Each `(args, input)` run at once, each by `run` in a thread of its own; their exit
        codes, -1 for a run that could not start or finish in time."""
        codes = [-1] * len(runs)

        def run_one(number: int) -> None:
            args, data = runs[number]
            try:
                codes[number] = self.run(args, input=data, accept=range(256)).returncode
            except GitFailed:
                pass

        threads = [threading.Thread(target=run_one, args=(number,)) for number in range(len(runs))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return codes

    def output(self, args: Sequence[str], *, input: bytes | None = None) -> str:
        return self.run(args, input=input).stdout.decode("utf-8", errors="replace").strip()


def first_line(data: bytes) -> str:
    for line in data.decode("utf-8", errors="replace").splitlines():
        line = line.strip()
        if line and not line.startswith("hint:"):
            return line.removeprefix("fatal: ").removeprefix("error: ")
    return ""


@dataclass_own_init(frozen=True)
class Repository:
    """The git repository a vault is in."""

    git: Git
    toplevel: Path
    # The vault's folder inside the repository ("" when the vault is the repository).
    prefix: str
    # Made by `lore init`: every change in the vault is Lore's to commit. Otherwise the
    # repository is the person's own, and Lore commits only the files it writes.
    owned: bool


def in_work_tree(root: Path) -> bool:
    """Whether `root` or a folder above it holds a `.git` (no git command needed to tell)."""
    return any((folder / ".git").exists() for folder in (root, *root.parents))


def open_repository(root: Path) -> tuple[Repository | None, str | None]:
    """The repository `root` is in, or None and why not (None when there simply is none)."""
    if not in_work_tree(root):
        return None, None
    executable = find_git()
    if executable is None:
        return None, "git is not installed, so this change was not committed"
    git = Git(executable, root)
    done = git.run(["rev-parse", "--show-toplevel", "--show-prefix"], accept=(0, 128))
    if done.returncode != 0:
        reason = first_line(done.stderr)
        if "not a git repository" in reason:
            return None, None
        return None, f"the vault's git repository cannot be used ({reason})"
    lines = done.stdout.decode("utf-8", errors="replace").splitlines()
    toplevel = Path(lines[0]) if lines else root
    prefix = lines[1] if len(lines) > 1 else ""
    marker = git.run(["config", "--local", "--get", OWNER_KEY], accept=(0, 1))
    owned = prefix == "" and marker.stdout.strip() == b"true"
    return Repository(git, toplevel, prefix, owned), None


def create_repository(root: Path) -> Repository | None:
    """`git init` in `root`, marked as Lore's; None when git is not installed."""
    executable = find_git()
    if executable is None:
        return None
    git = Git(executable, root)
    git.run(["init", "--quiet"])
    git.run(["config", "--local", OWNER_KEY, "true"])
    return Repository(git, root, "", owned=True)
