"""Round trips of `lore mcp` tools beside the same `LoreSession` operations called directly.

The vault (the sample vault unless --vault names another, such as bench/.data/vault-10000
that index_bench.py builds) is copied to a temporary folder, so nothing is written to it.
Each tool is called through the MCP SDK's in-memory transport (client and server in this
process) and, with --stdio, through a `lore mcp` subprocess over stdio, as a desktop agent
runs it. The direct calls are the yardstick: the difference is what the protocol costs.

Printed, not asserted: p50/p95 in ms of search, read_note and context, per path, with and
without the Python SDK client's own check of each reply against its schema. Target for the
stdio round trip of search and read_note: p50 under 20 ms.

    python bench/mcp_bench.py [--vault PATH] [--calls N] [--stdio]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import Implementation

from lore.core.session import LoreSession
from lore.mcp_server.server import build_server

REPO = Path(__file__).resolve().parents[1]
SAMPLE_VAULT = REPO / "samples" / "vault"
DERIVED = (".lore", "history.jsonl", "metrics.jsonl", "audit.jsonl", "memory", "quarantine")
TARGET_P50_MS = 20.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def report(name: str, values: list[float]) -> None:
    print(
        f"  {name:<34} p50 {percentile(values, 0.5):7.2f} ms   "
        f"p95 {percentile(values, 0.95):7.2f} ms   (mean {statistics.fmean(values):.2f}, n={len(values)})"
    )


def workload(session: LoreSession, calls: int) -> dict[str, list[dict[str, Any]]]:
    """Arguments for each tool: title words as queries, note ids, questions on titles."""
    docs = session.note_documents()
    rng = random.Random(13)
    picked = [rng.choice(docs) for _ in range(calls)]
    return {
        "search": [{"query": " ".join(doc["title"].split()[:2]), "limit": 10} for doc in picked],
        "read_note": [{"note": doc["id"]} for doc in picked],
        "context": [{"question": f"What is {doc['title']}?"} for doc in picked],
    }


def direct(session: LoreSession, tool: str, arguments: dict[str, Any]) -> object:
    if tool == "search":
        return session.search(arguments["query"], arguments["limit"])
    if tool == "read_note":
        note = session.find_note(arguments["note"])
        return note, session.backlinks(note.title)
    return session.preview(arguments["question"])


async def timed(action: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await action()
    return (time.perf_counter() - started) * 1000


def skip_client_checks(client: ClientSession, tools: list[str]) -> None:
    """The Python SDK's client checks each structured reply against the tool's schema and
    builds the validator anew every time (about 20 ms here); other agents' clients check in
    their own way, so the server's share is timed with that check left out too."""
    for tool in tools:
        client._tool_output_schemas[tool] = None


async def over(
    client: ClientSession, work: dict[str, list[dict[str, Any]]]
) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {}
    for tool, calls in work.items():
        for arguments in calls[:5]:  # warm caches and the searcher before timing
            await client.call_tool(tool, arguments)
        timings[tool] = []
        for arguments in calls:

            async def call(tool: str = tool, arguments: dict[str, Any] = arguments) -> None:
                result = await client.call_tool(tool, arguments)
                assert not result.isError, result.content

            timings[tool].append(await timed(call))
    return timings


async def both_ways(
    client: ClientSession, work: dict[str, list[dict[str, Any]]]
) -> dict[str, list[float]]:
    """Print the round trips as the SDK client makes them, then without its schema check;
    return the latter."""
    await client.list_tools()
    for tool, values in (await over(client, work)).items():
        report(f"{tool} (client checks schema)", values)
    skip_client_checks(client, list(work))
    timings = await over(client, work)
    for tool, values in timings.items():
        report(tool, values)
    return timings


async def run(vault: Path, calls: int, stdio: bool) -> None:
    session = LoreSession.open(vault)
    work = workload(session, calls)
    print(f"vault: {session.name}, {len(session.note_documents()):,} notes; {calls} calls a tool")

    print("direct LoreSession calls (the yardstick)")
    for tool, arguments_list in work.items():
        for arguments in arguments_list[:5]:
            direct(session, tool, arguments)
        values = []
        for arguments in arguments_list:
            started = time.perf_counter()
            direct(session, tool, arguments)
            values.append((time.perf_counter() - started) * 1000)
        report(tool, values)

    print("MCP in-memory transport (SDK client and server in one process)")
    server = build_server(session)
    async with create_connected_server_and_client_session(
        server, client_info=Implementation(name="bench", version="1")
    ) as client:
        await both_ways(client, work)
    await server.clients.aclose()
    session.close()

    if stdio:
        print("MCP over stdio (a `lore mcp` subprocess)")
        parameters = StdioServerParameters(
            command=sys.executable,
            args=["-m", "lore", "--vault", str(vault), "mcp"],
            env=dict(os.environ),
        )
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            timings = await both_ways(client, work)
        for tool in ("search", "read_note"):
            p50 = percentile(timings[tool], 0.5)
            verdict = "meets" if p50 < TARGET_P50_MS else "misses"
            print(f"  {tool} over stdio {verdict} the target of p50 under {TARGET_P50_MS:.0f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, default=SAMPLE_VAULT, help="the vault to copy")
    parser.add_argument("--calls", type=int, default=200, help="timed calls per tool and path")
    parser.add_argument("--stdio", action="store_true", help="also time a stdio subprocess")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lore-mcp-bench-") as folder:
        copy = Path(folder) / "vault"
        # The index is copied too, when there is one, so a large vault is not rebuilt.
        shutil.copytree(args.vault, copy, ignore=shutil.ignore_patterns(*DERIVED[1:]))
        os.environ.setdefault("LORE_HOME", str(Path(folder) / "home"))
        anyio.run(run, copy, args.calls, args.stdio)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
