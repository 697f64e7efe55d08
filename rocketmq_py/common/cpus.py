"""How many CPUs this process may use, counted as Java's ``Runtime.availableProcessors()`` counts them.

The broker sizes its fronts and its keys' defaults by this number. In a container the CPU affinity usually
names every core of the host while a CPU quota (``docker run --cpus``, a Kubernetes CPU limit) lets the
process use only a few of them; Java (JDK 10 and later, ``UseContainerSupport``) then reports the quota, and a
broker that started one front per host core would crowd a small quota with processes. So: the CPUs of the
affinity, fewer when a cgroup quota (v1 or v2) allows fewer, rounded up, at least one. CPU shares are not a
limit (JDK 19 stopped counting them too).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")


def affinity_cpus() -> int:
    """The CPUs the scheduler may run this process on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def available_processors(cgroup_root: Path | None = None, proc_self_cgroup: Path | None = None) -> int:
    """The CPUs of the affinity, or those a cgroup CPU quota allows when fewer (rounded up)."""
    cpus = affinity_cpus()
    quota = cgroup_quota_cpus(cgroup_root, proc_self_cgroup)
    return max(1, min(cpus, quota)) if quota is not None else cpus


def cgroup_quota_cpus(cgroup_root: Path | None = None, proc_self_cgroup: Path | None = None) -> int | None:
    """The CPUs the tightest CPU quota over this process's cgroup and its ancestors allows, rounded up; None
    without a quota (or where the files cannot be read: a quota we cannot see is one we cannot honour)."""
    cgroup_root = CGROUP_ROOT if cgroup_root is None else cgroup_root
    try:
        lines = (PROC_SELF_CGROUP if proc_self_cgroup is None else proc_self_cgroup).read_text().splitlines()
    except OSError:
        return None
    limits: list[int] = []
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            limits += _quotas(cgroup_root, path, _v2_quota)
        elif "cpu" in controllers.split(","):
            # v1 mounts the cpu controller alone or beside cpuacct, under the controllers' names.
            for mount in (controllers, "cpu", "cpu,cpuacct"):
                if (cgroup_root / mount).is_dir():
                    limits += _quotas(cgroup_root / mount, path, _v1_quota)
                    break
    return min(limits) if limits else None


def _quotas(mount: Path, cgroup: str, read_quota: Callable[[Path], int | None]) -> list[int]:
    """The quotas of the cgroup's directory and of every ancestor up to the mount. In a container with its own
    cgroup namespace, or one whose mount shows only its own cgroup, the path /proc names may not exist below the
    mount; walking up still reaches the mount itself, which is then the container's cgroup."""
    found = []
    directory = PurePosixPath(cgroup)
    while True:
        quota = read_quota(mount / str(directory).lstrip("/"))
        if quota is not None:
            found.append(quota)
        if directory == directory.parent:
            return found
        directory = directory.parent


def _v2_quota(directory: Path) -> int | None:
    """cgroup v2's ``cpu.max``: "<quota> <period>" in µs, or "max <period>" without a limit."""
    try:
        quota, period = (directory / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return _cpus(quota, period) if quota != "max" else None


def _v1_quota(directory: Path) -> int | None:
    """cgroup v1's ``cpu.cfs_quota_us`` (-1 without a limit) over ``cpu.cfs_period_us``."""
    try:
        quota = (directory / "cpu.cfs_quota_us").read_text().strip()
        period = (directory / "cpu.cfs_period_us").read_text().strip()
    except OSError:
        return None
    return _cpus(quota, period)


def _cpus(quota: str, period: str) -> int | None:
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:
        return None
    if quota_us <= 0 or period_us <= 0:
        return None
    return math.ceil(quota_us / period_us)
