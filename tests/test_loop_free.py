"""Async code runs the same with an event loop and without one, to its end either way."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest

from lore.core import loop_free
from lore.core.loop_free import (
    is_cancellation,
    off_loop,
    off_loop_to_the_end,
    pass_turn,
    run_without_loop,
)


async def _counted(steps: int) -> AsyncIterator[int]:
    for step in range(steps):
        await pass_turn()
        yield step


async def _work(seen: list[str]) -> int:
    total = 0
    async for step in _counted(5):
        total += step
    seen.append(await off_loop(lambda: threading.current_thread().name))
    seen.append(await off_loop_to_the_end(str.upper, "done"))
    return total


def test_without_a_loop_everything_runs_here_to_the_end() -> None:
    seen: list[str] = []
    assert run_without_loop(_work(seen)) == 10
    assert seen == [threading.current_thread().name, "DONE"]
    assert not loop_free.loop_running()


def test_under_a_loop_the_same_code_waits_on_a_worker_thread() -> None:
    seen: list[str] = []
    assert asyncio.run(_work(seen)) == 10
    assert seen[0] != threading.current_thread().name
    assert seen[1] == "DONE"


def test_waiting_for_a_future_without_a_loop_is_an_error_inside_the_coroutine() -> None:
    caught: list[BaseException] = []

    async def waits() -> None:
        try:
            await asyncio.Future()
        except RuntimeError as error:
            caught.append(error)
            raise

    with pytest.raises(RuntimeError, match="event loop"):
        run_without_loop(waits())
    assert caught


def test_ctrl_c_reaches_the_coroutine_and_what_it_started_is_finished() -> None:
    finished: list[str] = []

    async def interrupted() -> None:
        try:
            await pass_turn()
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            finished.append("recorded")
            raise

    with pytest.raises(KeyboardInterrupt):
        run_without_loop(interrupted())
    assert finished == ["recorded"]


def test_ctrl_c_between_two_steps_is_raised_into_the_coroutine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []

    async def suspended() -> None:
        try:
            await pass_turn()
            seen.append("went on")
        except KeyboardInterrupt:
            seen.append("told")
            raise

    coroutine = suspended()
    send = coroutine.send
    sent = [0]

    class Interrupting:
        # The interrupt lands in the driver, just after the first step came back.
        cr_frame = property(lambda self: coroutine.cr_frame)

        def send(self, value: None) -> object:
            sent[0] += 1
            step = send(value)
            if sent[0] == 1:
                raise KeyboardInterrupt
            return step

        def throw(self, error: BaseException) -> object:
            return coroutine.throw(error)

        def close(self) -> None:
            coroutine.close()

    with pytest.raises(KeyboardInterrupt):
        run_without_loop(Interrupting())  # type: ignore[arg-type]
    assert seen == ["told"]


def test_cancellation_is_asyncios_own() -> None:
    assert is_cancellation(asyncio.CancelledError())
    assert not is_cancellation(KeyboardInterrupt())
    assert not is_cancellation(RuntimeError("cancelled"))
