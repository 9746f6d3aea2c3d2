"""The exceptions a seqd client raises, one class per error code that a caller handles differently.

Every failure from the server is a :class:`SeqdError` with the protocol's
``code`` and the server's ``message``.  :data:`ERROR_CLASSES` maps codes to
classes; codes without an entry become :class:`ServerError`.  Arguments that
break the protocol before anything is sent (a bad stream name, a negative
symbol) raise :class:`seqd.clients.protocol.ProtocolError`, a ``ValueError``.
"""

from __future__ import annotations

from . import protocol

NO_REPLY = "no_reply"  # not a protocol code: the client heard nothing back in time


class SeqdError(Exception):
    """A request that failed: ``code`` (see ``protocol.ERROR_CODES``) and a human ``message``."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}" if code != NO_REPLY else message)
        self.code = code
        self.message = message


class BusyError(SeqdError):
    """The stream's queue stayed full for the whole retry budget; nothing was accepted."""

    def __init__(self, code: str, message: str, retry_after_ms: int | None = None):
        super().__init__(code, message)
        self.retry_after_ms = retry_after_ms


class ConflictError(SeqdError):
    """A conditional publish whose ``position`` is not the stream's length; nothing was accepted."""


class NoSuchStreamError(SeqdError):
    """The stream does not exist."""


class SeqdTimeout(SeqdError, TimeoutError):
    """No reply in time (``code == "no_reply"``, ``endpoint`` set), or the server's own
    ``timeout`` (a predict whose ``min_position`` did not come within ``wait``)."""

    def __init__(self, code: str, message: str, endpoint: str | None = None):
        super().__init__(code, message)
        self.endpoint = endpoint

    @property
    def no_reply(self) -> bool:
        return self.code == NO_REPLY


class ServerError(SeqdError):
    """Any other refusal: bad_request, bad_name, stream_exists, bad_symbol, too_large, limit, ..."""


ERROR_CLASSES: dict[str, type[SeqdError]] = {
    protocol.BUSY: BusyError,
    protocol.CONFLICT: ConflictError,
    protocol.NO_SUCH_STREAM: NoSuchStreamError,
    protocol.TIMEOUT: SeqdTimeout,
}


def error_for(reply: protocol.Reply) -> SeqdError:
    """The exception for a failed reply."""
    code = reply.code or protocol.INTERNAL
    cls = ERROR_CLASSES.get(code, ServerError)
    if cls is BusyError:
        return BusyError(code, reply.message or "", reply.retry_after_ms)
    return cls(code, reply.message or "")
