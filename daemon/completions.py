"""What the I/O loop's news means, as plain data: the replies to send and the work to hand on.

The I/O loop (:mod:`.server`) hears four kinds of news: a request (which
:mod:`.requests` answers at once or defers), a report from a background
thread (:mod:`.reports`), a tick of the clock, and a stop.
:class:`Completions` decides what each one means and returns it as an
:class:`Outcome`: the
replies to send, the streams to hand to the workers, the group commits for
the sync thread, the jobs for the namespace thread, the prediction events to
publish.  It changes the streams' bookkeeping as it decides (a batch queued,
a log checkpointed, a stream marked broken) and counts in the telemetry, but
sends nothing and touches no queue, so every decision is tested without a
socket or a thread (``tests/test_completions.py``).

The orderings that durability rests on live here:

* a batch is acknowledged, and handed to the workers, only once the sync
  thread reports its log fsynced (:meth:`Completions.commit`; without
  ``fsync``, at the end of its burst);
* when a log cannot be synced, that batch and every later one of its stream
  are refused: none may be learned past a hole;
* a report about a stream dropped meanwhile (whose name may now belong to a
  new stream) answers its requesters ``no_such_stream`` and touches no stream
  of that name;
* a publish with ``create`` is published once its stream is in place;
* a stop drains (:meth:`Completions.wind_down`): once no sync is under way
  and no stream is being created, every stream that changed is snapshotted,
  and the loop ends when no stream is left with a worker.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from ..clients import protocol as P
from ..clients.protocol import Reply
from .config import ServeConfig
from .metrics import Telemetry
from .reports import (Created, CreateFailed, DropSynced, Faulted, Hibernated, Learned, NeedsRoom, SnapshotFailed,
                      SnapshotWritten, Synced)
from .pending import (AwaitNamespace, AwaitPosition, AwaitRoom, AwaitSync, AwaitWorker, CreateJob, Deferral, DropJob,
                      Pending)
from .requests import Requests, prediction, stopping
from .models import config_dict
from .streams import Stream

log = logging.getLogger("seqd")

EVENT_TOP = 5  # symbols in each prediction event


@dataclass(eq=False)
class Outcome:
    """What the loop is to do, carried out in this order: hand ``schedule`` to the workers, publish
    ``events``, send ``replies`` (each a request, its reply and its kind, in the order given), queue
    ``syncs`` for the sync thread and ``jobs`` for the namespace thread."""

    schedule: list[Stream] = field(default_factory=list)
    events: list[P.Event] = field(default_factory=list)
    replies: list[tuple[Pending, Reply, str]] = field(default_factory=list)
    syncs: list[tuple[AwaitSync, ...]] = field(default_factory=list)
    jobs: list[CreateJob | DropJob] = field(default_factory=list)

    def reply(self, pending: Pending, reply: Reply, op: str | None = None) -> None:
        """Answer ``pending`` (its kind is its request's operation unless ``op`` says otherwise)."""
        self.replies.append((pending, reply, op or pending.request.op))


class Completions:
    """The decisions of the loop over :class:`~.requests.Requests`' streams, creations and waiting
    predicts; ``stopping`` says whether the server stops."""

    def __init__(self, config: ServeConfig, requests: Requests, telemetry: Telemetry, *,
                 stopping: Callable[[], bool]):
        self.config = config
        self.requests = requests
        self.streams = requests.streams
        self.waiters = requests.waiters
        self.budget = requests.budget  # the learners' memory (:mod:`.budget`)
        # wakes (a Stream a worker could not wake) and creations (a CreateJob) waiting for room, first come first
        # served (:meth:`_admit`)
        self.waiting: deque[Stream | CreateJob] = deque()
        self.telemetry = telemetry
        self.stopping = stopping
        self.commits_in_flight = 0  # group commits handed to the sync thread and not reported yet
        self.draining = False  # a stop was seen
        self.snapshots_asked = False  # ... and the last snapshots are queued

    # -- requests ------------------------------------------------------------------------------------
    def request(self, pending: Pending, acks: list[AwaitSync]) -> Outcome:
        """A decoded request: its reply now (a refusal, when :class:`~.requests.Requests` raises a
        ProtocolError; ``internal``, when it fails), or what its deferral asks of the loop.  A batch waiting
        for its fsync joins ``acks``, the burst's group commit (:meth:`commit`)."""
        out, req = Outcome(), pending.request
        try:
            result = self.requests.handle(pending)
            if isinstance(result, Reply):
                out.reply(pending, result)
            else:
                self._defer(result, acks, out)
        except P.ProtocolError as exc:
            out.reply(pending, Reply.failure(req.id, exc.code, exc.message, exc.retry_after_ms))
        except Exception as exc:  # a fault of ours: the daemon must survive it, and say so
            log.exception("request %s %s failed", req.op, req.stream)
            out.reply(pending, Reply.failure(req.id, P.INTERNAL, f"{type(exc).__name__}: {exc}"))
        self._admit(out)  # (a drop may have ended a wait)
        return out

    def _defer(self, deferral: Deferral, acks: list[AwaitSync], out: Outcome) -> None:
        """What a deferred request asks of the loop (a predict waiting for a position is already in the
        waiters)."""
        if isinstance(deferral, AwaitSync):
            acks.append(deferral)
        elif isinstance(deferral, AwaitWorker):
            if deferral.schedule is not None:
                out.schedule.append(deferral.schedule)
        elif isinstance(deferral, AwaitRoom):
            self._wait_for_room(deferral.job, out)
        elif isinstance(deferral, AwaitNamespace):
            if deferral.schedule is not None:
                out.schedule.append(deferral.schedule)
            for pending, reply, op in deferral.answers:
                out.reply(pending, reply, op)
            out.jobs.append(deferral.job)
        elif not isinstance(deferral, AwaitPosition):  # (a waiting predict is in the waiters already)
            raise TypeError(f"no handling is known for a {type(deferral).__name__} deferral")

    def commit(self, acks: list[AwaitSync]) -> Outcome:
        """Group commit: one fsync per touched log, in the sync thread, while the loop goes on answering;
        the batches are acknowledged and queued when it reports back (:class:`~.reports.Synced`).  Without
        ``fsync`` they are acknowledged now."""
        out = Outcome()
        self._commit(acks, out)
        return out

    def _commit(self, acks: list[AwaitSync], out: Outcome) -> None:
        if not self.config.fsync:
            self._acknowledge(acks, {}, out)
            return
        self.commits_in_flight += 1
        out.syncs.append(tuple(acks))

    def _acknowledge(self, acks, failed: dict[str, str], out: Outcome) -> None:
        waking = False
        for ack in acks:
            pending, stream, symbols = ack.pending, ack.stream, ack.symbols
            req = pending.request
            stream.syncing -= len(symbols)
            stream.syncing_batches -= 1
            if stream.dropped:
                out.reply(pending, Reply.failure(req.id, P.NO_SUCH_STREAM, f"stream {stream.name!r} was dropped "
                                                 "before this batch was acknowledged"))
                continue
            if stream.name in failed and not stream.broken:
                stream.mark_broken(failed[stream.name])
                log.error("stream %s: %s", stream.name, stream.broken)
            if stream.broken:  # and every batch after the failure: none may be learned past a hole
                out.reply(pending, Reply.failure(req.id, P.INTERNAL, f"{stream.broken}; this batch may or may not "
                                                 "be in the log: after a restart, `accepted` in the stream's "
                                                 "stats says"))
                continue
            if stream.offer(pending.position - len(symbols), symbols):
                out.schedule.append(stream)
                waking = waking or not stream.resident
            self.telemetry.symbols_accepted.inc(len(symbols))
            out.reply(pending, Reply.success(req.id, stream=stream.name, position=pending.position,
                                             queued=stream.queued))
        if waking:  # hibernated streams will wake: the hibernations that make room go to the workers first
            room = Outcome()
            self._hibernate_some(time.monotonic(), room)
            out.schedule[:0] = room.schedule

    # -- what the background threads did -------------------------------------------------------------
    def report(self, report) -> Outcome:
        """What a background thread's report means.  A fault of ours in the bookkeeping is logged, and
        what was decided before it is still carried out: the loop keeps serving."""
        out = Outcome()
        try:
            self._on_report(report, out)
        except Exception:
            name = report.stream.name if hasattr(report, "stream") else getattr(report, "name", "-")
            log.exception("handling a %s report failed (stream %s)", type(report).__name__, name)
        self._admit(out)
        return out

    def _on_report(self, report, out: Outcome) -> None:
        if isinstance(report, Learned):
            self._learned(report, out)
        elif isinstance(report, (SnapshotWritten, SnapshotFailed)):
            self._snapshot_done(report, out)
        elif isinstance(report, Hibernated):
            self._hibernated(report)
        elif isinstance(report, NeedsRoom):
            self._wait_for_room(report.stream, out)
        elif isinstance(report, Faulted):
            for r in report.orphans:
                out.reply(r, Reply.failure(r.request.id, P.INTERNAL, report.stream.broken), "snapshot")
        elif isinstance(report, Synced):
            self.commits_in_flight -= 1
            self._acknowledge(report.acks, report.failed, out)
        elif isinstance(report, (Created, CreateFailed)):
            self._created(report, out)
        elif isinstance(report, DropSynced):
            self._dropped(report, out)
        else:  # a kind of report this loop does not know: a fault of ours, logged by report()
            raise TypeError(f"no meaning is known for a {type(report).__name__} report")

    def _learned(self, report: Learned, out: Outcome) -> None:
        """A batch learned: counted; unless the stream was dropped meanwhile (its name may be reused), its
        prediction event goes out and the predicts waiting for its new position are answered."""
        stream = report.stream
        self.telemetry.batch_learned(stream, report.symbols, report.bits, report.seconds)
        if report.woken is not None:  # a learner more in memory: make room now rather than at the next turn
            self.telemetry.woken(report.woken)
            self._hibernate_some(time.monotonic(), out)
        if self.streams.get(stream.name) is stream:
            view = stream.view
            out.events.append(P.Event(stream=stream.name, position=view.position, symbols=report.symbols,
                                      bits=report.bits, top=tuple((s, p) for s, p in view.top(EVENT_TOP)),
                                      escape=view.escape))
            for w in self.waiters.wake(stream.name, stream.view.position):
                try:  # each woken predict is answered, whatever happens to the others'
                    reply = prediction(w.request, stream)
                except Exception as exc:  # a fault of ours: say so to this client, answer the rest
                    log.exception("the answer to a waiting predict on stream %s failed", stream.name)
                    reply = Reply.failure(w.request.id, P.INTERNAL, f"{type(exc).__name__}: {exc}")
                out.reply(w, reply, "predict")

    def _created(self, report: Created | CreateFailed, out: Outcome) -> None:
        """The namespace thread's report on a create: the stream is registered (or refused), and the request
        answered (a publish with ``create`` is published now)."""
        name = report.name
        pending, failure = self.requests.created(report)
        req, acks = pending.request, []
        if failure is not None:
            out.reply(pending, Reply.failure(req.id, *failure))
        elif req.op == "create":
            out.reply(pending, Reply.success(req.id, stream=name, created=True,
                                             config=config_dict(self.streams[name].config)))
        elif self.stopping():
            out.reply(pending, stopping(req))
        else:
            result = self.requests.publish(pending, self.streams[name])
            if isinstance(result, Reply):
                out.reply(pending, result)
            else:
                self._defer(result, acks, out)
        if acks:
            self._commit(acks, out)
        if failure is None:  # a learner more in memory: make room now rather than at the next turn
            self._hibernate_some(time.monotonic(), out)

    def _dropped(self, report: DropSynced, out: Outcome) -> None:
        """The namespace thread's report on a drop: answer it, saying whether the drop is durable."""
        pending, name, error = report.requester, report.stream.name, report.error
        if error is not None:
            log.error("stream %s: its drop may not survive a power loss: %s", name, error)
            reply = Reply.failure(pending.request.id, P.INTERNAL, f"stream {name!r} was dropped, but the folder's "
                                  f"removal could not be synced ({type(error).__name__}: {error}); after a power "
                                  "loss it may come back")
        else:
            reply = Reply.success(pending.request.id, stream=name, dropped=True)
        out.reply(pending, reply, "drop")
        report.stream.forget()

    def _snapshot_done(self, report: SnapshotWritten | SnapshotFailed, out: Outcome) -> None:
        """A snapshot written (the log is cut after it) or failed (retried after the interval); each of its
        requesters is answered, ``no_such_stream`` when the stream was dropped meanwhile."""
        stream = report.stream
        if self.streams.get(stream.name) is not stream:
            def reply(r):
                return Reply.failure(r.request.id, P.NO_SUCH_STREAM, f"stream {stream.name!r} was dropped")
        elif isinstance(report, SnapshotFailed):
            result = report.error
            log.error("stream %s: snapshot failed (the log still holds everything; next try in %g s): %s",
                      stream.name, self.config.snapshot_interval_seconds, result)
            stream.snapshot_time = time.monotonic()
            stream.hibernate_after = stream.snapshot_time + self.config.snapshot_interval_seconds  # nor to sleep

            def reply(r):
                return Reply.failure(r.request.id, P.INTERNAL, f"snapshot failed: {result}")
        else:
            result = report.position
            self._snapshotted(stream, result)

            def reply(r):
                return Reply.success(r.request.id, stream=stream.name, position=result)
        for r in report.requesters:
            out.reply(r, reply(r), "snapshot")

    def _snapshotted(self, stream: Stream, position: int) -> None:
        """A snapshot at ``position`` is on disk: the log before it goes."""
        stream.snapshot_position = position
        try:
            stream.log.checkpoint(position)
        except OSError as exc:  # its fsync may be the one that failed: the log's durability is unknown
            stream.mark_broken(f"write-ahead log could not be synced or rotated: {exc}")
            log.error("stream %s: %s", stream.name, stream.broken)
        self.telemetry.snapshots.inc()

    def _hibernated(self, report: Hibernated) -> None:
        stream = report.stream
        if report.snapshot is not None and self.streams.get(stream.name) is stream:
            self._snapshotted(stream, report.snapshot)
        self.telemetry.hibernated()

    # -- the clock and the stop ----------------------------------------------------------------------
    def tick(self, now: float) -> Outcome:
        """Housekeeping at ``now`` (the loop's monotonic clock): the waiting predicts whose deadline has
        passed are answered ``timeout``, the streams due a periodic snapshot are snapshotted, and idle
        learners hibernate (:meth:`_hibernate_some`)."""
        out = Outcome()
        for w in self.waiters.expire(now):
            out.reply(w, Reply.failure(w.request.id, P.TIMEOUT, f"stream {w.request.stream!r} did not reach "
                                       f"position {w.request.min_position} within {w.request.wait_ms} ms"),
                      "predict")
        c = self.config
        for stream in self.streams.values():
            if stream.snapshot_pending or stream.broken:
                continue
            behind = stream.view.position - stream.snapshot_position
            if behind >= c.snapshot_interval_symbols or (
                    behind > 0 and now - stream.snapshot_time >= c.snapshot_interval_seconds):
                self._snapshot(stream, out)
        self._hibernate_some(now, out)
        self._admit(out)
        return out

    def _wait_for_room(self, waiter: Stream | CreateJob, out: Outcome) -> None:
        """A wake or a creation that found no room in the memory budget waits, and idle learners are asked to
        make it."""
        self.waiting.append(waiter)
        self.telemetry.room_waits.inc()
        self._hibernate_some(time.monotonic(), out)

    def _admit(self, out: Outcome) -> None:
        """Hand on what waited for room (:meth:`_wait_for_room`), first come first served, while it fits: a
        stream goes back to the workers (the worker takes the room as it wakes it), a creation takes its room
        and goes to the namespace thread.  A stream dropped or faulted meanwhile has no wake left to do and goes
        back at once (a drop's work is queued on it)."""
        if not self.waiting:
            return
        free, waiting = self.budget.free, deque()
        while self.waiting:
            waiter = self.waiting.popleft()
            if isinstance(waiter, Stream):
                if waiter.dropped or waiter.faulted or waiter.holds_room:
                    out.schedule.append(waiter)
                elif not waiting and waiter.learner_bytes <= free:
                    free -= waiter.learner_bytes
                    out.schedule.append(waiter)
                else:
                    waiting.append(waiter)
            elif not waiting and self.budget.try_take(waiter.state_bytes):
                free = self.budget.free
                out.jobs.append(waiter)
            else:
                waiting.append(waiter)
        self.waiting = waiting

    def _hibernate_some(self, now: float, out: Outcome) -> None:
        """Idle learners go to their snapshots: those idle for ``hibernate_after_seconds``, and, while the
        learners in memory take more than ``max_state_bytes``, the least recently active idle ones.  A
        hibernated stream still answers predicts and stats from its view; a batch wakes it."""
        c = self.config
        awake = sorted((s for s in self.streams.values() if s.resident and not s.hibernation_pending),
                       key=lambda s: s.last_active)
        # the learners in memory or on their way (the budget's count) less those already asked to hibernate, and
        # those to come: a hibernated stream with batches queued wakes when a worker takes it, and a creation may
        # be waiting; room is made for them before they allocate, not after
        leaving = sum(s.learner_bytes for s in self.streams.values() if s.resident and s.hibernation_pending)
        coming = (sum(s.learner_bytes for s in self.streams.values() if not s.holds_room and s.queued and not s.dropped)
                  + sum(w.state_bytes for w in self.waiting if isinstance(w, CreateJob)))
        used = self.budget.held - leaving + coming
        for stream in awake:  # least recently active first
            over = used > c.max_state_bytes
            stale = 0 < c.hibernate_after_seconds <= now - stream.last_active
            if not (over or stale):
                break  # the rest are more recent, and there is room
            if (stream.idle and not stream.snapshot_pending and not stream.broken and now >= stream.hibernate_after
                    and stream.request_hibernation()):
                out.schedule.append(stream)
                used -= stream.learner_bytes

    def disconnected(self, connection: int) -> Outcome:
        """A client connection closed: the predicts that waited over it are answered (the reply goes nowhere
        unless the connection's descriptor was already reused, when it says why the wait ended) and their
        places freed."""
        out = Outcome()
        for w in self.waiters.release(connection):
            out.reply(w, Reply.failure(w.request.id, P.TIMEOUT, "the wait ended when the connection it came over "
                                       "closed; ask again"), "predict")
        return out

    def wind_down(self) -> tuple[Outcome, bool]:
        """One turn of the loop once a stop is asked: when every accepted batch is queued (no sync under
        way) and every stream being created is in place, each stream that changed since its snapshot (and
        is not faulted) is snapshotted, once.  Returns those snapshots to schedule, and whether the loop may
        end: the snapshots are asked and no stream is left with a worker."""
        out = Outcome()
        if not self.draining:
            self.draining = True
            log.info("stopping: finishing queued work and writing snapshots")
        if not self.snapshots_asked and self.commits_in_flight == 0 and not self.requests.creating:
            self.snapshots_asked = True
            for stream in self.streams.values():
                if stream.accepted > stream.snapshot_position and not stream.faulted:
                    self._snapshot(stream, out)
        return out, self.snapshots_asked and not any(s.scheduled for s in self.streams.values())

    def _snapshot(self, stream: Stream, out: Outcome) -> None:
        if stream.request_snapshot(None):
            out.schedule.append(stream)
