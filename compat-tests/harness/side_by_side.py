"""One client scenario run against the Java broker and ours at the same time, each outcome kept for the tests.

The independent-client suites (C++, Node.js) run one long scenario per broker in a module fixture and let
every test read its part: a scenario that failed on one broker fails the tests that read that broker, with
the scenario's own error, and leaves the other broker's tests alone.

    outcomes = run_side_by_side(scenario, {"java": (namesrv, broker), "ours": (...)})
    outcome_of(outcomes, "ours")   # the scenario's result, or its exception raised
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

_T = TypeVar("_T")


def run_side_by_side(scenario: Callable[..., _T], targets: dict[str, tuple]) -> dict[str, _T | BaseException]:
    """``scenario(*arguments)`` for every ``kind: arguments`` of ``targets``, all at once; result or exception."""
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        futures = {kind: pool.submit(scenario, *arguments) for kind, arguments in targets.items()}
        return {kind: future.exception() or future.result() for kind, future in futures.items()}


def outcome_of(outcomes: dict[str, Any], kind: str) -> Any:
    """The scenario's result on ``kind``; its exception is raised again."""
    outcome = outcomes[kind]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome
