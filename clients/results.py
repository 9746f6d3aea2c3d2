"""Typed results of the client's operations: frozen dataclasses built from a reply's ``result`` map.

Each ``from_result`` reads the fields the protocol documents; ``raw`` (where
present) keeps the whole map, so that fields a newer server adds are not lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class ServerInfo:
    """What ``ping`` answers: the server's name, version and protocol version."""

    server: str
    version: str
    protocol: int

    @classmethod
    def from_result(cls, r: dict[str, Any]) -> "ServerInfo":
        return cls(server=str(r.get("server", "")), version=str(r.get("version", "")),
                   protocol=int(r.get("protocol", 0)))


@dataclass(frozen=True)
class Created:
    """A ``create``: whether the stream is new (False: it existed and ``exist_ok`` was given)."""

    stream: str
    created: bool
    config: dict[str, Any]

    @classmethod
    def from_result(cls, r: dict[str, Any]) -> "Created":
        return cls(stream=r["stream"], created=bool(r.get("created")), config=dict(r.get("config") or {}))


@dataclass(frozen=True)
class Ack:
    """A publish acknowledged: ``position`` is the stream's length after the batch (accepted and
    durable); ``queued`` the symbols accepted but not learned yet."""

    stream: str
    position: int
    queued: int

    @classmethod
    def from_result(cls, r: dict[str, Any]) -> "Ack":
        return cls(stream=r["stream"], position=int(r["position"]), queued=int(r.get("queued", 0)))


@dataclass(frozen=True)
class Prediction:
    """The next-symbol distribution after ``position`` learned symbols.

    ``top`` holds ``(symbol, p)``, most probable first; ``escape`` is the
    probability of a symbol not seen yet; ``distribution`` (only when asked
    for the full distribution) holds p for every symbol below the alphabet cap.
    """

    stream: str
    position: int
    top: tuple[tuple[int, float], ...]
    escape: float
    alphabet_size: int
    distribution: tuple[float, ...] | None = None

    @classmethod
    def from_result(cls, r: dict[str, Any]) -> "Prediction":
        dist = r.get("distribution")
        return cls(stream=r["stream"], position=int(r["position"]),
                   top=tuple((int(s), float(p)) for s, p in r.get("top") or ()),
                   escape=float(r.get("escape", 0.0)), alphabet_size=int(r.get("alphabet_size", 0)),
                   distribution=None if dist is None else tuple(float(p) for p in dist))


@dataclass(frozen=True)
class StreamStats:
    """A stream's statistics (``stats`` with a stream).  ``position`` counts learned symbols,
    ``accepted`` the durable ones, ``queued`` the difference; bits per symbol are None before
    the first symbol."""

    stream: str
    position: int
    accepted: int
    queued: int
    bits_per_symbol: float | None = None
    recent_bits_per_symbol: float | None = None
    code_bits: float | None = None
    alphabet_size: int | None = None
    alphabet_cap: int | None = None
    model: str | None = None  # "glnn", "ctw", "esn", "lstm" or "scornn" (protocol.PRESETS name presets of these)
    writing_rate: float | None = None
    transition_rate: float | None = None
    windows: int | None = None
    rejected_windows: int | None = None
    config: dict[str, Any] | None = None
    state_bytes: int | None = None
    created: float | None = None
    uptime_seconds: float | None = None
    resident: bool | None = None  # its learner in memory (False: hibernated to its snapshot; a batch wakes it)
    state: str | None = None  # "live", or "broken": refusing publishes until a restart (``broken`` says why)
    broken: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_result(cls, r: dict[str, Any]) -> "StreamStats":
        values = {f.name: r.get(f.name) for f in fields(cls) if f.name != "raw"}
        for name in ("position", "accepted", "queued"):
            values[name] = int(values[name] or 0)
        return cls(**values, raw=dict(r))


@dataclass(frozen=True)
class ServerStats:
    """The server's statistics (``stats`` without a stream)."""

    server: str
    version: str
    uptime_seconds: float
    streams: tuple[str, ...]
    queued: int
    symbols_learned: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_result(cls, r: dict[str, Any]) -> "ServerStats":
        return cls(server=str(r.get("server", "")), version=str(r.get("version", "")),
                   uptime_seconds=float(r.get("uptime_seconds") or 0.0), streams=tuple(r.get("streams") or ()),
                   queued=int(r.get("queued") or 0), symbols_learned=int(r.get("symbols_learned") or 0), raw=dict(r))


@dataclass(frozen=True)
class Snapshot:
    """A snapshot on disk, taken at ``position`` learned symbols."""

    stream: str
    position: int

    @classmethod
    def from_result(cls, r: dict[str, Any]) -> "Snapshot":
        return cls(stream=r["stream"], position=int(r["position"]))
