"""The leader's dispatcher (rocketmq_py/dledger/pusher.py): how it takes a follower's answers to its APPEND
pushes, without a network (issue 31)."""
from __future__ import annotations

import pytest

from rocketmq_py.dledger import DLedgerConfig, DLedgerServer
from rocketmq_py.dledger.codes import PushType, ResponseCode
from rocketmq_py.dledger.protocol import PushEntryResponse

from support.dledger import DATA_FILE_SIZE, INDEX_FILE_SIZE
from support.ports import free_port

TERM = 3
#: The highest index the follower acknowledged in this term.
WATER_MARK = 100


@pytest.fixture
def dispatcher(tmp_path):
    """n0 leads term 3; its dispatcher to n1 appends after the follower's water mark of 100."""
    peers = ";".join(f"n{i}-127.0.0.1:{free_port()}" for i in range(3))
    server = DLedgerServer(DLedgerConfig(group="g", self_id="n0", peers=peers, store_base_dir=str(tmp_path),
                                         mapped_file_size_for_entry_data=DATA_FILE_SIZE,
                                         mapped_file_size_for_entry_index=INDEX_FILE_SIZE))
    server.state.change_to_candidate(TERM)
    assert server.state.next_term() == TERM
    server.state.change_to_leader(TERM)
    dispatcher = server.pusher.dispatchers["n1"]
    assert dispatcher._fresh_state() and dispatcher.type is PushType.COMPARE
    dispatcher._change_state(WATER_MARK, PushType.APPEND)
    return dispatcher


def _repeated_push(index: int, end_index: int) -> PushEntryResponse:
    return PushEntryResponse(group="g", code=ResponseCode.REPEATED_PUSH, term=TERM, index=index, count=1,
                             begin_index=0, end_index=end_index)


def test_a_follower_that_lost_acknowledged_entries_and_holds_the_push_is_compared_again(dispatcher):
    # The follower's log ends at 90, below the 100 it acknowledged; it already holds the push of 101 (the
    # resend's answer says so), and its one INCONSISTENT_STATE for the gap was lost: only a comparison,
    # which empties its waiting pushes and finds where the logs meet, gets entry 91 to it.
    dispatcher._take_append_answer(_repeated_push(WATER_MARK + 1, 90), batch=False)
    assert dispatcher.type is PushType.COMPARE


@pytest.mark.parametrize("end_index", [WATER_MARK, WATER_MARK + 1])
def test_a_repeated_push_to_a_follower_that_holds_what_it_acknowledged_changes_nothing(dispatcher, end_index):
    # The follower holds every entry it acknowledged: the push waits for its turn (a backlog), nothing is lost.
    dispatcher._take_append_answer(_repeated_push(WATER_MARK + 1, end_index), batch=False)
    assert dispatcher.type is PushType.APPEND
    assert dispatcher.pusher.peer_water_mark(TERM, "n1") == WATER_MARK


def test_an_answer_of_another_term_does_not_reset_the_dispatcher(dispatcher):
    stale = _repeated_push(WATER_MARK + 1, 0)
    stale.term = TERM - 1
    dispatcher._take_append_answer(stale, batch=False)
    assert dispatcher.type is PushType.APPEND
