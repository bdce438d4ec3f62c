"""Hardening: files Lore must not corrupt, hang on or leak; commands that work on a bad disk."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from lore.config import IngestSettings
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
