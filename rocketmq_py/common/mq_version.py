"""Version names of Java's MQVersion.Version: a client or broker sends the enum's ordinal as its version, and
``mqadmin`` prints the name (``V4_9_8``).

The ordinals follow Java's declaration order: sixteen 3.0.0 pre-releases, then a ``_SNAPSHOT`` and a release
name for each version, 3.0.1 to 3.0.15, 3.1.0 to 3.2.9, 3.3.1 to 3.9.9 (no x.y.0 there), and 4.0.0 to 5.9.9.
An ordinal past the last one names the last version, as Java does.
"""
from __future__ import annotations

from functools import lru_cache

_PRE_RELEASES = (
    ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1"] + [f"V3_0_0_BETA{n}" for n in range(1, 6)]
    + [name for n in range(6, 10) for name in (f"V3_0_0_BETA{n}_SNAPSHOT", f"V3_0_0_BETA{n}")]
    + ["V3_0_0_FINAL"]
)


def _releases() -> list[tuple[int, int, int]]:
    versions = [(3, 0, patch) for patch in range(1, 16)]
    versions += [(3, minor, patch) for minor in (1, 2) for patch in range(10)]
    versions += [(3, minor, patch) for minor in range(3, 10) for patch in range(1, 10)]
    versions += [(major, minor, patch) for major in (4, 5) for minor in range(10) for patch in range(10)]
    return versions


@lru_cache(maxsize=1)
def _names() -> tuple[str, ...]:
    names = list(_PRE_RELEASES)
    for major, minor, patch in _releases():
        release = f"V{major}_{minor}_{patch}"
        names += [release + "_SNAPSHOT", release]
    return tuple(names)


def version_desc(ordinal: int) -> str:
    """The name of version ``ordinal`` (Java's MQVersion.getVersionDesc): 409 is ``V4_9_8``."""
    names = _names()
    if ordinal >= len(names):
        return names[-1]
    if ordinal < 0:
        raise ValueError(f"a version ordinal cannot be negative, got {ordinal}")
    return names[ordinal]
