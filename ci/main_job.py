"""The main job until our own broker lands: start the official Java name server and broker with the
compatibility harness, then query them with the Python client (examples/cluster_overview.py)."""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "compat-tests"))

from harness import JavaBroker, JavaNameServer, ensure_built  # noqa: E402


def main() -> int:
    build = ensure_built()
    with tempfile.TemporaryDirectory(prefix="rocketmq-py-main-") as work:
        with JavaNameServer(build=build, workdir=Path(work) / "namesrv") as namesrv, \
                JavaBroker(namesrv, build=build, workdir=Path(work) / "broker", broker_name="broker-a"):
            print(f"Java name server at {namesrv.addr}; querying it from Python:", flush=True)
            return subprocess.call([sys.executable, str(ROOT / "examples" / "cluster_overview.py"),
                                    "--namesrv", namesrv.addr])


if __name__ == "__main__":
    sys.exit(main())
