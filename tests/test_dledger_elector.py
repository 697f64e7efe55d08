"""Issue 31: the leader's elector on its own, with a transport whose answers the test orders (no network)."""
from __future__ import annotations

import asyncio

from rocketmq_py.dledger import DLedgerConfig, ResponseCode
from rocketmq_py.dledger.elector import LeaderElector
from rocketmq_py.dledger.member_state import MemberState
from rocketmq_py.dledger.protocol import HeartBeatRequest, HeartBeatResponse


PEERS = "n0-127.0.0.1:1;n1-127.0.0.1:2;n2-127.0.0.1:3"


class _HeldAnswers:
    """Answers each heartbeat with ``codes[member]`` (SUCCESS by default); those to ``held`` wait until
    ``release`` is set."""

    def __init__(self, held: str | None = None, codes: dict[str, ResponseCode] | None = None) -> None:
        self.held = held
        self.codes = codes or {}
        self.release = asyncio.Event()
        self.calls: dict[str, asyncio.Task[object]] = {}

    def spawn(self, call):
        return asyncio.ensure_future(call)

    async def heart_beat(self, request: HeartBeatRequest) -> HeartBeatResponse:
        self.calls[request.remote_id] = asyncio.current_task()
        if request.remote_id == self.held:
            await self.release.wait()
        return HeartBeatResponse(code=self.codes.get(request.remote_id, ResponseCode.SUCCESS))


def _leader(tmp_path) -> MemberState:
    state = MemberState(DLedgerConfig(group="g", self_id="n0", peers=PEERS, store_base_dir=str(tmp_path)))
    state.change_to_leader(state.next_term())
    return state


async def test_a_heartbeat_answered_after_the_majority_still_marks_its_member_alive(tmp_path):
    # A member that was down (a killed preferred leader, restarted) answers the leader's heartbeats again, but
    # after the other follower: the round has its majority without it. Its answer must still mark it alive, or
    # the leader never hands leadership to it (Java's callback records every answer, also a late one).
    state = _leader(tmp_path)
    state.peers_live["n2"] = False
    transport = _HeldAnswers(held="n2")
    elector = LeaderElector(state.config, state, transport)  # type: ignore[arg-type]

    await elector._send_heart_beats(state.current_term, "n0")
    assert state.is_leader and state.peers_live["n1"] is True
    assert not transport.calls["n2"].done()

    transport.release.set()
    await transport.calls["n2"]
    assert state.peers_live["n2"] is True


async def test_a_heartbeat_answered_with_a_network_error_marks_its_member_down(tmp_path):
    state = _leader(tmp_path)
    state.peers_live["n2"] = True
    transport = _HeldAnswers(codes={"n2": ResponseCode.NETWORK_ERROR})
    elector = LeaderElector(state.config, state, transport)  # type: ignore[arg-type]
    await elector._send_heart_beats(state.current_term, "n0")
    await asyncio.gather(*transport.calls.values())
    assert state.peers_live == {"n1": True, "n2": False}
