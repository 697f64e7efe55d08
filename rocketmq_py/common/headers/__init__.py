"""Custom headers, one module per RPC family; each header knows its extFields names."""
from rocketmq_py.common.headers.base import CommandHeader, MissingHeaderFieldError, wire

__all__ = ["CommandHeader", "MissingHeaderFieldError", "wire"]
