"""Reading sources: local files and URLs into text, with the format's markup turned into plain
Markdown-like text (headings as `#` lines, paragraphs separated by blank lines).

Every way a source can be unusable becomes a `SourceError` with one line saying why.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
import socket
import stat
import threading
import time
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path
from typing import Literal

import httpx
import yaml

from lore.config import IngestSettings
from lore.core.dataclass_lite import dataclass_own_init
from lore.core.display_text import clean_title
from lore.core.notes import split_front_matter
from lore.core.utf8_safe import utf8_text

Format = Literal["markdown", "text", "rst", "html"]
SUFFIX_FORMATS: dict[str, Format] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".rst": "rst",
    ".rest": "rst",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
}
CONTENT_TYPES: dict[str, Format] = {
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/plain": "text",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/x-rst": "rst",
    "text/prs.fallenstein.rst": "rst",
}
# Front-matter keys a source may use to describe itself; any other key stays in the text so
# the sanitiser sees an attempt to set Lore's own metadata.
_HARMLESS_FRONT_KEYS = {
    "title",
    "date",
    "author",
    "authors",
    "tags",
    "description",
    "summary",
    "categories",
    "category",
    "lang",
    "language",
    "layout",
    "draft",
    "slug",
}
_BINARY_PROBE = 8192


class SourceError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass_own_init
class SourceDocument:
    """A source as read: its URI, title and text (HTML already turned to text), and the bytes it
    came as with their SHA-256."""

    uri: str
    title: str
    text: str
    format: Format
    sha256: str
    raw: bytes


def is_url(target: str) -> bool:
    return target.startswith(("http://", "https://"))


def file_uri(path: Path) -> str:
    return path.resolve().as_uri()


def _decode(data: bytes, what: str, encoding: str = "utf-8") -> str:
    if not data.strip():
        raise SourceError(f"{what} is empty")
    if b"\x00" in data[:_BINARY_PROBE]:
        raise SourceError(f"{what} looks binary (NUL bytes), not text")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"{what} is not valid {encoding.upper()} text (bad byte at offset {exc.start})"
        ) from None
    except LookupError:
        raise SourceError(f"{what} declares an unknown text encoding {encoding!r}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def describe_file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _not_regular(mode: int) -> SourceError:
    return SourceError(f"is {describe_file_kind(mode)}, not a regular file; only files are read")


def read_file(path: Path, settings: IngestSettings) -> SourceDocument:
    try:
        # A FIFO or a device would block the read for ever while the vault lock is held:
        # look before opening, and open without blocking in case it was swapped meanwhile.
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(info.st_mode)
        if info.st_size > settings.max_source_bytes:
            raise SourceError(f"larger than {settings.max_source_bytes:,} bytes ({info.st_size:,})")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with open(fd, "rb") as handle:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):
                raise _not_regular(opened.st_mode)
            data = handle.read(settings.max_source_bytes + 1)
    except FileNotFoundError:
        raise SourceError("no such file (it may have been moved or deleted)") from None
    except IsADirectoryError:
        raise SourceError("is a folder (use --recursive to read folders)") from None
    except PermissionError:
        raise SourceError("cannot be read: permission denied") from None
    except OSError as exc:
        raise SourceError(f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > settings.max_source_bytes:
        raise SourceError(f"larger than {settings.max_source_bytes:,} bytes")
    fmt = SUFFIX_FORMATS.get(path.suffix.lower(), "text")
    if path.name.lower().endswith((".rst.txt", ".rest.txt")):
        fmt = "rst"  # how Sphinx publishes reST sources
    text = _decode(data, "the file")
    if fmt == "text" and re.match(r"\s*<(?:!doctype\s+html|html)\b", text, re.IGNORECASE):
        fmt = "html"
    return _document(file_uri(path), path.stem.replace("-", " ").replace("_", " "), text, fmt, data)


def read_url(
    url: str, settings: IngestSettings, transport: httpx.BaseTransport | None = None
) -> SourceDocument:
    """Fetch `url` within `settings.url_timeout_s` in all, however slowly the server sends.

    Per-read timeouts alone let a server that drips a byte a second hold an ingest for ever,
    so the fetch runs in a worker and is abandoned at the deadline.
    """
    outcome: list[SourceDocument | BaseException] = []
    deadline = time.monotonic() + settings.url_timeout_s

    def fetch() -> None:
        try:
            outcome.append(_fetch_url(url, settings, transport, deadline))
        except BaseException as exc:  # handed to the waiting thread, which raises it
            outcome.append(exc)

    worker = threading.Thread(target=fetch, name="lore-url-fetch", daemon=True)
    worker.start()
    worker.join(settings.url_timeout_s + 0.05)
    if not outcome:
        raise SourceError(f"timed out after {settings.url_timeout_s:g}s")
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _refused_address(host: str, allow_private: bool) -> str | None:
    """Why `host` may not be fetched, or None: a loopback, link-local or private address."""
    if allow_private or not host:
        return None
    try:
        addresses = [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            return None  # the fetch itself reports a name that does not resolve
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    for address in addresses:
        mapped = getattr(address, "ipv4_mapped", None)
        checked = mapped or address
        if not checked.is_global or checked.is_multicast:
            return (
                f"{host} is a loopback, link-local or private address ({checked}); "
                "set ingest.allow_private_urls: true in lore.yaml to fetch it"
            )
    return None


def _fetch_url(
    url: str, settings: IngestSettings, transport: httpx.BaseTransport | None, deadline: float
) -> SourceDocument:
    timeout = httpx.Timeout(settings.url_timeout_s, connect=min(settings.url_timeout_s, 10.0))

    def check_request(request: httpx.Request) -> None:
        reason = _refused_address(request.url.host, settings.allow_private_urls)
        if reason:
            redirected = str(request.url) != url
            raise SourceError(f"refused {'a redirect' if redirected else 'the address'}: {reason}")

    def check_peer(response: httpx.Response) -> None:
        # The name may resolve differently for the connection than for the check above.
        stream = response.extensions.get("network_stream")
        peer = stream.get_extra_info("server_addr") if stream is not None else None
        if isinstance(peer, tuple) and peer:
            reason = _refused_address(str(peer[0]), settings.allow_private_urls)
            if reason:
                raise SourceError(f"refused: {reason}")

    try:
        with (
            httpx.Client(
                follow_redirects=True,
                max_redirects=settings.url_max_redirects,
                timeout=timeout,
                transport=transport,
                headers={"User-Agent": "lore-ingest"},
                event_hooks={"request": [check_request], "response": [check_peer]},
            ) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code >= 400:
                raise SourceError(f"the server answered HTTP {response.status_code}")
            media = response.headers.get("content-type", "").split(";")[0].strip().lower()
            fmt = CONTENT_TYPES.get(media)
            if fmt is None:
                raise SourceError(f"unsupported content type {media or '(none)'!r}")
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > settings.url_max_bytes:
                raise SourceError(
                    f"larger than {settings.url_max_bytes:,} bytes ({int(declared):,})"
                )
            chunks: list[bytes] = []
            received = 0
            for chunk in response.iter_bytes():
                if time.monotonic() > deadline:
                    raise SourceError(f"timed out after {settings.url_timeout_s:g}s")
                received += len(chunk)
                if received > settings.url_max_bytes:
                    raise SourceError(f"larger than {settings.url_max_bytes:,} bytes")
                chunks.append(chunk)
            data = b"".join(chunks)
            encoding = response.charset_encoding or "utf-8"
            final_url = str(response.url)
    except httpx.TimeoutException:
        raise SourceError(f"timed out after {settings.url_timeout_s:g}s") from None
    except httpx.TooManyRedirects:
        raise SourceError(f"more than {settings.url_max_redirects} redirects") from None
    except httpx.InvalidURL as exc:
        raise SourceError(f"not a valid URL ({exc})") from None
    except httpx.HTTPError as exc:
        raise SourceError(f"cannot be fetched: {type(exc).__name__}: {exc}") from None
    except OSError as exc:
        raise SourceError(f"cannot be fetched: {exc.strerror or exc}") from None
    text = _decode(data, "the page", encoding)
    name = urllib.parse.urlsplit(final_url).path.rstrip("/").rsplit("/", 1)[-1]
    return _document(url, name or urllib.parse.urlsplit(url).hostname or url, text, fmt, data)


def document_from_text(text: str, uri: str, title: str, fmt: Format = "markdown") -> SourceDocument:
    # Notes are UTF-8, which holds no lone surrogate (a byte of an argument that was not
    # UTF-8, kept by Python as one): each becomes what decoding such a byte makes of it.
    text, title = utf8_text(text), utf8_text(title)
    raw = text.encode("utf-8")
    if not text.strip():
        raise SourceError("the text is empty")
    return _document(uri, title, text, fmt, raw, explicit_title=True)


def _document(
    uri: str, fallback_title: str, text: str, fmt: Format, raw: bytes, explicit_title: bool = False
) -> SourceDocument:
    title = ""
    if fmt == "html":
        text, title = html_to_text(text, base_url=uri)
    elif fmt == "markdown":
        text, title = _markdown_front_matter(text)
    if not title:
        title = _first_heading(text, fmt)
    if explicit_title or not title:
        title = fallback_title if explicit_title or not title else title
    sha = hashlib.sha256(raw).hexdigest()
    # The title names notes and is shown everywhere: no escape sequence or hidden character
    # from the document goes into it. The text keeps them, for the gates to judge.
    return SourceDocument(uri, clean_title(title) or clean_title(uri) or uri, text, fmt, sha, raw)


def _markdown_front_matter(text: str) -> tuple[str, str]:
    front, body, _ = split_front_matter(text)
    if not front:
        return text, ""
    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError:
        return text, ""
    if not isinstance(data, dict):
        return text, ""
    title = data.get("title")
    if set(map(str, data)) <= _HARMLESS_FRONT_KEYS:
        return body, str(title) if isinstance(title, str) else ""
    # Keys such as trust or status in a source are an attempt to set Lore's metadata: keep
    # the block as text so the sanitiser holds it for review.
    return text, str(title) if isinstance(title, str) else ""


_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+_:.<>])\1{2,}\s*$")


def _first_heading(text: str, fmt: Format) -> str:
    if fmt == "rst":
        lines = text.split("\n")
        for number in range(1, len(lines)):
            if (
                _RST_UNDERLINE.match(lines[number])
                and lines[number - 1].strip()
                and not _RST_UNDERLINE.match(lines[number - 1])
            ):
                return lines[number - 1].strip()
        return ""
    match = re.search(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.MULTILINE)
    return match.group(1) if match else ""


_DROPPED = {
    "script",
    "style",
    "nav",
    "header",
    "footer",
    "aside",
    "noscript",
    "template",
    "svg",
    "head",
    "iframe",
    "object",
    "form",
    "button",
    "select",
}
_BLOCK = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "blockquote",
    "pre",
    "table",
    "tr",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "figure",
    "figcaption",
    "br",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "td",
    "th",
}
_VOID = {
    "br",
    "hr",
    "img",
    "input",
    "meta",
    "link",
    "area",
    "base",
    "col",
    "embed",
    "source",
    "track",
    "wbr",
}
_HIDING = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0|opacity\s*:\s*0(?:\.0+)?\s*(?:;|$)"
    r"|(?<![-\w])color\s*:\s*(?:white|#fff)|(?:left|top|text-indent)\s*:\s*-\d{3,}",
    re.IGNORECASE,
)


def link_target(href: str, base_url: str = "") -> str | None:
    """Where a link of the page leads, as a Markdown link target, or None to keep its text only.

    Web and mail addresses are kept; a relative link is resolved against the page's own web
    address. Script, data and in-page links, and relative links of a local file, lead nowhere
    a note's reader could follow.
    """
    href = href.strip()
    if not href or href.startswith("#"):
        return None
    scheme = urllib.parse.urlsplit(href).scheme.lower()
    if not scheme:
        if urllib.parse.urlsplit(base_url).scheme.lower() not in ("http", "https"):
            return None
        href = urllib.parse.urljoin(base_url, href)
        scheme = urllib.parse.urlsplit(href).scheme.lower()
    if scheme not in ("http", "https", "mailto"):
        return None
    # Markdown ends a link target at a space or an unmatched parenthesis.
    return href.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


class _TextExtractor(HTMLParser):
    """Visible text of a page; hidden parts are kept with their markup so the sanitiser sees them."""

    def __init__(self, base_url: str = "") -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._dropped_depth = 0
        self._stack: list[tuple[str, bool]] = []
        self._in_title = False
        self._in_pre = 0
        self._base_url = base_url
        # For each open <a>: its target (None: text only) and where its text starts in parts.
        self._links: list[tuple[str | None, int]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
            return
        if tag in _DROPPED:
            if tag not in _VOID:
                self._dropped_depth += 1
            return
        if self._dropped_depth:
            return
        values = dict(attrs)
        hiding = (
            "hidden" in values
            or (values.get("aria-hidden") or "").lower() == "true"
            or bool(_HIDING.search(values.get("style") or ""))
        )
        if tag in _BLOCK:
            self.parts.append("\n\n")
        if re.fullmatch(r"h[1-6]", tag):
            self.parts.append("#" * int(tag[1]) + " ")
        elif tag == "li":
            self.parts.append("- ")
        elif tag == "pre":
            self._in_pre += 1
        elif tag == "a" and not self._in_pre:
            target = link_target(values.get("href") or "", self._base_url)
            self._links.append((target, len(self.parts)))
            if target is not None:
                self.parts.append("[")
        elif tag == "img" and values.get("src"):
            alt = (values.get("alt") or "").replace("]", " ")
            self.parts.append(f"![{alt}]({values['src']})")
        if hiding:
            self.parts.append(self.get_starttag_text() or f"<{tag} hidden>")
        if tag not in _VOID:
            self._stack.append((tag, hiding))

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        if tag in _DROPPED:
            if tag not in _VOID and self._dropped_depth:
                self._dropped_depth -= 1
            return
        if self._dropped_depth:
            return
        while self._stack:
            open_tag, hiding = self._stack.pop()
            if hiding:
                self.parts.append(f"</{open_tag}>")
            if open_tag == tag:
                break
        if tag == "pre" and self._in_pre:
            self._in_pre -= 1
        if tag == "a" and self._links:
            self._close_link()
        if tag in _BLOCK:
            self.parts.append("\n\n")

    def _close_link(self) -> None:
        target, start = self._links.pop()
        if target is None:
            return
        text = "".join(self.parts[start + 1 :])
        if not text.strip() or "[" in text or "]" in text:
            self.parts[start] = ""  # no text to click, or text that would break the link
            return
        self.parts.append(f"]({target})")

    def close_open_links(self) -> None:
        """Links left open where the page ended, or where its markup broke."""
        while self._links:
            self._close_link()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if self._dropped_depth:
            return
        self.parts.append(data if self._in_pre else re.sub(r"\s+", " ", data))

    def handle_comment(self, data: str) -> None:
        # Comments are invisible in a browser. One that says something gets through as a
        # comment so the sanitiser holds it; markers like <!-- nav --> are dropped.
        if not self._dropped_depth and len(data.split()) >= 4:
            self.parts.append(f"<!--{data}-->")


def html_to_text(page: str, base_url: str = "") -> tuple[str, str]:
    """(the page's visible text as Markdown, its title); relative links resolve on `base_url`."""
    parser = _TextExtractor(base_url)
    try:
        parser.feed(page)
        parser.close()
    except (AssertionError, ValueError):
        pass  # keep what was read before the markup broke
    parser.close_open_links()
    text = "".join(parser.parts)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    lines = [line.strip() if not line.startswith("    ") else line for line in text.split("\n")]
    return "\n".join(lines).strip() + "\n", " ".join(parser.title.split())


def walk(folder: Path, recursive: bool) -> list[Path]:
    """Readable documents in `folder`, hidden files and folders skipped, sorted."""
    found: list[Path] = []
    if recursive:
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                if not name.startswith(".") and Path(name).suffix.lower() in SUFFIX_FORMATS:
                    found.append(Path(root) / name)
    else:
        for entry in sorted(folder.iterdir()):
            # Anything but a folder is listed, so a pipe or device gets its one-line refusal.
            if (
                not entry.is_dir()
                and not entry.name.startswith(".")
                and entry.suffix.lower() in SUFFIX_FORMATS
            ):
                found.append(entry)
    return found
