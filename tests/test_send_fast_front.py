"""The send fast path's loops as a front runs them, compiled and twin (``SendFastPath.take_frames`` and
``answer_placed``): the same client bytes in, the same sends taken and built, the same frames relayed, the same
place where the whole frames end, and the same answers."""
from __future__ import annotations

import random
import struct
from typing import Any

import pytest

from support.send_fast import mixed_sends

from rocketmq_py import codec
from rocketmq_py.broker.front_sends import SendSettings
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.topic_config import MULTI_TAG, TopicConfig
from rocketmq_py.remoting import create_request

TOPICS = [TopicConfig(topic_name="Plain", read_queue_nums=8, write_queue_nums=8),
          TopicConfig(topic_name="Tagged", read_queue_nums=4, write_queue_nums=4, topic_filter_type=MULTI_TAG)]


class _Client:
    def __init__(self, conn: int) -> None:
        self.conn = conn
        self.remote_address = "10.1.2.3:40404"
        self.relayed: list[bytes] = []

    def write(self, data: bytes) -> None:
        raise AssertionError("answer_placed returns the answers; it writes none")

    def relay(self, frames: bytes) -> None:
        self.relayed.append(frames)


def _settings() -> SendSettings:
    return SendSettings({
        "version": 1, "topics": {topic.topic_name: topic.to_json() for topic in TOPICS},
        "startAcceptSendRequestTimeStamp": 0, "brokerPermission": 6, "brokerClusterName": "DefaultCluster",
        "storeHost": "10.9.8.7:10911", "regionFields": {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"},
        "waits": False, "refusing": False, "maxMessageSize": 4 * 1024 * 1024, "maxRecordsLength": 1 << 30,
    })


def _frames(rng: random.Random) -> list[bytes]:
    """Sends of every kind (taken and declined), pulls in both serializations, a send's frame flagged as a
    response, and frames whose header does not decode."""
    frames = mixed_sends(rng, 300, [topic.topic_name for topic in TOPICS])
    for serialize_type in (codec.SERIALIZE_JSON, codec.SERIALIZE_ROCKETMQ):
        pull = create_request(RequestCode.PULL_MESSAGE, {"consumerGroup": "g", "topic": "Plain", "queueId": "0",
                                                         "queueOffset": "0", "maxMsgNums": "32", "sysFlag": "0",
                                                         "commitOffset": "0", "suspendTimeoutMillis": "0",
                                                         "subVersion": "0"}, None, serialize_type=serialize_type)
        frames.extend([codec.encode_command(pull)] * 5)
    (response,) = codec.FrameDecoder().feed(frames[0])
    response.flag |= codec.FLAG_RESPONSE
    frames.append(codec.encode_command(response))
    frames.append(b"\x00\x00\x00\x08\x01\xff\xff\xff\x00\x0a\x00\x00")  # a header length past the frame's end
    frames.append(b"\x00\x00\x00\x04\x00\x00\x00\x00")  # an empty JSON header
    rng.shuffle(frames)
    return frames


def _run(module: Any, pieces: list[bytes]) -> dict[str, object]:
    """Feed ``pieces`` to the fast path as a front does (the tail of an incomplete frame goes in front of the next
    piece), for two clients; then answer every send taken from made-up offsets."""
    random.seed(11)  # a send to queue -1 draws its queue
    path = module.SendFastPath(_settings())
    clients = [_Client(1), _Client(2)]
    taken: list[Any] = []
    ends = []
    for client in clients:
        partial = b""
        for piece in pieces:
            data = partial + piece
            end = path.take_frames(client, data, 0, taken)
            ends.append((end, len(data)))
            partial = data[end:]
    records = sum(send[7] for send in taken)
    payload = b"\x00" * 5 + struct.pack(f">{records}q", *range(0, 1000 * records, 1000)) + struct.pack(
        f">{len(taken)}q", *range(7, 7 + 10 * len(taken), 10))
    answers = module.answer_placed(taken, payload, 5)
    return {
        "ends": ends,
        "relayed": [client.relayed for client in clients],
        "taken": [(send[0].conn, send[4], send[5], bytes(send[6]), send[7], send[8], send[9]) for send in taken],
        "frames": [send[3][send[4]:send[5]] for send in taken],
        "answers": {client.conn: data for client, data in answers.items()},
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_compiled_front_loops_and_their_twin_take_relay_and_answer_the_same(twins, seed):
    pair = twins("rocketmq_py.broker._send_fast")
    rng = random.Random(seed)
    stream = b"".join(_frames(rng)) + b"\x00\x00\x10"  # the start of a length: an incomplete frame
    cuts = sorted(rng.sample(range(1, len(stream)), 40))
    pieces = [stream[start:end] for start, end in zip([0, *cuts], [*cuts, len(stream)])]
    twin = _run(pair.twin, pieces)
    compiled = _run(pair.compiled, pieces)
    assert len(twin["taken"]) > 200 and all(twin["relayed"])  # both ways are exercised  # type: ignore[arg-type]
    assert compiled == twin
    # What was taken and relayed is the whole stream, less the incomplete frame at its end.
    for conn, relayed in enumerate(twin["relayed"], start=1):  # type: ignore[arg-type]
        served = sum(len(frame) for (owner, *_), frame in zip(twin["taken"], twin["frames"])  # type: ignore
                     if owner == conn)
        assert served + sum(map(len, relayed)) == len(stream) - 3


def test_a_length_no_frame_has_ends_the_whole_frames_in_both(twins):
    pair = twins("rocketmq_py.broker._send_fast")
    frame = mixed_sends(random.Random(4), 1, ["Plain"])[0]
    for bad in (b"\x00\x00\x00\x03", struct.pack(">I", codec.MAX_FRAME_LENGTH + 1)):
        data = frame + bad + b"junk"
        for module in (pair.twin, pair.compiled):
            assert module.SendFastPath(_settings()).take_frames(_Client(1), data, 0, []) == len(frame)


def test_a_placed_payload_too_short_for_its_sends_raises_the_same_in_both(twins):
    pair = twins("rocketmq_py.broker._send_fast")
    frame = mixed_sends(random.Random(5), 1, ["Plain"])[0]
    errors = []
    for module in (pair.twin, pair.compiled):
        taken: list[Any] = []
        module.SendFastPath(_settings()).take_frames(_Client(1), frame, 0, taken)
        assert len(taken) == 1
        with pytest.raises(struct.error) as error:
            module.answer_placed(taken, b"\x00" * 9, 5)
        errors.append(str(error.value))
    assert errors[0] == errors[1]
