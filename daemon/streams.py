"""One named stream: its learner, its queue of accepted batches, its files, and what it serves.

Threads and ownership (``docs/daemon.md``):

* the **I/O loop** accepts batches: it checks them, appends them to the
  write-ahead log (:mod:`.wal`) and queues them (:meth:`Stream.offer`);
* a **worker** learns them, one stream at a time per worker, so each learner
  has a single writer (:meth:`Stream.run_next`);
* after each batch the worker publishes an immutable :class:`View` of the
  learner (next-symbol distribution and statistics).  The I/O loop answers
  ``predict`` and ``stats`` from the latest view and never reads the learner's
  arrays while a worker writes them;
* what the worker did goes back to the loop as a report (:mod:`.reports`).

A stream moves through the states of :mod:`.lifecycle` (creating, live,
broken, faulted, dropped, gone); :attr:`Stream.state` is where it is.

Files, in ``<state_dir>/streams/<name>/``: ``stream.json`` (the model
configuration, written once at creation), ``snapshot`` (the learner at some
position, replaced atomically; its bytes are :mod:`.snapshot_file`), and the
log segments.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import threading
import time
import uuid
import zlib
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.online import OnlineConfig, OnlineLearner
from ..core.online.state import state_nbytes
from . import lifecycle, snapshot_file, wal
from .lifecycle import State
from .reports import Learned, SnapshotFailed, SnapshotWritten

RECENT = 4096  # symbols over which the "recent" bits/symbol is taken
CHUNK = 1 << 16  # a worker learns at most this many symbols before it yields to other streams

PRESETS = {
    "bytes": OnlineConfig.bytes_default,  # a small GLNN plus context units: logs, text, bytes
    "glnn": OnlineConfig,  # seed 000's GLNN alone
}


# Earlier versions of a preset, for streams an older seqd created with it: such a stream keeps its model, and
# a create with exist_ok that names the preset still finds it.  What each earlier "bytes" had instead of today's:
_BYTES_0_8 = dict(unit_selected_weights=False, probability_maps=False)
_BYTES_0_7 = dict(_BYTES_0_8, field_selecting_fields=1, field_selecting_positions=4)
_BYTES_0_6 = dict(_BYTES_0_7, order2_selected_weights=False)
_BYTES_0_5 = dict(_BYTES_0_6, number_context=False)
_BYTES_0_4 = dict(_BYTES_0_5, field_selected_weights=False)
_BYTES_0_3 = dict(_BYTES_0_4, context_orders=(1, 2, 3, 4, 6, 8, 12, 16), field_column_context=False,
                  indirect_context=False)
_BYTES_0_2 = dict(_BYTES_0_3, selected_weights=False)  # and no mixer
EARLIER = {"bytes": tuple((lambda before: lambda **overrides: OnlineConfig.bytes_default(**{**before, **overrides}))(b)
                          for b in (_BYTES_0_8, _BYTES_0_7, _BYTES_0_6, _BYTES_0_5, _BYTES_0_4, _BYTES_0_3, _BYTES_0_2))}


def is_earlier_preset(config: OnlineConfig, preset: str | None, overrides: dict | None) -> bool:
    """Whether ``config`` is ``preset`` with ``overrides`` as an earlier seqd built it (:data:`EARLIER`)."""
    for build in EARLIER.get(preset or "bytes", ()):
        try:
            if build(**(overrides or {})) == config:
                return True
        except (TypeError, ValueError):
            continue
    return False


# What one request may ask of the daemon's memory and time: a model within these bounds is built in well
# under a second, and its arrays are counted against max_state_bytes before it is kept.
SERVED_BOUNDS = {"units": 512, "degree": 64, "window": 256, "context_bits": 22, "history_bits": 24,
                 "match_bits": 24}
MAX_CONTEXT_ORDERS = 16


def make_config(preset: str | None, overrides: dict | None) -> OnlineConfig:
    """The model configuration of a new stream; ValueError with the reason when refused.

    Besides ``OnlineConfig``'s own checks, the daemon bounds the model's size
    (:data:`SERVED_BOUNDS`): a request must not be able to stall the daemon or
    exhaust its memory.
    """
    preset = preset or "bytes"
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    known = {f.name for f in dataclasses.fields(OnlineConfig)}
    unknown = set(overrides or {}) - known
    if unknown:
        raise ValueError(f"unknown model setting(s) {', '.join(sorted(unknown))}")
    try:
        config = PRESETS[preset](**(overrides or {}))
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    for name, bound in SERVED_BOUNDS.items():
        if getattr(config, name) > bound:
            raise ValueError(f"{name} = {getattr(config, name)} is above what this daemon serves ({bound})")
    if len(config.context_orders) > MAX_CONTEXT_ORDERS:
        raise ValueError(f"at most {MAX_CONTEXT_ORDERS} context orders, got {len(config.context_orders)}")
    return config


def config_dict(config: OnlineConfig) -> dict:
    out = dataclasses.asdict(config)
    out["context_orders"] = list(out["context_orders"])
    return out


@dataclass(frozen=True)
class View:
    """What a stream serves at one position, computed by the worker, read by the I/O loop."""

    position: int
    symbols: np.ndarray  # seen symbols, most probable first (ties: smaller symbol first)
    probs: np.ndarray  # their probabilities
    escape: float  # probability of a symbol not seen yet
    alphabet_cap: int
    stats: dict

    @classmethod
    def of(cls, learner: OnlineLearner, position: int, stats: dict) -> "View":
        dist = learner.predict_proba_one()
        escape = dist.pop(None)
        symbols = np.fromiter(dist.keys(), dtype=np.int64, count=len(dist))
        probs = np.fromiter(dist.values(), dtype=np.float64, count=len(dist))
        order = np.lexsort((symbols, -probs))
        return cls(position, symbols[order], probs[order], escape, learner.config.alphabet_cap, stats)

    def top(self, k: int) -> list[list]:
        return [list(pair) for pair in zip(self.symbols[:k].tolist(), self.probs[:k].tolist())]

    def distribution(self) -> list[float]:
        """Every symbol's probability; the unseen share the escape mass (as ``OnlineLearner.predict_proba``)."""
        return OnlineLearner.spread(self.alphabet_cap, self.symbols, self.probs, self.escape).tolist()


