"""Custom headers, one module per RPC family; each header knows its extFields names."""
from rocketmq_py.common.headers.base import (
    BadHeaderFieldError,
    CommandHeader,
    HeaderFieldError,
    MissingHeaderFieldError,
    wire,
)

__all__ = ["BadHeaderFieldError", "CommandHeader", "HeaderFieldError", "MissingHeaderFieldError", "wire"]
