"""Issue 3, point 7: ACL. Against a Java broker with aclEnable=true, the right credentials send, and a
wrong secret key, an unknown access key or a denied topic give the typed no-permission error."""
from __future__ import annotations

import uuid

import pytest

from rocketmq_py.client.producer import Producer, SendStatus
from rocketmq_py.common.message import Message
from rocketmq_py.errors import NoPermissionError, SendFailedError


def _send(namesrv, access_key, secret_key, topic):
    with Producer(f"acl_pg_{uuid.uuid4().hex[:6]}", namesrv_addr=namesrv.addr, access_key=access_key,
                  secret_key=secret_key, retry_times_when_send_failed=0) as producer:
        return producer.send(Message(topic, b"signed body", tags="Acl", keys="k", properties={"p": "1"}))


def test_right_credentials_send(acl_cluster):
    namesrv, _ = acl_cluster
    result = _send(namesrv, "py-admin", "py-admin-secret-1", f"Acl_{uuid.uuid4().hex[:8]}")
    assert result.send_status is SendStatus.SEND_OK


@pytest.mark.parametrize("access_key,secret_key,remark", [
    ("py-admin", "wrong-secret-99", "Check signature failed"),
    ("nobody-here", "py-admin-secret-1", "No acl config for"),
    ("py-denied", "py-denied-secret-1", "No default permission"),
], ids=["wrong-secret", "unknown-access-key", "denied-topic"])
def test_wrong_credentials_give_no_permission(acl_cluster, access_key, secret_key, remark):
    namesrv, _ = acl_cluster
    with pytest.raises((NoPermissionError, SendFailedError)) as failure:
        _send(namesrv, access_key, secret_key, f"Acl_{uuid.uuid4().hex[:8]}")
    error = failure.value
    if isinstance(error, SendFailedError):
        error = error.__cause__
    assert isinstance(error, NoPermissionError), repr(error)
    assert remark in str(error)
    assert "access_key" in str(error)
