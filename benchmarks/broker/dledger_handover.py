"""How long a DLedger group takes to hand leadership back to its restarted preferred member (issue 31).

For each group (``--groups``: the members' kinds, ``n0`` first; ``n0`` is ``preferredLeaderId``), with the
Java name server: the group starts and ``n0`` becomes master; ``n0`` is killed (``kill -9``) and another
member registers as master; ``n0`` restarts, and the tool waits until it is master again. The steps of that
last phase are read from the members' logs (Java's logback lines, our broker's log lines) and printed as
seconds since the restart was issued:

* ``listening``: ``n0``'s broker port is open again (its JVM or our process booted);
* ``notOnline``: how many times the leader found ``n0`` not online before it handed over;
* ``transferStarted``: the leader decided to hand leadership to ``n0`` (Java's ``preferredLeaderId = ... is
  decided to be transferee``; ours: ``handing leadership to preferred leader``);
* ``elected``: ``n0`` won the vote of the new term;
* ``transferEnded``: the leader's LEADERSHIP_TRANSFER call was answered;
* ``master``: the name server lists ``n0`` as brokerId 0.

Prints one JSON object with a row per group and run, and the load average around each.

    .venv/bin/python benchmarks/broker/dledger_handover.py [--groups java,python,python;java,java,java] [--runs 1]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "compat-tests"))

from harness import JavaNameServer, ensure_built  # noqa: E402
from harness.dledger_brokers import DLedgerBrokerGroup  # noqa: E402

PREFERRED = "n0"
#: step -> (whose log: the leader's or n0's, the line that marks it by the member's kind); the first such line
#: after the restart counts.
_STEPS = {
    "transferStarted": ("leader", {"java": r"preferredLeaderId = n0, which has the smallest fall behind",
                                   "python": r"handing leadership to preferred leader n0 "}),
    "elected": ("preferred", {"java": r"\[n0\] \[VOTE_RESULT\] has been elected to be the leader",
                              "python": r"\[n0\] leader of group"}),
    "transferEnded": ("leader", {"java": r"transfer finished\. ", "python": r"handing leadership to n0 ended with"}),
}
_NOT_ONLINE = {"java": r"preferredLeaderId = n0 is not online", "python": r"preferred leader n0 is not online"}
_JAVA_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) ")
_OUR_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def _log_lines(member: object, kind: str) -> list[tuple[float, str]]:
    """(epoch seconds, line) of each time-stamped line of a member's log."""
    if kind == "java":
        path, stamp, form = member.log_dir / "broker.log", _JAVA_TIME, "%Y-%m-%d %H:%M:%S.%f"  # type: ignore
    else:
        path, stamp, form = member.log_path, _OUR_TIME, "%Y-%m-%d %H:%M:%S,%f"  # type: ignore
    lines = []
    for line in path.read_text(errors="replace").splitlines():
        found = stamp.match(line)
        if found:
            lines.append((datetime.strptime(found.group(1), form).timestamp(), line))
    return lines


def handover(namesrv_addr: str, workdir: Path, kinds: list[str]) -> dict[str, object]:
    members = dict(zip(("n0", "n1", "n2"), kinds))
    load_before = os.getloadavg()
    with DLedgerBrokerGroup(namesrv_addr, workdir, members, preferredLeaderId=PREFERRED) as group:
        group.start()
        group.wait_for_master(member=PREFERRED)
        preferred = group.members[PREFERRED]
        preferred.kill()
        new_master, _ = group.wait_for_master(other_than=preferred.addr)
        leader = group.member_at(new_master)
        restarted = time.time()
        preferred.restart()
        listening = time.time()
        group.wait_for_master(member=PREFERRED)
        mastered = time.time()
        # The leader logs the transfer's answer after n0 registered, at times: the logs are read once the
        # members are gone.
        group.kill()
        leader_log = [entry for entry in _log_lines(group.members[leader], members[leader]) if entry[0] >= restarted]
        preferred_log = [entry for entry in _log_lines(preferred, members[PREFERRED]) if entry[0] >= restarted]
    steps: dict[str, object] = {"listening": round(listening - restarted, 2)}
    not_online = re.compile(_NOT_ONLINE[members[leader]])
    steps["notOnline"] = sum(1 for _, line in leader_log if not_online.search(line))
    for step, (whose, patterns) in _STEPS.items():
        member, lines = (leader, leader_log) if whose == "leader" else (PREFERRED, preferred_log)
        found = next((at for at, line in lines if re.search(patterns[members[member]], line)), None)
        steps[step] = None if found is None else round(found - restarted, 2)
    steps["master"] = round(mastered - restarted, 2)
    return {"members": members, "leaderWhileN0Down": leader, "secondsSinceRestart": steps,
            "loadBefore": load_before, "loadAfter": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="java,python,python;java,java,java",
                        help="';'-separated groups, each the kinds of n0,n1,n2 (n0 is the preferred leader)")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    build = ensure_built()
    work = Path(tempfile.mkdtemp(prefix="dledger-handover-"))
    namesrv = JavaNameServer(build=build, workdir=work / "namesrv")
    namesrv.start()
    rows = []
    try:
        for run in range(args.runs):
            for number, group in enumerate(args.groups.split(";")):
                rows.append(handover(namesrv.addr, work / f"run{run}-group{number}", group.split(",")))
                print(json.dumps(rows[-1]), file=sys.stderr)
    finally:
        namesrv.stop()
    print(json.dumps({"benchmark": "dledger-preferred-handover", "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
