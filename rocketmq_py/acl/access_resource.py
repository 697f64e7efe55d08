"""What one request asks for (Java's acl/plain/PlainAccessValidator#parse, rocketmq-all-4.9.8).

Each request code maps to the topics and groups it touches and the permission
it needs on them; a group is named by its retry topic ``%RETRY%group``. Codes
not listed need no resource, only a valid signature (and an admin account
for the admin codes). The signed content is every extField but
``Signature`` and ``_UNIQUE_KEY_QUERY``, then the body, as the client signs it.
"""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py import codec
from rocketmq_py.acl import permission
from rocketmq_py.acl.errors import AclError
from rocketmq_py.common.acl import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, signed_content
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.topic import RETRY_GROUP_TOPIC_PREFIX, retry_topic
from rocketmq_py.errors import CodecError
from rocketmq_py.remoting import RemotingCommand

__all__ = ["AccessResource", "parse_request", "client_ip", "is_group_resource"]


@dataclass
class AccessResource:
    request_code: int
    #: The client's address without its port.
    remote_ip: str
    access_key: str | None = None
    signature: str | None = None
    security_token: str | None = None
    #: Resource (topic, or ``%RETRY%group``) -> the permission needed; ``None`` when the code needs none.
    resources: dict[str, int] | None = None
    content: bytes = b""

    def need(self, resource: str | None, perm: int) -> None:
        if resource is None:
            return
        if self.resources is None:
            self.resources = {}
        self.resources[resource] = perm


def is_group_resource(resource: str | None) -> bool:
    return resource is not None and resource.startswith(RETRY_GROUP_TOPIC_PREFIX)


def describe_resource(resource: str) -> str:
    """``group:G`` or ``topic:T``, as refusals name them."""
    if is_group_resource(resource):
        return f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX):]}"
    return f"topic:{resource}"


def client_ip(remote_address: str | None) -> str | None:
    """``host:port`` without the port (the part after the last colon goes, so IPv6 works too)."""
    if remote_address is not None and ":" in remote_address:
        return remote_address[:remote_address.rfind(":")].strip("[]")
    return remote_address


def _group_topic(group: str | None) -> str | None:
    return None if group is None else retry_topic(group)


def _required(fields: dict[str, str], name: str, number: bool = False) -> str:
    """A field Java's header class marks ``@CFNotNull`` (a number that does not parse counts as missing)."""
    value = fields.get(name)
    if number and value is not None:
        try:
            int(value)
        except ValueError:
            value = None
    if value is None:
        raise AclError(f"the custom field <{name}> is null")
    return value


def _heartbeat_resources(resource: AccessResource, body: bytes | None) -> None:
    if not body:
        raise AclError("the HEART_BEAT request has no body")
    try:
        data = codec.json_loads(body)
    except (CodecError, ValueError) as error:
        raise AclError(f"the HEART_BEAT body is not valid JSON: {error}") from None
    consumers = data.get("consumerDataSet") if isinstance(data, dict) else None
    for consumer in consumers or ():
        if not isinstance(consumer, dict):
            raise AclError("a consumerDataSet entry of the HEART_BEAT body is not a JSON object")
        resource.need(_group_topic(consumer.get("groupName")), permission.SUB)
        for subscription in consumer.get("subscriptionDataSet") or ():
            if isinstance(subscription, dict):
                resource.need(subscription.get("topic"), permission.SUB)


def _add_resources(resource: AccessResource, request: RemotingCommand, fields: dict[str, str]) -> None:
    code = request.code
    if code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2):
        # A send to a retry topic is a consumer's send-back: it needs SUB on the group. Java reads that group
        # from "group" in V1 (a key the V1 header does not have) and from "a" (producerGroup) in V2.
        v1 = code == RequestCode.SEND_MESSAGE
        topic = fields.get("topic" if v1 else "b")
        if is_group_resource(topic):
            resource.need(_group_topic(fields.get("group" if v1 else "a")), permission.SUB)
        else:
            resource.need(topic, permission.PUB)
    elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
        resource.need(_group_topic(fields.get("group")), permission.SUB)
    elif code == RequestCode.PULL_MESSAGE:
        resource.need(fields.get("topic"), permission.SUB)
        resource.need(_group_topic(fields.get("consumerGroup")), permission.SUB)
    elif code == RequestCode.QUERY_MESSAGE:
        resource.need(fields.get("topic"), permission.SUB)
    elif code == RequestCode.HEART_BEAT:
        _heartbeat_resources(resource, request.body)
    elif code == RequestCode.UNREGISTER_CLIENT:
        _required(fields, "clientID")
        resource.need(_group_topic(fields.get("consumerGroup")), permission.SUB)
    elif code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
        resource.need(_group_topic(_required(fields, "consumerGroup")), permission.SUB)
    elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
        group, topic = _required(fields, "consumerGroup"), _required(fields, "topic")
        _required(fields, "queueId", number=True)
        _required(fields, "commitOffset", number=True)
        resource.need(_group_topic(group), permission.SUB)
        resource.need(topic, permission.SUB)
    # Every other code (SEND_BATCH_MESSAGE and QUERY_CONSUMER_OFFSET among them, as in Java 4.9) needs no
    # resource: a valid signature is enough.


def parse_request(request: RemotingCommand, remote_address: str | None) -> AccessResource:
    """The access key, signature, signed content and needed resources of ``request``."""
    resource = AccessResource(request.code, client_ip(remote_address) or "")
    fields = request.ext_fields
    if fields is None:
        # Without extFields only the address whitelists can admit the request.
        return resource
    resource.access_key = fields.get(ACCESS_KEY)
    resource.signature = fields.get(SIGNATURE)
    resource.security_token = fields.get(SECURITY_TOKEN)
    _add_resources(resource, request, fields)
    resource.content = signed_content(fields, request.body)
    return resource
