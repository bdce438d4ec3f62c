"""Reading the live turns for compaction: what each costs, and the digest of each answered one.

A long backlog is read in two processes when a second core stands idle: this one reads the
first part of the live lines while a forked copy of it reads the rest in chunks, and the
lists are joined in order. Once done with its own part, this one takes the last chunks the
copy has not begun, so that the two finish together. Digests are pure functions of their
records, so the turns and digests are the very ones one process would make. Whatever the
second process does not send (it cannot start, fails or does not answer in time), this one
reads too: nothing is lost, and nothing is counted twice. The copy is killed with this
process, so it never holds the vault lock after it.

Each process can also work ahead on the turns it read (`Ahead`): compaction has each make
the summaries of its own stretch of the past, which are pure functions of what they
summarise, so that the first process looks them up where it would make them one by one.
"""

from __future__ import annotations

import json
import mmap
import os
import pickle
import select
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from typing import Any, Protocol

from lore.core.history import HistoryStore
from lore.core.tokens import estimate_tokens

Digest = Callable[[dict[str, Any]], str]
Loads = Callable[[bytes], Any]

# Below this many bytes of live history (about 2,000 turns) one process is done before a
# second would have started.
TWO_PROCESS_BYTES = 2 << 20
# The second process is given at least this long to answer, and at least this many times
# what this process took for its own half.
_ANSWER_SECONDS = 60.0
_ANSWER_FACTOR = 4.0
# This process reads this share of the live history before it takes chunks from the other
# one's part; the other reads the rest in chunks of at least this many bytes, no more than
# this many of them.
_FIRST_SHARE = 0.45
_CHUNK_BYTES = 1 << 20
_MAX_CHUNKS = 64
# Lines are counted in blocks of this many bytes.
_COUNT_BLOCK_BYTES = 1 << 20


# A live turn as compaction needs it: (id, answered, tokens, end, digest), where `end` is the
# byte offset just after its line and `digest` is "" until it is digested. A plain tuple of
# plain values, as the garbage collector stops looking at those, and a long backlog holds
# 100,000s of them.
LiveTurn = tuple[str, bool, int, int, str]


class Ahead(Protocol):
    """Work done on the digested turns of one stretch, in the process that read them."""

    def prepare(self, turns: list[LiveTurn], first: int, through_end: bool) -> object:
        """What `turns` let be worked out ahead, to be `absorb`ed: picklable, made of plain
        values. `first` is where they stand among the live turns, as far as this process
        can tell; `through_end`, whether they run to the end of the history."""
        ...

    def absorb(self, prepared: object) -> None:
        """Keep what `prepare` made, here or in the other process; anything else is left."""
        ...


# The decoder's own scanner (set by `JSONDecoder.__init__` for its `raw_decode`; typeshed
# does not list it), called without `json.loads`'s three Python calls and two whitespace
# matches around it: a fifth of the time of decoding each of a long history's lines, which
# Lore writes as one object from its first character.
_scan_value: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_JSON_WHITESPACE = " \t\n\r"


def uncovered_record(
    raw: bytes, covered: set[str] | None, loads: Loads | None = None
) -> dict[str, Any] | None:
    """The turn record on a history line, or None for garbage or a turn memory already covers.

    `loads`, when given, decodes it first (orjson's, for a long backlog), and only what it
    refuses is decoded again, as `json.loads` would."""
    if loads is None:
        record = _decoded(raw)
    else:
        try:
            record = loads(raw)
        except ValueError:
            record = _decoded(raw)
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        return None
    if covered is not None and record["id"] in covered:
        return None
    return record


def _decoded(raw: bytes) -> Any:
    """What `json.loads` makes of `raw`, None where it refuses it."""
    try:
        text = raw.decode("utf-8")
        if text[:1] == "{":
            record, end = _scan_value(text, 0)
            if end != len(text) and text[end:].strip(_JSON_WHITESPACE):
                return None  # more than the value: what `json.loads` refuses
        else:
            record = json.loads(text)
    except (ValueError, UnicodeDecodeError, StopIteration, RecursionError):
        # The scanner stops with StopIteration where a value is missing (`{"a": }`), as
        # `raw_decode` turns into the ValueError `json.loads` raises; RecursionError is
        # arrays or objects nested deeper than it goes.
        return None
    return record


