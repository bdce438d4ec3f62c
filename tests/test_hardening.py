"""Hardening: files Lore must not corrupt, hang on or leak; commands that work on a bad disk."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from lore.cli import main
from lore.config import IngestSettings
from lore.core import storage
from lore.core.doctor import examine
from lore.core.ingest import ingest
from lore.core.ingest.sources import SourceError, read_url
from lore.core.links import link_targets, rewrite_links
from lore.core.vault import Vault

# -- renaming rewrites only link bytes ----------------------------------------------------------


def test_rename_keeps_a_latin1_linker_in_latin1_and_trashes_its_original(vault: Vault) -> None:
    vault.create_note("Red Planet", "red")
    linker = vault.layout.notes / "cafe.md"
    original = "# Café\n\nÉté, crème brûlée, and [[Red Planet]].\n".encode("latin-1")
    linker.write_bytes(original)
    vault.reconcile()
    result = vault.rename_note("Red Planet", "Mars")
    assert result.relinked == {"notes/cafe.md": 1}
    data = linker.read_bytes()
    assert data == "# Café\n\nÉté, crème brûlée, and [[Mars]].\n".encode("latin-1")
    assert "\ufffd".encode() not in data
    trashed = {path.read_bytes() for path in vault.layout.trash.iterdir()}
    assert original in trashed


def test_rename_keeps_front_matter_comments_of_a_linker_byte_for_byte(vault: Vault) -> None:
    vault.create_note("Red Planet", "red")
    linker = vault.layout.notes / "journal.md"
    front = "---\n# my own comment\ntitle: Journal  # inline comment\ntags: [a, b]\n---\n"
    linker.write_text(front + "Saw [[Red Planet|it]] tonight.\n")
    vault.reconcile()
    vault.rename_note("Red Planet", "Mars")
    assert linker.read_text() == front + "Saw [[Mars|it]] tonight.\n"


def test_rename_leaves_links_in_code_spans_and_fences_alone(vault: Vault) -> None:
    vault.create_note("Red Planet", "red")
    body = (
        "Real [[Red Planet]]; code `[[Red Planet]]` and ``a ` [[Red Planet]]``.\n\n"
        "```markdown\n[[Red Planet]]\n```\n\n~~~\n[[Red Planet]]\n~~~\nAfter [[Red Planet]].\n"
    )
    linker = vault.create_note("Docs", body)
    result = vault.rename_note("Red Planet", "Mars")
    assert result.relinked == {linker.path: 2}
    assert vault.find("Docs").body == body.replace("Real [[Red Planet]]", "Real [[Mars]]").replace(
        "After [[Red Planet]]", "After [[Mars]]"
    )


def test_links_in_code_are_not_links() -> None:
    assert link_targets("`[[A]]` [[B]]\n```\n[[C]]\n```\n") == ["B"]
    assert rewrite_links("`[[A]]` [[A]]", "A", "Z") == ("`[[A]]` [[Z]]", 1)


def test_rename_trashes_the_renamed_notes_own_original(vault: Vault) -> None:
    note = vault.create_note("Red Planet", "red")
    original = (vault.root / note.path).read_bytes()
    vault.rename_note("Red Planet", "Mars")
    assert original in {path.read_bytes() for path in vault.layout.trash.iterdir()}


# -- only regular files are read ---------------------------------------------------------------


def _finishes(work: Callable[[], object], fifo: Path, seconds: float = 10.0) -> object:
    """Run `work`; fail (and unblock it) if it hangs on the FIFO instead of refusing it."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        raise AssertionError("hung on a FIFO")
    return result[0]


