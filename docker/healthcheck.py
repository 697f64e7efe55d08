"""The image's HEALTHCHECK: asks the server in this container whether it answers.

It finds what runs here from PID 1's command line (the entrypoint execs `rocketmq-py namesrv ...` or
`rocketmq-py broker ...`), asks `rocketmq-py <same arguments> -p` for the listen port, and sends one
request on loopback: GET_BROKER_CLUSTER_INFO to a name server, GET_BROKER_RUNTIME_INFO to a broker.
Exit status 0 when the answer is SUCCESS, 1 otherwise, with one line saying why.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rocketmq_py.remoting import BlockingRemotingClient, create_request

GET_BROKER_RUNTIME_INFO = 28
GET_BROKER_CLUSTER_INFO = 106
TIMEOUT_MS = 3000


def server_arguments() -> list[str]:
    words = Path("/proc/1/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    arguments = [word.decode() for word in words]
    for role in ("namesrv", "broker"):
        if role in arguments:
            return arguments[arguments.index(role):]
    raise SystemExit(f"unhealthy: PID 1 runs no name server or broker: {' '.join(arguments)}")


def listen_port(arguments: list[str]) -> int:
    printed = subprocess.run(["rocketmq-py", *arguments, "-p"], capture_output=True, text=True, timeout=20)
    for line in printed.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "listenPort":
            return int(value.strip())
    raise SystemExit(f"unhealthy: `rocketmq-py {' '.join(arguments)} -p` printed no listenPort")


def main() -> int:
    arguments = server_arguments()
    code = GET_BROKER_CLUSTER_INFO if arguments[0] == "namesrv" else GET_BROKER_RUNTIME_INFO
    address = f"127.0.0.1:{listen_port(arguments)}"
    with BlockingRemotingClient() as client:
        try:
            response = client.invoke(address, create_request(code), TIMEOUT_MS)
        except Exception as error:  # any failure to get an answer is "unhealthy", said in one line
            print(f"unhealthy: {arguments[0]} at {address}: {error}")
            return 1
    if response.code != 0:
        print(f"unhealthy: {arguments[0]} at {address} answered code {response.code}: {response.remark}")
        return 1
    print(f"healthy: {arguments[0]} at {address}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
