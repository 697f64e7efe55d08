"""Connection events (Java's ``ChannelEventListener``): connect, close, idle, exception.

The broker uses them to drop the producers and consumers of a closed
connection; a listener overrides only the events it cares about.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from rocketmq_py.remoting.protocol import RemotingConnection

__all__ = ["ConnectionListener", "ListenerGroup"]

_log = logging.getLogger(__name__)


class ConnectionListener:
    """Receives the events of connections; every method does nothing by default."""

    def on_connect(self, connection: RemotingConnection) -> None:
        """The connection was established."""

    def on_close(self, connection: RemotingConnection) -> None:
        """The connection is gone; its pending requests have been failed."""

    def on_idle(self, connection: RemotingConnection) -> None:
        """Nothing was read or written for the idle time; the connection is being closed."""

    def on_exception(self, connection: RemotingConnection, error: BaseException) -> None:
        """The connection hit an error (a malformed frame, for one) and is being closed."""


class ListenerGroup(ConnectionListener):
    """Passes each event to every member; a member that raises is logged and skipped."""

    def __init__(self, listeners: Iterable[ConnectionListener] = ()) -> None:
        self._listeners: list[ConnectionListener] = list(listeners)

    def add(self, listener: ConnectionListener) -> None:
        self._listeners.append(listener)

    def remove(self, listener: ConnectionListener) -> None:
        self._listeners.remove(listener)

    def on_connect(self, connection: RemotingConnection) -> None:
        for listener in tuple(self._listeners):
            try:
                listener.on_connect(connection)
            except Exception:
                _log.exception("connection listener %r failed on connect of %s", listener, connection.remote_address)

    def on_close(self, connection: RemotingConnection) -> None:
        for listener in tuple(self._listeners):
            try:
                listener.on_close(connection)
            except Exception:
                _log.exception("connection listener %r failed on close of %s", listener, connection.remote_address)

    def on_idle(self, connection: RemotingConnection) -> None:
        for listener in tuple(self._listeners):
            try:
                listener.on_idle(connection)
            except Exception:
                _log.exception("connection listener %r failed on idle of %s", listener, connection.remote_address)

    def on_exception(self, connection: RemotingConnection, error: BaseException) -> None:
        for listener in tuple(self._listeners):
            try:
                listener.on_exception(connection, error)
            except Exception:
                _log.exception("connection listener %r failed on exception of %s", listener, connection.remote_address)