def test_ingest_refuses_a_fifo_given_directly_with_one_line(vault: Vault, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    report = _finishes(lambda: ingest(vault, [str(fifo)]), fifo)
    (outcome,) = report.sources  # type: ignore[attr-defined]
    assert outcome.outcome == "failed"
    assert outcome.reasons == ["is a named pipe (FIFO), not a regular file; only files are read"]


def test_ingest_skips_a_fifo_in_a_folder_and_reads_the_rest(vault: Vault, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "mars.md").write_text("# Mars\n\nMars has two small moons, Phobos and Deimos.\n")
    fifo = folder / "pipe.md"
    os.mkfifo(fifo)
    for recursive in (False, True):
        report = _finishes(lambda r=recursive: ingest(vault, [str(folder)], recursive=r), fifo)
        outcomes = {Path(o.target).name: o for o in report.sources}  # type: ignore[attr-defined]
        assert outcomes["pipe.md"].outcome == "failed"
        assert "FIFO" in outcomes["pipe.md"].reasons[0]
        assert outcomes["mars.md"].outcome != "failed"


def test_a_fifo_in_notes_is_never_read(vault: Vault, tmp_path: Path) -> None:
    fifo = vault.layout.notes / "pipe.md"
    os.mkfifo(fifo)
    note, reason = _finishes(lambda: vault.load_note("notes/pipe.md"), fifo)  # type: ignore[misc]
    assert note is None and "regular file" in reason


def test_a_symlink_to_outside_the_vault_is_refused_and_reported(
    vault: Vault, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nxylophonic credentials live here.\n")
    (vault.layout.notes / "innocent.md").symlink_to(secret)
    vault.create_note("Visible", "an ordinary xylophonic note")
    assert [hit.path for hit in vault.index.search("credentials")] == []
    assert vault.load_note("notes/innocent.md")[0] is None
    refusals = [w for w in vault.warnings if "innocent.md" in w]
    assert refusals == [
        "refused notes/innocent.md: a symlink to somewhere outside the vault (not read)"
    ]
    report = examine(vault)
    assert [(f.kind, f.path) for f in report.findings if f.kind == "symlink"] == [
        ("symlink", "notes/innocent.md")
    ]
    assert not report.ok


def test_a_symlink_inside_the_vault_is_still_a_note(vault: Vault) -> None:
    target = vault.root / "elsewhere.md"
    target.write_text("# Linked\n\nharmonium text\n")
    (vault.layout.notes / "linked.md").symlink_to(target)
    assert [hit.path for hit in vault.index.search("harmonium")] == ["notes/linked.md"]


def test_doctor_reports_symlink_loops(vault: Vault) -> None:
    (vault.layout.notes / "loop.md").symlink_to(vault.layout.notes / "loop.md")
    (vault.layout.notes / "again").symlink_to(vault.layout.notes)
    found = {f.path: f.message for f in examine(vault).findings if f.kind == "symlink"}
    assert set(found) == {"notes/loop.md", "notes/again"}
    assert all("loop" in message for message in found.values())


# -- URL fetches: one deadline, no private addresses ----------------------------------------------


class _DripHandler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        try:
            for _ in range(100):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.1)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def drip_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _DripHandler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_slow_drip_is_cut_off_at_the_overall_deadline(drip_server: str) -> None:
    settings = IngestSettings(url_timeout_s=0.8, allow_private_urls=True)
    started = time.monotonic()
    with pytest.raises(SourceError, match=r"timed out after 0\.8s"):
        read_url(f"{drip_server}/drip", settings)
    assert time.monotonic() - started < 1.5


def test_loopback_urls_are_refused_unless_allowed(drip_server: str) -> None:
    with pytest.raises(SourceError, match=r"127\.0\.0\.1 is a loopback.*allow_private_urls"):
        read_url(f"{drip_server}/x", IngestSettings())


def _redirecting_to(target: str) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.host == "93.184.216.34":
            return httpx.Response(302, headers={"Location": target})
        return httpx.Response(200, headers={"Content-Type": "text/plain"}, text="inside")

    return httpx.MockTransport(handle)


@pytest.mark.parametrize(
    "target",
    ["http://127.0.0.1/admin", "http://169.254.169.254/meta", "http://10.0.0.7/", "http://[::1]/"],
)
def test_redirects_to_private_addresses_are_refused(target: str) -> None:
    with pytest.raises(SourceError, match=r"refused a redirect: .* private address"):
        read_url("http://93.184.216.34/page", IngestSettings(), transport=_redirecting_to(target))
    allowed = IngestSettings(allow_private_urls=True)
    document = read_url("http://93.184.216.34/page", allowed, transport=_redirecting_to(target))
    assert document.text.strip() == "inside"


# -- a full or read-only disk -------------------------------------------------------------------


class _Refusing:
    """A module whose named functions fail with `code`; everything else is the real thing."""

    def __init__(self, module: object, names: set[str], code: int) -> None:
        self._module, self._names, self._code = module, names, code

    def __getattr__(self, name: str) -> object:
        if name in self._names:
            real = getattr(self._module, name)

            def refuse(*args: object, **kwargs: object) -> object:
                # A full disk still lets files be opened for reading.
                if name == "open" and not _writes(args[1] if len(args) > 1 else 0):
                    return real(*args, **kwargs)
                raise OSError(self._code, os.strerror(self._code))

            return refuse
        return getattr(self._module, name)


def _writes(flags: object) -> bool:
    return isinstance(flags, int) and bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))


