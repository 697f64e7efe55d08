"""The exception tree of rocketmq-py.

One root, three branches for what crosses the wire, and one for the store:

* ``RemotingError``: the transport failed or the bytes were malformed (Java's
  RemotingException family and RemotingCommandException).
* ``ClientError``: the client refused to act, with Java's client error code
  (MQClientException).
* ``BrokerResponseError``: a peer answered with a non-success response code
  (MQBrokerException). Each response code maps to one class, found with
  :func:`error_for_response`, and carries a ``retriable`` flag that says
  whether Java's producer would try another queue.
* ``StoreError``: the broker's store files cannot be used as they are.
* ``ConfigError``: a server's configuration cannot start it.
"""
from __future__ import annotations

from typing import ClassVar


class RocketMQError(Exception):
    """Root of every error raised by rocketmq-py."""


# --- remoting ---------------------------------------------------------------


class RemotingError(RocketMQError):
    """The remoting layer could not deliver a request or read a reply."""


class CodecError(RemotingError):
    """Bytes on the wire (or in a body) do not follow the RocketMQ format."""


class FrameTooLargeError(CodecError):
    """A frame declares a length above the frame limit (16 MiB by default)."""


class BadRequestError(CodecError):
    """A request a server refuses before touching any state: a header field or a body that is missing or does
    not decode into its type. Servers answer SYSTEM_ERROR with ``remark`` and log one WARNING line naming
    ``field``, without a traceback (bad input is not a bug)."""

    def __init__(self, message: str, field: str = "body", remark: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.remark = remark if remark is not None else message


class RemotingConnectError(RemotingError):
    """A connection to ``addr`` could not be opened."""

    def __init__(self, addr: str, reason: object = None) -> None:
        self.addr = addr
        text = f"connect to {addr} failed"
        if reason is not None:
            text += f": {reason}"
        super().__init__(text + "; is the server running and the address right?")


class TlsHandshakeError(RemotingConnectError):
    """The TLS handshake with ``addr`` failed: the server does not speak TLS, or a certificate was refused."""

    def __init__(self, addr: str, reason: object = None) -> None:
        self.addr = addr
        text = f"TLS handshake with {addr} failed"
        if reason is not None:
            text += f": {reason}"
        RemotingError.__init__(
            self, text + "; is TLS on at the server (tls.server.mode), and are the certificates trusted?",
        )


class TlsConfigError(RemotingError, ValueError):
    """The TLS settings cannot be used (a missing or unreadable certificate or key, an unknown mode)."""


class RemotingSendRequestError(RemotingError):
    """A request could not be written to ``addr`` (the connection broke)."""

    def __init__(self, addr: str, reason: object = None) -> None:
        self.addr = addr
        text = f"send request to {addr} failed"
        if reason is not None:
            text += f": {reason}"
        super().__init__(text)


class RemotingTimeoutError(RemotingError):
    """No response came from ``addr`` within ``timeout_ms``."""

    def __init__(self, addr: str, timeout_ms: float, opaque: int | None = None) -> None:
        self.addr = addr
        self.timeout_ms = timeout_ms
        self.opaque = opaque
        super().__init__(f"wait response from {addr} timed out after {timeout_ms:g} ms (opaque {opaque})")


class RemotingTooMuchRequestError(RemotingError):
    """Too many async or oneway requests are in flight (Java's semaphore limits)."""


# --- client -----------------------------------------------------------------


class ClientError(RocketMQError):
    """The client refused or failed an operation; ``code`` follows Java's ClientErrorCode."""

    code: int = -1

    def __init__(self, message: str, code: int | None = None) -> None:
        if code is not None:
            self.code = code
        super().__init__(message)


class ClientStateError(ClientError):
    """The object is not in a state that allows the call (not started, shut down)."""


class InvalidArgumentError(ClientError, ValueError):
    """An argument (a topic, a group, a message, an option) is not valid; nothing was sent."""


class ClientErrorCode:
    """Java's ClientErrorCode values, carried as ``ClientError.code``."""

    CONNECT_BROKER_EXCEPTION = 10001
    ACCESS_BROKER_TIMEOUT = 10002
    BROKER_NOT_EXIST_EXCEPTION = 10003
    NO_NAME_SERVER_EXCEPTION = 10004
    NOT_FOUND_TOPIC_EXCEPTION = 10005
    REQUEST_TIMEOUT_EXCEPTION = 10006
    CREATE_REPLY_MESSAGE_EXCEPTION = 10007


class NoNameServerError(ClientError):
    """No name server address is configured (set ``namesrv_addr`` or ``NAMESRV_ADDR``)."""

    code = ClientErrorCode.NO_NAME_SERVER_EXCEPTION


class NoRouteInfoError(ClientError):
    """The name servers know no route for the topic and it could not be auto-created."""

    code = ClientErrorCode.NOT_FOUND_TOPIC_EXCEPTION


class BrokerNotFoundError(ClientError):
    """The broker a message queue belongs to has no known master address."""

    code = ClientErrorCode.BROKER_NOT_EXIST_EXCEPTION


class SendFailedError(ClientError):
    """Every attempt of a send failed; ``code`` is the last response code or Java's client error code,
    and ``__cause__`` the last error."""


class SendTimeoutError(ClientError):
    """The send timeout was used up before an attempt could start."""

    code = ClientErrorCode.ACCESS_BROKER_TIMEOUT


class RequestTimeoutError(ClientError):
    """A request message was sent, but no reply arrived in time."""

    code = ClientErrorCode.REQUEST_TIMEOUT_EXCEPTION


class ReplyMessageError(ClientError):
    """A reply message cannot be made for the given request message."""

    code = ClientErrorCode.CREATE_REPLY_MESSAGE_EXCEPTION


class NoMessageError(ClientError):
    """A message lookup (by id, key or unique key) finished without finding a message; ``code`` is Java's
    ResponseCode.NO_MESSAGE, as its MQClientException carries."""

    code = 208


class InvalidSelectorError(InvalidArgumentError):
    """A subscription expression (tags or SQL92) cannot be parsed; nothing was subscribed."""


# --- store ------------------------------------------------------------------


class StoreError(RocketMQError):
    """The store files cannot be used as they are (wrong size, unreadable); the message says what to fix."""


# --- configuration ----------------------------------------------------------


class ConfigError(RocketMQError, ValueError):
    """A server's configuration cannot start it: a key's value, a key we do not implement, a missing extra.

    The message names the key and what to do; the command prints it as one line and exits with status 1.
    """


# --- broker and name server responses --------------------------------------


class BrokerResponseError(RocketMQError):
    """A server answered with a non-success response code."""

    response_code: ClassVar[int] = -1
    retriable: ClassVar[bool] = False

    def __init__(self, code: int, remark: str | None = None, addr: str | None = None) -> None:
        self.code = code
        self.remark = remark
        self.addr = addr
        where = f" from {addr}" if addr else ""
        super().__init__(f"response code {code}{where}: {remark or '(no remark)'}")


def _response_error(name: str, code: int, retriable: bool = False, doc: str = "") -> type[BrokerResponseError]:
    cls = type(name, (BrokerResponseError,), {"response_code": code, "retriable": retriable, "__doc__": doc})
    cls.__module__ = __name__
    return cls


# Retriable codes are the ones Java's DefaultMQProducer.retryResponseCodes lists.
SystemError_ = _response_error("SystemError_", 1, True, "SYSTEM_ERROR: the server failed the request.")
SystemBusyError = _response_error("SystemBusyError", 2, False, "SYSTEM_BUSY: the server is applying flow control.")
RequestCodeNotSupportedError = _response_error(
    "RequestCodeNotSupportedError", 3, False, "REQUEST_CODE_NOT_SUPPORTED: the server does not know this request."
)
TransactionFailedError = _response_error("TransactionFailedError", 4)
MessageIllegalError = _response_error("MessageIllegalError", 13, False, "MESSAGE_ILLEGAL: the broker refused the message.")
ServiceNotAvailableError = _response_error("ServiceNotAvailableError", 14, True, "SERVICE_NOT_AVAILABLE.")
VersionNotSupportedError = _response_error("VersionNotSupportedError", 15)
NoPermissionError = _response_error("NoPermissionError", 16, True, "NO_PERMISSION: ACL or topic permission refused it.")
TopicNotExistError = _response_error("TopicNotExistError", 17, True, "TOPIC_NOT_EXIST.")
TopicExistAlreadyError = _response_error("TopicExistAlreadyError", 18)
PullRetryImmediatelyError = _response_error(
    "PullRetryImmediatelyError", 20, True,
    "PULL_RETRY_IMMEDIATELY for a reason that gives no way forward (a slave behind the consumer, an older slave "
    "that does not serve reads): the pull is tried again at the same offset."
)
QueryNotFoundError = _response_error("QueryNotFoundError", 22)
SubscriptionParseFailedError = _response_error("SubscriptionParseFailedError", 23)
SubscriptionNotExistError = _response_error("SubscriptionNotExistError", 24)
SubscriptionNotLatestError = _response_error("SubscriptionNotLatestError", 25)
SubscriptionGroupNotExistError = _response_error("SubscriptionGroupNotExistError", 26)
NoBuyerIdError = _response_error("NoBuyerIdError", 204, True)
NotInCurrentUnitError = _response_error("NotInCurrentUnitError", 205, True)
ConsumerNotOnlineError = _response_error("ConsumerNotOnlineError", 206)

_BY_CODE: dict[int, type[BrokerResponseError]] = {
    cls.response_code: cls
    for cls in (
        SystemError_,
        SystemBusyError,
        RequestCodeNotSupportedError,
        TransactionFailedError,
        MessageIllegalError,
        ServiceNotAvailableError,
        VersionNotSupportedError,
        NoPermissionError,
        TopicNotExistError,
        TopicExistAlreadyError,
        PullRetryImmediatelyError,
        QueryNotFoundError,
        SubscriptionParseFailedError,
        SubscriptionNotExistError,
        SubscriptionNotLatestError,
        SubscriptionGroupNotExistError,
        NoBuyerIdError,
        NotInCurrentUnitError,
        ConsumerNotOnlineError,
    )
}


def error_for_response(code: int, remark: str | None = None, addr: str | None = None) -> BrokerResponseError:
    """The exception for a non-success ``code``, as one class per known code."""
    cls = _BY_CODE.get(code, BrokerResponseError)
    return cls(code, remark, addr)