class Stream:
    def __init__(self, name: str, directory: Path, learner: OnlineLearner, position: int, *,
                 created: float, fsync: bool):
        self.name = name
        self.directory = directory
        self.learner = learner
        self.config = learner.config
        self.created = created
        self.started = time.time()
        self.snapshot_position = position
        self.snapshot_time = time.monotonic()
        self.log = wal.WriteAheadLog(directory, wal.itemsize_for(self.config.alphabet_cap), position, fsync=fsync)
        self.lock = threading.Lock()  # guards the queue, `scheduled`, `queued`, `state` and the flags below
        self.io_lock = threading.Lock()  # a snapshot being written, or the directory being moved away by a drop
        self.queue: deque = deque()  # ("batch", start, symbols) | ("snapshot", [requesters]) | ("drop", path)
        self.queued = 0  # accepted symbols not yet learned
        self.syncing = 0  # symbols in the log, waiting for its fsync before they are queued (I/O loop only)
        self.syncing_batches = 0  # the batches they make
        self.scheduled = False  # a worker holds it, or it waits in the ready queue
        self.snapshot_pending = False
        self.state = State.CREATING  # served once the loop registers it (:meth:`go_live`)
        self.broken: str | None = None  # no more publishes until restart: the log failed, or learning did
        self.code_bits = 0.0
        self._recent = np.zeros(RECENT)
        self.view = View.of(learner, position, self._stats(position))

    # -- its lifecycle (:mod:`.lifecycle`) -----------------------------------------------------
    @property
    def faulted(self) -> bool:
        """Learning raised: the learner is in an unknown state, never snapshot it."""
        return self.state is State.FAULTED

    @property
    def dropped(self) -> bool:
        """Dropped (or gone): it takes no more work and writes nothing more."""
        return self.state in lifecycle.ENDED

    def _move(self, target: State) -> None:
        self.state = lifecycle.check(self.state, target)

    def go_live(self) -> None:
        """The loop serves it from now on (a creation or a restore is complete)."""
        with self.lock:
            self._move(State.LIVE)

    def mark_broken(self, reason: str) -> str:
        """Its write-ahead log failed: it refuses batches until a restart.  The first reason stays (a later
        failure proves nothing more); returns the reason in effect."""
        with self.lock:
            if self.state not in (State.BROKEN, State.FAULTED):
                self._move(State.BROKEN)  # from live; from anywhere else, IllegalTransition
                self.broken = reason
            return self.broken

    def forget(self) -> None:
        """Nothing refers to it any more (its drop is durable, or the limits refused its creation)."""
        with self.lock:
            self._move(State.GONE)

    # -- the I/O loop's side ------------------------------------------------------------------
    @property
    def accepted(self) -> int:
        return self.log.position

    def offer(self, start: int, symbols: np.ndarray) -> bool:
        """Queue a batch the log holds from position ``start``; returns True when the stream must be
        handed to a worker."""
        with self.lock:
            if self.faulted or self.dropped:
                return False
            self.queue.append(("batch", start, symbols))
            self.queued += len(symbols)
            return self._schedule()

    def request_snapshot(self, requester) -> bool:
        """Queue a snapshot after the batches before it; a requester joins a snapshot already queued.
        ``requester`` may be None (a periodic snapshot).  Returns True when the stream must be scheduled."""
        with self.lock:
            if self.faulted or self.dropped:
                return False
            if self.queue and self.queue[-1][0] == "snapshot":  # nothing queued after it: it covers this request
                if requester is not None:
                    self.queue[-1][1].append(requester)
                return False
            self.snapshot_pending = True
            self.queue.append(("snapshot", [requester] if requester is not None else []))
            return self._schedule()

    def drop(self, trash: Path) -> tuple[bool, list]:
        """Forget the queued work and remove the (already moved) files; returns (schedule?, the
        requesters of the snapshots that will now never be written)."""
        with self.lock:
            self._move(State.DROPPED)
            orphans = self._clear()
            self.queue.append(("drop", trash))
            return self._schedule(), orphans

    def fail(self, reason: str) -> list:
        """Learning raised: stop feeding the learner; returns the snapshot requesters left waiting.  A stream
        dropped meanwhile stays dropped."""
        with self.lock:
            self.broken = reason
            if self.state in (State.LIVE, State.BROKEN):  # the only states the table lets fault
                self._move(State.FAULTED)
            orphans = self._clear()
            self.scheduled = False
            return orphans

    def _clear(self) -> list:
        orphans = [r for kind, *args in self.queue if kind == "snapshot" for r in args[0]]
        self.queue.clear()
        self.queued = 0
        self.snapshot_pending = False
        return orphans

    def _schedule(self) -> bool:
        if self.scheduled:
            return False
        self.scheduled = True
        return True

    def stagger(self, interval: float) -> None:
        """Delay the stream's first periodic snapshot by a phase of its own in the interval, from its name.

        Streams created or restored together would otherwise fall due
        together, every ``interval`` (``snapshot_interval_seconds``), and write their
        snapshots (tens of megabytes each) in one burst that delays answers
        (``bench/snapshots.py``); spread over the interval, they come one at a
        time.  Delayed, never advanced: no stream is snapshotted more often.
        """
        phase = zlib.crc32(self.name.encode()) / 2**32
        self.snapshot_time += phase * interval

    # -- a worker's side ----------------------------------------------------------------------
    def run_next(self):
        """Do the next queued piece of work; returns (report, more): the report for the I/O loop
        (:mod:`.reports`; None when there is nothing to tell), and whether work is left.

        When ``more`` is True the caller puts the stream back in the ready queue
        (after the other streams: round robin).
        """
        with self.lock:
            if not self.queue:
                self.scheduled = False
                return None, False
            kind, *args = self.queue[0]
            if kind == "batch" and len(args[1]) > CHUNK:  # learn a long batch in pieces, between other streams
                start, symbols = args
                self.queue[0] = ("batch", start + CHUNK, symbols[CHUNK:])
                args = [start, symbols[:CHUNK]]
            else:
                self.queue.popleft()
        if kind == "batch":
            report = Learned(self, *self._learn(args[1]))
        elif kind == "snapshot":
            try:
                report = SnapshotWritten(self, tuple(args[0]), self._write_snapshot())
            except Exception as exc:  # disk full, say: the log still holds everything; report it, go on learning
                report = SnapshotFailed(self, tuple(args[0]), exc)
        else:  # drop: the directory was already moved aside by the I/O loop; nothing to tell
            shutil.rmtree(args[0], ignore_errors=True)
            report = None
        with self.lock:
            if kind == "batch":
                self.queued -= len(args[1])
            if kind == "snapshot":
                self.snapshot_pending = any(item[0] == "snapshot" for item in self.queue)
            more = bool(self.queue)
            if not more:
                self.scheduled = False
        return report, more

    def _learn(self, symbols: np.ndarray) -> tuple[int, float, float]:
        t0 = time.perf_counter()
        bits = self.learner.learn(symbols)
        seconds = time.perf_counter() - t0
        batch_bits = float(bits.sum())
        self.code_bits += batch_bits
        tail = bits[-RECENT:]
        self._recent = np.concatenate((self._recent[len(tail):], tail))
        position = self.view.position + len(symbols)
        self.view = View.of(self.learner, position, self._stats(position))
        return len(symbols), batch_bits, seconds

    def _stats(self, position: int) -> dict:
        s = self.learner.stats
        recent_n = min(position, RECENT)
        return {
            "position": position,
            "bits_per_symbol": self.code_bits / position if position else None,
            "recent_bits_per_symbol": float(self._recent[RECENT - recent_n:].sum()) / recent_n if recent_n else None,
            "code_bits": self.code_bits,
            "alphabet_size": s["alphabet_size"],
            "alphabet_cap": self.config.alphabet_cap,
            "writing_rate": s["writing_rate"],
            "transition_rate": s["transition_rate"],
            "windows": s["windows"],
            "rejected_windows": s["rejected_windows"],
        }

    def _write_snapshot(self) -> int:
        """The learner and its statistics, atomically: temporary file, fsync, rename, fsync of the folder.

        Under ``io_lock``: a drop moves the directory away only between
        snapshots, and a dropped stream writes none (its name may already
        belong to a new stream).
        """
        position = self.view.position
        head = snapshot_file.head(position, self.code_bits, self._recent)
        if self.faulted:
            raise RuntimeError(f"stream {self.name!r} is not snapshotted: {self.broken}")
        path = self.directory / "snapshot"
        # The long part, outside the lock; the learner's arrays are deflated and written without the GIL.
        # A name of its own: should the stream be dropped and its name created again meanwhile, this file
        # lands in the new stream's folder, where it must not meet that stream's own snapshot being written.
        tmp = snapshot_file.write_durably(path.with_name(f"snapshot.{uuid.uuid4().hex}.tmp"), head,
                                          *snapshot_file.deflated(self.learner.snapshot_parts()))
        with self.io_lock:
            if self.dropped:
                tmp.unlink(missing_ok=True)
                raise Dropped(self.name)
            os.replace(tmp, path)
            wal.fsync_path(path.parent)
        self.snapshot_time = time.monotonic()
        return position

    # -- creation and recovery ----------------------------------------------------------------
    @classmethod
    def create(cls, name: str, streams_dir: Path, config: OnlineConfig, *, fsync: bool) -> "Stream":
        """A new stream, built in a temporary directory and renamed into place: a failure or a crash
        halfway leaves no directory that would claim the name."""
        tmp = streams_dir / f".new-{name}-{uuid.uuid4().hex}"
        tmp.mkdir(mode=wal.PRIVATE_DIR)
        try:
            created = time.time()
            meta = {"name": name, "created": created, "config": config_dict(config)}
            snapshot_file.write_atomically(tmp / "stream.json", json.dumps(meta, indent=1).encode())
            learner = OnlineLearner(config)
            directory = streams_dir / name
            os.rename(tmp, directory)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            wal.fsync_path(streams_dir)
            return cls(name, directory, learner, 0, created=created, fsync=fsync)
        except BaseException:  # (its first log segment, say): no folder may claim a name nobody was given
            aside = streams_dir / f".new-{name}-{uuid.uuid4().hex}"
            try:
                os.rename(directory, aside)
            except OSError:
                aside = directory
            shutil.rmtree(aside, ignore_errors=True)
            raise

    @classmethod
    def open(cls, directory: Path, *, fsync: bool) -> "Stream":
        """Restore a stream: its snapshot, then the batches its log holds after it (same bits as before)."""
        for leftover in [*directory.glob("snapshot.*.tmp"), directory / "snapshot.tmp"]:  # cut short by a crash
            leftover.unlink(missing_ok=True)  # or a drop (``snapshot.tmp``: the name earlier versions used)
        meta = json.loads((directory / "stream.json").read_text())
        config = OnlineConfig(**meta["config"])
        position, code_bits, recent, learner = 0, 0.0, None, None
        snap = directory / "snapshot"
        if snap.exists():
            # the learner of stream.json's configuration, and a little for its header: a damaged or hostile
            # file cannot make the inflating take more
            bound = state_nbytes(config) + (1 << 20)
            position, code_bits, recent, learner = snapshot_file.read(snap, RECENT, max_learner_bytes=bound)
            if learner.config != config:
                raise ValueError(f"{snap}: its model configuration differs from stream.json")
        learner = learner or OnlineLearner(config)
        itemsize = wal.itemsize_for(config.alphabet_cap)
        bits = [np.zeros(0)]
        learned = position
        for batch in wal.replay(directory, itemsize, position):
            bits.append(learner.learn(batch))
            learned += len(batch)
        replayed = np.concatenate(bits)
        stream = cls(meta["name"], directory, learner, learned, created=meta["created"], fsync=fsync)
        stream.code_bits = code_bits + float(replayed.sum())
        recent = np.zeros(RECENT) if recent is None else recent
        stream._recent = np.concatenate((recent, replayed))[-RECENT:]
        stream.snapshot_position = position
        stream.view = View.of(learner, learned, stream._stats(learned))
        return stream


class Dropped(Exception):
    """The stream was dropped: it writes nothing more."""