def _disk_refuses_writes(monkeypatch: pytest.MonkeyPatch, code: int = errno.ENOSPC) -> None:
    """Every write Lore or the index makes fails as on a full (or read-only) disk."""
    import tempfile

    from whoosh.filedb.filestore import FileStorage

    # Storage imports tempfile when it writes: the module's own function is the one to refuse.
    monkeypatch.setattr(tempfile, "mkstemp", _Refusing(tempfile, {"mkstemp"}, code).mkstemp)
    monkeypatch.setattr(storage, "os", _Refusing(os, {"open"}, code))

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(FileStorage, "create_file", refuse)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("index_state", ["stale", "missing"])
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_read_only_commands_work_when_the_disk_takes_no_writes(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    vault: Vault,
    index_state: str,
    code: int,
) -> None:
    vault.create_note("Titan", "Titan has lakes of methane.")
    vault.create_note("Enceladus", "Enceladus sprays water from its south pole.")
    vault.close()
    # A note edited outside Lore: opening the index now wants to write.
    (vault.layout.notes / "rhea.md").write_text("# Rhea\n\nRhea is icy.\n")
    if index_state == "missing":
        shutil.rmtree(vault.layout.state)
        vault.layout.state.mkdir()
    _disk_refuses_writes(monkeypatch, code)
    root = str(vault.root)
    code_, out, err = _cli(capsys, "--vault", root, "search", "methane")
    assert code_ == 0 and "Titan" in out, err
    assert "internal error" not in err and len(err.strip().splitlines()) <= 1
    for argv in (["notes", "list"], ["context", "what has lakes?"]):
        code_, out, err = _cli(capsys, "--vault", root, *argv)
        assert code_ == 0, (argv, err)
        assert "internal error" not in err and len(err.strip().splitlines()) <= 1
    code_, out, err = _cli(capsys, "--vault", root, "doctor")
    assert "internal error" not in err and "Traceback" not in err
    assert code_ in (0, 1)


def _vault_files(vault: Vault) -> list[Path]:
    """The files a person owns in the vault: everything but the derived `.lore/`."""
    return sorted(
        path.relative_to(vault.root)
        for path in vault.root.rglob("*")
        if path.is_file() and ".lore" not in path.parts
    )


def test_a_failed_ingest_write_leaves_no_note_and_says_what_failed(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    vault: Vault,
    tmp_path: Path,
) -> None:
    source = tmp_path / "mars.md"
    source.write_text("# Mars\n\nMars has two small moons, Phobos and Deimos.\n")
    vault.create_note("Venus", "Venus is hot.")  # the index is up to date on disk
    before = _vault_files(vault)
    vault.close()
    _disk_refuses_writes(monkeypatch)
    code, _, err = _cli(capsys, "--vault", str(vault.root), "ingest", str(source))
    assert code == 1
    assert "internal error" not in err
    assert "No space left on device" in err and len(err.strip().splitlines()) == 1
    after = _vault_files(vault)
    assert after == before


def test_an_index_that_cannot_be_written_does_not_fail_a_finished_ingest(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    vault: Vault,
    tmp_path: Path,
) -> None:
    from whoosh.filedb.filestore import FileStorage

    source = tmp_path / "mars.md"
    source.write_text("# Mars\n\nMars has two small moons, Phobos and Deimos.\n")
    vault.create_note("Venus", "Venus is hot.")
    vault.close()

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as full:
        # The notes fit; the index segment, written after them, does not.
        full.setattr(FileStorage, "create_file", refuse)
        code, _, err = _cli(capsys, "--vault", str(vault.root), "ingest", str(source))
    assert code == 0, err
    assert "internal error" not in err and len(err.strip().splitlines()) == 1
    assert "No space left on device" in err
    code, out, _ = _cli(capsys, "--vault", str(vault.root), "search", "Phobos")
    assert code == 0 and "Mars" in out


# -- doctor: stale temporary files and trust rules ----------------------------------------------


def _aged(path: Path, seconds: float) -> Path:
    then = time.time() - seconds
    os.utime(path, (then, then))
    return path


def test_doctor_reports_and_fix_removes_stale_temp_files(vault: Vault) -> None:
    vault.create_note("Io", "volcanic")
    vault.layout.raw.mkdir()
    vault.layout.memory.mkdir()
    stale = [
        vault.layout.raw / f".{'a' * 64}.k2j4_x9q.tmp",
        vault.layout.memory / ".memory.json.abcd1234.tmp",
        vault.layout.notes / ".io.md.zz99yy88.tmp",
    ]
    for path in stale:
        path.write_bytes(b"half")
        _aged(path, 120)
    fresh = vault.layout.notes / ".io.md.fresh123.tmp"
    fresh.write_bytes(b"being written")
    ordinary = vault.layout.notes / ".hidden.tmp"
    ordinary.write_bytes(b"not ours")
    _aged(ordinary, 120)
    report = examine(vault)
    found = sorted(f.path for f in report.findings if f.kind == "temp-file")
    assert found == sorted(vault.relpath(path) for path in stale)
    fixed = examine(vault, fix=True)
    assert "removed 3 temporary files" in fixed.fixed
    assert not any(path.exists() for path in stale)
    assert fresh.exists() and ordinary.exists()
    assert [f for f in examine(vault).findings if f.kind == "temp-file"] == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rules: [\n", "could not parse YAML"),
        ("rules:\n  - host: example.com\n    level: sorta\n", "rules.0"),
        ("- just a list\n", "expected a mapping"),
    ],
)
def test_doctor_reports_a_broken_trust_rules_file(vault: Vault, text: str, expected: str) -> None:
    vault.layout.trust_rules.write_text(text)
    report = examine(vault)
    [finding] = [f for f in report.findings if f.kind == "trust-rules"]
    assert finding.path == "trust_rules.yaml" and expected in finding.message
    assert not report.ok