def text_of(record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    return value if isinstance(value, str) else str(value or "")


def _scan(
    history: HistoryStore,
    start: int,
    stop: int | None,
    covered: set[str] | None,
    loads: Loads | None = None,
) -> Iterator[tuple[LiveTurn, dict[str, Any]]]:
    """Each live turn on the lines from `start` to `stop` (a line start, or the end), with
    only what compaction needs and no digest yet, and the record it was read from."""
    for position, raw in history.iter_lines_from(start):
        if stop is not None and position >= stop:
            return
        if not raw.endswith(b"\n"):
            continue  # a torn last line: never compact past it
        record = uncovered_record(raw, covered, loads)
        if record is None:
            continue
        tokens = estimate_tokens(text_of(record, "question"))
        tokens += estimate_tokens(text_of(record, "answer"))
        ok = record.get("status", "ok") == "ok"
        yield (record["id"], ok, tokens, position + len(raw), ""), record


def read_live(
    history: HistoryStore,
    start: int,
    covered: set[str] | None,
    digest: Digest,
    threshold_tokens: int,
    before_fork: Callable[[], None] | None = None,
    ahead: Ahead | None = None,
    while_waiting: Callable[[], None] | None = None,
) -> list[LiveTurn]:
    """The live turns, oldest first; once they pass the threshold, each answered one with
    its digest.

    History is read once. Until the turns read pass the threshold nothing may be compacted,
    so their records wait (at most the threshold's worth); past it every answered turn is
    digested as it is read, and only the few newest, which stay live, in vain.

    `before_fork`, when given, makes `digest` fit for a forked process (one that must not
    share this one's open index, say); without it the turns are read here only. A backlog
    long enough to be read in two processes is digested whole: it is far past any
    threshold. Only then is `ahead` asked to work ahead, on each half, in its own process,
    and `while_waiting` called once this one has only the other's answer to wait for.
    """
    if before_fork is not None and history.size() - start >= TWO_PROCESS_BYTES and _can_fork():
        found = _read_in_two(history, start, covered, digest, before_fork, ahead, while_waiting)
        if found is not None:
            return found
    live: list[LiveTurn] = []
    # Where in `live` the answered turns read before the threshold are, and their records.
    waiting: list[tuple[int, dict[str, Any]]] = []
    total = 0
    for turn, record in _scan(history, start, None, covered):
        turn_id, ok, tokens, end, _ = turn
        total += tokens
        if ok:  # only answered turns are summarised
            if total <= threshold_tokens:
                waiting.append((len(live), record))
            else:
                for index, held in waiting:
                    live[index] = (*live[index][:4], digest(held))
                waiting.clear()
                turn = (turn_id, ok, tokens, end, digest(record))
        live.append(turn)
    return live


def _digested(
    history: HistoryStore,
    start: int,
    stop: int | None,
    covered: set[str] | None,
    digest: Digest,
    loads: Loads | None = None,
) -> list[LiveTurn]:
    """The live turns from `start` to `stop`, each answered one with its digest."""
    return [
        (turn[0], True, turn[2], turn[3], digest(record)) if turn[1] else turn
        for turn, record in _scan(history, start, stop, covered, loads)
    ]


# -- two processes ----------------------------------------------------------------------------


def _can_fork() -> bool:
    """Whether a second process may be forked, and has a core to itself now.

    Only a process with one thread is forked: another thread could hold a lock the copy
    would wait on forever. And only onto a core no other work holds: when other work keeps
    the cores busy, the scheduler gives this user's processes no more time for being two,
    and the second only adds its start and its answer to the time taken.

    Which cores are free is read from the time each spent idle (`_free_cores`), and only
    where that cannot be read from the tasks ready to run (`_runnable`): a virtual machine's
    kernel may keep a thread always ready that never takes a tick, and by that count alone
    its two idle cores looked busy.
    """
    if not hasattr(os, "fork") or not hasattr(os, "sched_getaffinity"):
        return False
    cores = os.sched_getaffinity(0)
    if len(cores) < 2 or threading.active_count() != 1:
        return False
    free = _free_cores(cores)
    if free is not None:
        # This process sleeps while it looks, so its own core is among the free ones.
        return free >= 2
    return _runnable() < len(cores)


# Long enough for a few of the kernel's 10 ms ticks on each core.
_IDLE_WINDOW_S = 0.03


def _free_cores(cores: set[int], window_s: float = _IDLE_WINDOW_S) -> int | None:
    """How many of `cores` were idle at least half of a short wait (/proc/stat); None
    where the kernel does not say."""
    try:
        before = _idle_ticks(_read_proc_stat())
        time.sleep(window_s)
        after = _idle_ticks(_read_proc_stat())
    except (OSError, ValueError, IndexError):
        return None
    free = 0
    for core in cores:
        if core not in before or core not in after:
            return None
        idle = after[core][0] - before[core][0]
        total = after[core][1] - before[core][1]
        if total > 0 and 2 * idle >= total:
            free += 1
    return free


def _read_proc_stat() -> str:
    with open("/proc/stat", encoding="ascii") as handle:
        return handle.read()


def _idle_ticks(stat: str) -> dict[int, tuple[int, int]]:
    """Each core's ticks idle (or waiting on the disk) and in all, from /proc/stat."""
    ticks: dict[int, tuple[int, int]] = {}
    for line in stat.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        # user nice system idle iowait irq softirq steal (older kernels stop sooner); guest
        # time is inside user's.
        values = [int(value) for value in rest.split()[:8]]
        ticks[int(name[3:])] = (values[3] + sum(values[4:5]), sum(values))
    return ticks


def _runnable(looks: int = 3) -> int:
    """The tasks ready to run this moment, this one among them: the fewest of a few looks
    at /proc/loadavg, so a task that runs for an instant does not count. 1 if unknown."""
    fewest: int | None = None
    for look in range(looks):
        if look:
            time.sleep(0.005)
        try:
            with open("/proc/loadavg", encoding="ascii") as handle:
                running = int(handle.read().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return 1
        fewest = running if fewest is None else min(fewest, running)
    return fewest or 1


def _read_in_two(
    history: HistoryStore,
    start: int,
    covered: set[str] | None,
    digest: Digest,
    before_fork: Callable[[], None],
    ahead: Ahead | None = None,
    while_waiting: Callable[[], None] | None = None,
) -> list[LiveTurn] | None:
    """The live turns from `start`, digested, read in this process and a forked one; None
    when there is no second line to start the other part at, or no process to read it.

    This process reads the first part, a little under half; the other reads the rest in
    chunks, noting in memory the two share how many it has done. Whichever is slowed down
    (by other work on its core, say), the two end together: once done with its part, this
    one takes the other's chunks from the last, one at a time, each after telling it to
    stop short of it, until the next is the one it is on. Each process works `ahead` on
    what it read.
    """
    size = history.size()
    middle = _line_start_after(history, start + int((size - start) * _FIRST_SHARE))
    if middle is None:
        return None
    bounds = _chunk_starts(history, middle, size)
    chunks = len(bounds)
    before_fork()
    # A long backlog's lines are decoded by orjson, in two thirds of the time of the
    # standard decoder; loaded here, once for both processes, as a short one would not
    # make up for its loading.
    from orjson import loads

    parent = os.getpid()
    try:
        # The chunks the other process has done, then how many it may do; written by one
        # process each. A value read while it changes can only make a chunk read twice
        # (and one copy dropped) or left to this process: never lost.
        shared = mmap.mmap(-1, 16)
        reader, writer = os.pipe()
    except OSError:
        return None
    _note(shared, _LIMIT, chunks)
    try:
        child = os.fork()
    except OSError:
        os.close(reader)
        os.close(writer)
        return None
    if child == 0:
        # The copy never returns: it sends what it read and exits, running no cleanup of
        # the first process's (no buffers flushed, no lock let go, no file removed).
        code = 1
        try:
            os.close(reader)
            if _dies_with(parent):
                # Each chunk pickled as soon as it is read, so that once told to stop it
                # has only to send them.
                done: list[bytes] = []
                # Where each chunk stands, if every line before it is a live turn.
                before = _lines_between(history, start, middle) if ahead is not None else 0
                for number in range(chunks):
                    if number >= _noted(shared, _LIMIT):
                        break
                    turns = _chunk(history, bounds, number, covered, digest, loads)
                    prepared = None
                    if ahead is not None:
                        prepared = ahead.prepare(turns, before, number + 1 == chunks)
                        before += len(turns)
                    done.append(pickle.dumps((turns, prepared), protocol=pickle.HIGHEST_PROTOCOL))
                    _note(shared, _DONE, len(done))
                _send(writer, done)
                code = 0
        finally:
            os._exit(code)
    os.close(writer)
    stolen: list[LiveTurn] = []
    try:
        begun = time.monotonic()
        first = _digested(history, start, middle, covered, digest, loads)
        if ahead is not None:
            ahead.absorb(ahead.prepare(first, 0, False))
        # Then the last chunk the other process has not begun, again and again: it is
        # told to stop short of each before this one reads it, and keeps the chunk it is
        # on, so the two end within a chunk of each other however fast each one runs.
        # Each is worked ahead on as soon as it is read, as there.
        limit = chunks
        taken: list[list[LiveTurn]] = []
        before = 0
        while limit - 1 > _noted(shared, _DONE):
            limit -= 1
            _note(shared, _LIMIT, limit)
            turns = _chunk(history, bounds, limit, covered, digest, loads)
            taken.append(turns)
            if ahead is not None:
                if limit + 1 == chunks:
                    before = len(first) + _lines_between(history, middle, bounds[limit])
                else:
                    before -= len(turns)
                ahead.absorb(ahead.prepare(turns, before, limit + 1 == chunks))
        stolen = list(chain.from_iterable(reversed(taken)))
        wait = max(_ANSWER_SECONDS, _ANSWER_FACTOR * (time.monotonic() - begun))
        if while_waiting is not None:
            while_waiting()
        answer = _received(reader, wait)
    finally:
        os.close(reader)
        _end(child)
        shared.close()
    theirs: list[list[LiveTurn]] = []
    # Chunks past `limit` were read there too, but this process's own copy is kept.
    for piece in (answer or [])[:limit]:
        unpacked = _unpacked(piece)
        if unpacked is None:
            break
        theirs.append(unpacked[0])
        if ahead is not None and unpacked[1] is not None:
            ahead.absorb(unpacked[1])
    # Whatever the other process did not send, it failed to read: this one reads it.
    theirs.extend(
        _chunk(history, bounds, number, covered, digest, loads)
        for number in range(len(theirs), limit)
    )
    for chunk in theirs:
        first.extend(chunk)
    first.extend(stolen)
    return first


# Where the shared memory holds how many chunks the other process has done, and how many it
# may do.
_DONE, _LIMIT = 0, 8


def _note(shared: mmap.mmap, slot: int, count: int) -> None:
    shared[slot : slot + 8] = count.to_bytes(8, "little")


def _noted(shared: mmap.mmap, slot: int) -> int:
    return int.from_bytes(shared[slot : slot + 8], "little")


def _chunk_starts(history: HistoryStore, middle: int, size: int) -> list[int]:
    """Where the chunks of the lines from `middle` to `size` start, `middle` first."""
    bounds = [middle]
    step = max(_CHUNK_BYTES, (size - middle) // _MAX_CHUNKS)
    while True:
        after = _line_start_after(history, bounds[-1] + step)
        if after is None or after >= size:
            return bounds
        bounds.append(after)


def _chunk(
    history: HistoryStore,
    bounds: list[int],
    number: int,
    covered: set[str] | None,
    digest: Digest,
    loads: Loads | None = None,
) -> list[LiveTurn]:
    stop = bounds[number + 1] if number + 1 < len(bounds) else None
    return _digested(history, bounds[number], stop, covered, digest, loads)


def _lines_between(history: HistoryStore, start: int, stop: int) -> int:
    """How many lines start from `start` up to `stop`, both line starts: the line breaks
    between them, counted a block at a time rather than a line at a time, as each process
    counts those of most of the other's part."""
    count = 0
    try:
        with open(history.path, "rb") as handle:
            handle.seek(start)
            left = stop - start
            while left > 0:
                block = handle.read(min(left, _COUNT_BLOCK_BYTES))
                if not block:
                    break
                count += block.count(b"\n")
                left -= len(block)
    except OSError:
        return 0  # only where the turns stand is guessed wrong: nothing is made ahead
    return count


def _line_start_after(history: HistoryStore, offset: int) -> int | None:
    """The start of the first whole line after `offset`, if a line starts there."""
    for position, raw in history.iter_lines_from(offset):
        if raw.endswith(b"\n"):
            after = position + len(raw)
            return after if after < history.size() else None
        return None
    return None


def _dies_with(parent: int) -> bool:
    """In the copy: whether it will be killed when `parent` dies, so that it can never
    outlive it holding the vault lock the two share."""
    try:
        import ctypes

        # prctl(PR_SET_PDEATHSIG, SIGKILL)
        if ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL) != 0:
            return False
    except (OSError, AttributeError):
        return False
    return os.getppid() == parent


def _send(writer: int, chunks: list[bytes]) -> None:
    """The chunks read, each pickled with what was worked out ahead from it, pickled after
    their length, written whole to `writer`."""
    data = pickle.dumps(chunks, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(len(data).to_bytes(8, "big") + data)
    while view:
        view = view[os.write(writer, view) :]


def _received(reader: int, wait: float) -> list[bytes] | None:
    """What the other process sent (its chunks, each still pickled), or None if it sent
    nothing whole within `wait` seconds."""
    deadline = time.monotonic() + wait
    pieces = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([reader], [], [], left)[0]:
            return None
        piece = os.read(reader, 1 << 20)
        if not piece:
            break
        pieces.append(piece)
    data = memoryview(b"".join(pieces))
    if len(data) < 8 or int.from_bytes(data[:8], "big") != len(data) - 8:
        return None  # it stopped part way
    try:
        sent = pickle.loads(data[8:])
    except Exception:
        return None  # not what `_send` writes
    if type(sent) is not list or not all(type(chunk) is bytes for chunk in sent):
        return None
    return sent


def _unpacked(chunk: bytes) -> tuple[list[LiveTurn], object] | None:
    """A chunk's turns, and what was worked out ahead from them; None if it is not that."""
    try:
        turns, prepared = pickle.loads(chunk)
    except Exception:
        return None
    if type(turns) is not list or not are_live_turns(turns):
        return None
    return turns, prepared


_LIVE_TURN_FIELDS = (str, bool, int, int, str)


def are_live_turns(turns: list[Any]) -> bool:
    """Whether every item of `turns` is a `LiveTurn`, each field of exactly its type.

    Checked a field at a time across all of them, by the types each holds, rather than a
    turn at a time: half the time for the 10,000s a long backlog sends."""
    if not turns:
        return True
    if not only_of(turns, tuple) or set(map(len, turns)) != {5}:
        return False
    return all(map(only_of, zip(*turns, strict=True), _LIVE_TURN_FIELDS))


def only_of(values: Iterable[object], kind: type) -> bool:
    """Whether each of `values` is of exactly the type `kind` (a subclass is not)."""
    return set(map(type, values)) <= {kind}


def _end(child: int) -> None:
    """The other process, ended if it has not ended itself, and reaped."""
    try:
        if os.waitpid(child, os.WNOHANG) == (0, 0):
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
    except ChildProcessError:
        pass
