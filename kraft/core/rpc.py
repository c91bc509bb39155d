"""Request-handling helpers shared by the RPC handlers: field checks and refusals."""
from __future__ import annotations

from . import errors


class InvalidRequest(ValueError):
    """A request field is missing or has the wrong type (answered INVALID_REQUEST)."""


class Refused(Exception):
    """A client request is answered with an error: ``body`` is the response body
    (``{"ErrorCode": code, "ErrorMessage"?: str}``)."""

    def __init__(self, code: int, message: str | None = None):
        super().__init__(f"{errors.name(code)}: {message}" if message else errors.name(code))
        self.code = code
        self.body = {"ErrorCode": code, **({"ErrorMessage": message} if message else {})}


def field(body: dict, name: str, kind: type | tuple, optional: bool = False):
    """``body[name]`` checked against ``kind``; raises InvalidRequest naming the field."""
    if name not in body or body[name] is None:
        if optional:
            return None
        raise InvalidRequest(f"missing field {name}")
    v = body[name]
    if not isinstance(v, kind) or (isinstance(v, bool) and kind is int):
        raise InvalidRequest(f"field {name} has the wrong type ({type(v).__name__})")
    return v
