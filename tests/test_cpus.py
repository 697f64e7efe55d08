"""The CPUs a process may use: the affinity, or a cgroup CPU quota when it allows fewer (as Java counts them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_py.broker import config as broker_config
from rocketmq_py.common import cpus


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def eight_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpus, "affinity_cpus", lambda: 8)


def test_v2_quota_of_the_process_cgroup_rounds_up(tmp_path: Path, eight_cpus: None) -> None:
    _write(tmp_path / "proc", "0::/system.slice/broker.service\n")
    _write(tmp_path / "cg/system.slice/broker.service/cpu.max", "150000 100000\n")
    _write(tmp_path / "cg/cpu.max", "max 100000\n")
    assert cpus.cgroup_quota_cpus(tmp_path / "cg", tmp_path / "proc") == 2
    assert cpus.available_processors(tmp_path / "cg", tmp_path / "proc") == 2


def test_v2_an_ancestors_tighter_quota_counts(tmp_path: Path, eight_cpus: None) -> None:
    _write(tmp_path / "proc", "0::/kubepods/pod1/c1\n")
    _write(tmp_path / "cg/kubepods/pod1/c1/cpu.max", "max 100000\n")
    _write(tmp_path / "cg/kubepods/pod1/cpu.max", "100000 100000\n")
    assert cpus.available_processors(tmp_path / "cg", tmp_path / "proc") == 1


def test_v2_a_container_whose_mount_shows_only_its_own_cgroup(tmp_path: Path, eight_cpus: None) -> None:
    # /proc names the host's path, which does not exist below the container's mount: the mount's own file counts.
    _write(tmp_path / "proc", "0::/docker/0123abcd\n")
    _write(tmp_path / "cg/cpu.max", "300000 100000\n")
    assert cpus.available_processors(tmp_path / "cg", tmp_path / "proc") == 3


def test_v1_quota_under_the_cpu_controller(tmp_path: Path, eight_cpus: None) -> None:
    _write(tmp_path / "proc", "4:memory:/x\n3:cpu,cpuacct:/docker/abc\n0::/\n")
    _write(tmp_path / "cg/cpu,cpuacct/cpu.cfs_quota_us", "50000\n")
    _write(tmp_path / "cg/cpu,cpuacct/cpu.cfs_period_us", "100000\n")
    assert cpus.available_processors(tmp_path / "cg", tmp_path / "proc") == 1


def test_no_quota_leaves_the_affinity(tmp_path: Path, eight_cpus: None) -> None:
    _write(tmp_path / "proc", "1:cpu:/\n0::/\n")
    _write(tmp_path / "cg/cpu/cpu.cfs_quota_us", "-1\n")
    _write(tmp_path / "cg/cpu/cpu.cfs_period_us", "100000\n")
    _write(tmp_path / "cg/cpu.max", "max 100000\n")
    assert cpus.cgroup_quota_cpus(tmp_path / "cg", tmp_path / "proc") is None
    assert cpus.available_processors(tmp_path / "cg", tmp_path / "proc") == 8


def test_a_quota_above_the_affinity_leaves_the_affinity(tmp_path: Path, eight_cpus: None) -> None:
    _write(tmp_path / "proc", "0::/\n")
    _write(tmp_path / "cg/cpu.max", "1600000 100000\n")
    assert cpus.available_processors(tmp_path / "cg", tmp_path / "proc") == 8


@pytest.mark.parametrize("text", ["", "garbage", "0::/\n", "0::/a\n"])
def test_unreadable_or_missing_files_are_no_quota(tmp_path: Path, eight_cpus: None, text: str) -> None:
    _write(tmp_path / "proc", text)
    (tmp_path / "cg/a").mkdir(parents=True)
    _write(tmp_path / "cg/cpu.max", "not numbers\n")
    assert cpus.available_processors(tmp_path / "cg", tmp_path / "proc") == 8
    assert cpus.available_processors(tmp_path / "missing", tmp_path / "no-proc-file") == 8


def test_the_broker_counts_fronts_from_the_quota(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                 eight_cpus: None) -> None:
    _write(tmp_path / "proc", "0::/\n")
    _write(tmp_path / "cg/cpu.max", "100000 100000\n")
    monkeypatch.setattr(cpus, "CGROUP_ROOT", tmp_path / "cg")
    monkeypatch.setattr(cpus, "PROC_SELF_CGROUP", tmp_path / "proc")
    assert broker_config.worker_processes_from_cores() == 0


def test_this_machine_counts_at_least_one_and_at_most_the_affinity() -> None:
    assert 1 <= cpus.available_processors() <= cpus.affinity_cpus()