# -- showing a huge note ---------------------------------------------------------------------


def test_notes_show_of_a_4_5_mb_note_is_quick_and_shows_it_plainly(
    capsys: pytest.CaptureFixture[str], vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = "Saturn **rings** and [[Titan]] with a \x1b]52;c;x\x07 escape in `code`.\n\n"
    body = "# Huge\n\n" + line * (4_500_000 // len(line))
    (vault.layout.notes / "huge.md").write_text(body)
    vault.reconcile()  # indexed once, as by any earlier command
    vault.close()
    # Laying out 4.5 MB as Markdown took 20 s; it must not be tried at all. (How long the
    # plain text takes is a figure for a benchmark, not a unit test on a busy machine.)
    import lore.rich_markdown

    def no_markdown(*args: object, **kwargs: object) -> None:
        raise AssertionError("a 4.5 MB note was laid out as Markdown")

    monkeypatch.setattr(lore.rich_markdown, "SafeMarkdown", no_markdown)
    code, out, err = _cli(capsys, "--vault", str(vault.root), "notes", "show", "Huge")
    assert code == 0
    assert err.strip() == "shown as plain text: longer than 200,000 characters"
    assert out.count("Saturn **rings** and [[Titan]]") == 4_500_000 // len(line)
    assert "\x1b" not in out and "⟦U+001B ESC⟧" in out


# -- small CLI defects ---------------------------------------------------------------------


def test_a_missing_item_exits_1_from_every_show_command(
    capsys: pytest.CaptureFixture[str], vault: Vault
) -> None:
    root = str(vault.root)
    vault.create_note("Io", "volcanic moon")
    for argv in (["notes", "show", "Nowhere"], ["history", "show", "t0000000000"]):
        code, _, err = _cli(capsys, "--vault", root, *argv)
        assert code == 1, (argv, err)
        assert len(err.strip().splitlines()) == 1


def test_one_search_hit_is_one_hit(capsys: pytest.CaptureFixture[str], vault: Vault) -> None:
    vault.create_note("Io", "volcanic moon")
    vault.create_note("Europa", "icy moon")
    _, out, _ = _cli(capsys, "--vault", str(vault.root), "search", "volcanic")
    assert "1 hit for 'volcanic'" in out
    _, out, _ = _cli(capsys, "--vault", str(vault.root), "search", "moon")
    assert "2 hits for 'moon'" in out


def test_make_demo_runs_on_a_copy_of_the_sample_vault() -> None:
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    planned = subprocess.run(
        ["make", "-n", "-C", str(repo), "demo"], capture_output=True, text=True, check=True
    ).stdout
    [launch] = [line for line in planned.splitlines() if "--vault" in line]
    assert "samples/vault" not in launch
    copy = launch.split("--vault", 1)[1].split()[0]
    assert f"cp -R samples/vault {copy}" in planned
    assert f"rm -rf {copy}" in planned  # recreated on every run


@pytest.mark.parametrize(
    "data_file", ["history.jsonl", "memory/memory.json", "metrics.jsonl", "audit.jsonl"]
)
def test_a_fifo_in_place_of_a_data_file_never_hangs_a_command(vault: Vault, data_file: str) -> None:
    fifo = vault.root / data_file
    fifo.parent.mkdir(exist_ok=True)
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    root = str(vault.root)
    for command in (
        ["--provider", "offline", "ask", "what is Europa?"],
        ["history"],
        ["compact"],
        ["metrics"],
        ["doctor"],
    ):
        # A process of its own: one that hung would be killed by the timeout, failing here.
        done = subprocess.run(
            [sys.executable, "-m", "lore", "--vault", root, *command],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode in (0, 1), (command, done.stderr)
        assert "internal error" not in done.stderr and "Traceback" not in done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("lore:")]
        if done.returncode == 1 and command[0] != "doctor":
            assert errors, (command, done.stderr)
        assert all(data_file in line or "FIFO" in line or "regular" in line for line in errors)
    # `lore doctor` names the history and the memory archive among its findings.
    if data_file in ("history.jsonl", "memory/memory.json"):
        findings = examine(vault).findings
        assert any(
            finding.path == data_file and "regular" in finding.message for finding in findings
        )
    # Nothing took the pipe's place.
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
