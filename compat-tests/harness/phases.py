"""How long each phase of a long compat test took, printed with ``-s`` so that a slow run shows where the time went.

    phases = Phases()
    with phases("start"):
        group.start()
    print(phases)                       # "start 12.3 s, master 4.1 s (total 16.4 s)"
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Phases:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        began = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - began

    def __str__(self) -> str:
        parts = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.seconds.items())
        return f"phases: {parts} (total {sum(self.seconds.values()):.1f} s)"
