"""Build the Java side of the harness (compat-tests/java) once, and find its outputs.

``ensure_built()`` runs ``mvn -B -q -f compat-tests/java/pom.xml package`` unless the jars and
classpath files are newer than every pom.xml and every file under peers/src, and returns a
:class:`JavaBuild` with the paths and classpaths.

When java or mvn is missing, or the build fails, it raises :class:`HarnessUnavailable` when the
environment has ``CI=true`` (a CI run must never skip compatibility tests silently) and calls
``pytest.skip`` otherwise.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

COMPAT_DIR = Path(__file__).resolve().parent.parent
JAVA_DIR = COMPAT_DIR / "java"
POM = JAVA_DIR / "pom.xml"

SERVER_CLASSPATH_FILE = JAVA_DIR / "server" / "target" / "classpath.txt"
PEERS_JAR = JAVA_DIR / "peers" / "target" / "peers.jar"
PEERS_CLASSPATH_FILE = JAVA_DIR / "peers" / "target" / "classpath.txt"
OUTPUTS = (SERVER_CLASSPATH_FILE, PEERS_JAR, PEERS_CLASSPATH_FILE)

BUILD_TIMEOUT_S = 20 * 60


class HarnessUnavailable(RuntimeError):
    """The Java side cannot be built or started here."""


@dataclass(frozen=True)
class JavaBuild:
    java: str
    """Path of the java executable."""
    server_classpath: str
    """Runtime classpath of the official namesrv + broker (rocketmq.server.version)."""
    peers_jar: Path
    peers_classpath: str
    """peers.jar followed by its runtime classpath (client, tools, acl at rocketmq.version)."""
    built_now: bool
    """True when this call ran Maven."""
    build_seconds: float


def unavailable(reason: str):
    """Fail under CI=true, skip the calling test otherwise. Never returns."""
    if os.environ.get("CI", "").lower() == "true":
        raise HarnessUnavailable(reason)
    import pytest

    pytest.skip(reason)
    raise AssertionError("unreachable")


def _inputs() -> list[Path]:
    files = [p for p in JAVA_DIR.rglob("pom.xml") if "target" not in p.parts]
    src = JAVA_DIR / "peers" / "src"
    if src.is_dir():
        files += [p for p in src.rglob("*") if p.is_file()]
    return files


def _classpath_entries_exist(cp_file: Path) -> bool:
    text = cp_file.read_text().strip()
    return all(Path(e).exists() for e in text.split(os.pathsep) if e)


def is_up_to_date() -> bool:
    if not all(p.exists() for p in OUTPUTS):
        return False
    oldest_output = min(p.stat().st_mtime for p in OUTPUTS)
    newest_input = max((p.stat().st_mtime for p in _inputs()), default=0.0)
    if newest_input > oldest_output:
        return False
    # A wiped ~/.m2 leaves stale classpath files behind.
    return _classpath_entries_exist(SERVER_CLASSPATH_FILE) and _classpath_entries_exist(PEERS_CLASSPATH_FILE)


_lock = threading.Lock()
_result: JavaBuild | None = None
_failure: str | None = None


def _build_or_reason() -> JavaBuild | str:
    java = shutil.which("java")
    mvn = shutil.which("mvn")
    if java is None:
        return "java is not installed (needed by the Java compatibility harness)"
    built_now = False
    seconds = 0.0
    # One build at a time, also across pytest-xdist workers.
    lock_path = Path(tempfile.gettempdir()) / "rocketmq-py-compat-java-build.lock"
    with open(lock_path, "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            if not is_up_to_date():
                if mvn is None:
                    return "mvn is not installed (needed to build compat-tests/java)"
                cmd = [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(POM), "package"]
                t0 = time.monotonic()
                try:
                    proc = subprocess.run(cmd, cwd=JAVA_DIR, stdin=subprocess.DEVNULL, capture_output=True,
                                          text=True, timeout=BUILD_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    return f"{' '.join(cmd)} timed out after {BUILD_TIMEOUT_S} s"
                seconds = time.monotonic() - t0
                if proc.returncode != 0:
                    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
                    return f"{' '.join(cmd)} failed with exit code {proc.returncode}:\n{tail}"
                missing = [str(p) for p in OUTPUTS if not p.exists()]
                if missing:
                    return f"Maven build finished but did not produce {missing}"
                # Maven leaves unchanged outputs (e.g. an identical classpath.txt) untouched: mark
                # them all as produced by this build so the up-to-date check holds next time.
                now = time.time()
                for p in OUTPUTS:
                    os.utime(p, (now, now))
                built_now = True
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)
    server_cp = SERVER_CLASSPATH_FILE.read_text().strip()
    peers_cp = os.pathsep.join([str(PEERS_JAR), PEERS_CLASSPATH_FILE.read_text().strip()])
    return JavaBuild(java=java, server_classpath=server_cp, peers_jar=PEERS_JAR, peers_classpath=peers_cp,
                     built_now=built_now, build_seconds=seconds)


def ensure_built() -> JavaBuild:
    """Build compat-tests/java if needed (once per process) and return its outputs."""
    global _result, _failure
    with _lock:
        if _result is None and _failure is None:
            outcome = _build_or_reason()
            if isinstance(outcome, str):
                _failure = outcome
            else:
                _result = outcome
    if _result is None:
        unavailable(_failure or "Java harness build failed")
    return _result
