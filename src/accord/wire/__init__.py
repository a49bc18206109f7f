"""The A2A 1.0.1 wire model, its ProtoJSON codec and the error table."""

from accord.wire._codec import WireError, convert, decode, encode, to_builtins
from accord.wire._errors import A2AError, ErrorKind, FieldViolation, invalid_params
from accord.wire._model import *  # noqa: F403
from accord.wire._model import __all__ as _model_all
from accord.wire._time import format_timestamp, parse_timestamp

__all__ = [
    "A2AError",
    "ErrorKind",
    "FieldViolation",
    "WireError",
    "convert",
    "decode",
    "encode",
    "format_timestamp",
    "invalid_params",
    "parse_timestamp",
    "to_builtins",
    *_model_all,
]
