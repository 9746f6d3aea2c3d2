"""Following a log through rotation and truncation (``cli/_follow.py``), alone and under the two commands.

The follower alone is driven by a scripted clock: each of its polls runs the
next step of a script (file operations), and the script's end stops it, so
the races (a name missing for a while, two rotations between two polls, a
truncation rewritten past the offset) are played exactly.  Then
``seqd compress --follow`` and ``seqd publish --follow`` run as an operator
runs them, in a subprocess stopped with SIGINT, while a writer thread
appends numbered lines through a ``create`` rotation and a ``copytruncate``;
every byte written must arrive exactly once, in order.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from fake_seqd import FakeServer
from seqd.cli import main
from seqd.cli._follow import FINGERPRINT_BYTES, Follower

SEQD = [sys.executable, "-m", "seqd"]
STARTUP_SECONDS = 600  # a command's first run may compile the kernels (Numba's cache empty)


# -- the follower alone, on a scripted clock -----------------------------------------------------------

def follow(path, steps, size=2) -> bytes:
    """What a follower of ``path`` gives while each poll runs the next of ``steps``; it stops after the last."""
    script = iter(steps)
    done = False

    def sleep(seconds):
        nonlocal done
        step = next(script, None)
        if step is None:
            done = True
        else:
            step()

    return b"".join(Follower(path, size, poll=1.0, keep_going=lambda: not done, sleep=sleep))


def append(path, data: bytes):
    with open(path, "ab") as f:
        f.write(data)


def test_growth_truncation_and_rotation(tmp_path):
    log = tmp_path / "app.log"
    log.write_bytes(b"abc")
    old = open(log, "ab", buffering=0)  # the application's file: it appends until told to reopen

    def rotate():
        old.write(b"Z")  # last words of the old file
        os.rename(log, tmp_path / "app.log.1")
        log.write_bytes(b"new")

    got = follow(log, [lambda: append(log, b"def"), lambda: None,
                       lambda: os.truncate(log, 0), lambda: append(log, b"XY"), rotate])
    old.close()
    assert got == b"abcdefXYZnew"


def test_a_missing_name_is_waited_for_and_the_old_file_read_on(tmp_path):
    log = tmp_path / "app.log"
    log.write_bytes(b"one\n")
    old = open(log, "ab", buffering=0)
    got = follow(log, [lambda: os.rename(log, tmp_path / "app.log.1"),
                       lambda: old.write(b"two\n"),  # the name is missing; the writer has not reopened yet
                       lambda: None,
                       lambda: log.write_bytes(b"three\n")], size=3)
    old.close()
    assert got == b"one\ntwo\nthree\n"


def test_the_switch_waits_for_the_new_file_to_hold_a_byte(tmp_path):
    """logrotate's ``create``: rename, create an empty file, and the writer appends to the old one until signalled."""
    log = tmp_path / "app.log"
    log.write_bytes(b"a")
    old = open(log, "ab", buffering=0)

    def rotate_and_create():
        os.rename(log, tmp_path / "app.log.1")
        log.write_bytes(b"")

    got = follow(log, [rotate_and_create, lambda: old.write(b"b"), lambda: old.write(b"c"),
                       lambda: append(log, b"d")])
    old.close()
    assert got == b"abcd"


def test_delete_then_create(tmp_path):
    log = tmp_path / "app.log"
    log.write_bytes(b"first\n")
    old = open(log, "ab", buffering=0)

    def delete_and_recreate():
        os.unlink(log)
        old.write(b"unlinked\n")  # held open: still read, though no name reaches it
        log.write_bytes(b"second\n")  # cannot take the old file's inode: that one is held open

    got = follow(log, [delete_and_recreate], size=4)
    old.close()
    assert got == b"first\nunlinked\nsecond\n"


def test_two_rotations_between_polls_lose_the_file_in_between(tmp_path):
    """The held file is drained whatever its name; the one that had the name only between two polls was never opened."""
    log = tmp_path / "app.log"
    log.write_bytes(b"A1")
    held = open(log, "ab", buffering=0)

    def rotate_twice():
        os.rename(log, tmp_path / "app.log.1")
        held.write(b"A2")
        log.write_bytes(b"B")  # the file in between: lost (documented)
        os.rename(tmp_path / "app.log.1", tmp_path / "app.log.2")
        os.rename(log, tmp_path / "app.log.1")
        held.write(b"A3")
        log.write_bytes(b"C")

    got = follow(log, [rotate_twice])
    held.close()
    assert got == b"A1A2A3C"


def test_truncation_below_the_offset_is_followed_from_the_new_start(tmp_path):
    """``copytruncate``: the writer appends (O_APPEND) to the same inode, now from zero."""
    log = tmp_path / "app.log"
    writer = open(log, "ab", buffering=0)
    writer.write(b"0123456789")

    def copytruncate():
        shutil.copyfile(log, tmp_path / "app.log.1")
        os.truncate(log, 0)
        writer.write(b"abc")  # shorter than what was read: the size tells

    got = follow(log, [copytruncate, lambda: writer.write(b"de")], size=4)
    writer.close()
    assert got == b"0123456789abcde"


def test_truncation_rewritten_past_the_offset_is_told_by_the_fingerprint(tmp_path):
    log = tmp_path / "app.log"
    writer = open(log, "ab", buffering=0)
    writer.write(b"old line\n")

    def copytruncate_then_a_burst():
        os.truncate(log, 0)
        writer.write(b"NEW LINE 1\nNEW LINE 2\n")  # past the old offset before the follower looks

    got = follow(log, [copytruncate_then_a_burst], size=5)
    writer.close()
    assert got == b"old line\nNEW LINE 1\nNEW LINE 2\n"


def test_the_limit_a_rewrite_with_the_same_beginning_looks_like_an_append(tmp_path):
    """Documented: a truncation rewritten past the offset, beginning with the bytes read, cannot be told."""
    log = tmp_path / "app.log"
    writer = open(log, "ab", buffering=0)
    writer.write(b"same\n")

    def rewrite_the_same_beginning():
        os.truncate(log, 0)
        writer.write(b"same\nmore\n")

    got = follow(log, [rewrite_the_same_beginning])
    writer.close()
    assert got == b"same\nmore\n"  # the new "same\n" is taken for the old one: those 5 bytes are lost


def test_the_fingerprint_is_the_first_bytes_only(tmp_path):
    """A change past the fingerprint is not a truncation: the file is read on, not read again."""
    log = tmp_path / "app.log"
    body = bytes(range(256)) * (2 * FINGERPRINT_BYTES // 256)
    log.write_bytes(body)

    def edit_past_the_fingerprint_then_append():
        with open(log, "r+b") as f:
            f.seek(FINGERPRINT_BYTES)
            f.write(b"!")
        append(log, b"tail")

    assert follow(log, [edit_past_the_fingerprint_then_append], size=1000) == body + b"tail"


def test_stop_reads_what_is_there_and_closes_the_file(tmp_path):
    log = tmp_path / "app.log"
    log.write_bytes(b"x" * 10)
    follower = Follower(log, 4, poll=1.0, keep_going=lambda: False, sleep=lambda s: pytest.fail("no poll after a stop"))
    chunks = list(follower)
    assert chunks == [b"xxxx", b"xxxx", b"xx"] and follower._file.closed


def test_errors_at_the_call(tmp_path):
    with pytest.raises(FileNotFoundError):
        Follower(tmp_path / "missing.log", 4)
    (tmp_path / "a.log").write_bytes(b"")
    with pytest.raises(ValueError, match="chunk size"):
        Follower(tmp_path / "a.log", 0)
    with pytest.raises(ValueError, match="poll interval"):
        Follower(tmp_path / "a.log", 4, poll=0)


# -- the commands, through logrotate's two ways -----------------------------------------------------

class LogWriter(threading.Thread):
    """An application writing numbered lines to ``path`` (O_APPEND), every line recorded in ``written``.

    ``lock`` held pauses it; ``reopen()`` is what its log-rotation signal does.
    """

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.lock = threading.Lock()
        self.file = open(path, "ab", buffering=0)
        self.written: list[bytes] = []
        self.stopped = threading.Event()

    def write_line(self):
        with self.lock:
            i = len(self.written)
            line = f"2026-11-24 10:{i // 60 % 60:02d}:{i % 60:02d} worker-{i % 7} handled request {i}\n".encode()
            self.file.write(line)
            self.written.append(line)

    def run(self):
        while not self.stopped.is_set():
            self.write_line()
            time.sleep(0.002)

    def text(self) -> bytes:
        with self.lock:
            return b"".join(self.written)

    def reopen(self):
        with self.lock:
            self.file.close()
            self.file = open(self.path, "ab", buffering=0)

    def stop(self):
        self.stopped.set()
        if self.is_alive():
            self.join(10)
        self.file.close()


def rotate(kind: str, log, writer: LogWriter, caught_up):
    """logrotate's ``create`` (rename, create, then signal the writer) or ``copytruncate`` (writer paused)."""
    if kind == "create":
        os.rename(log, log.with_name(log.name + ".1"))
        log.write_bytes(b"")  # logrotate creates it; the writer goes on with the old file until signalled
        time.sleep(0.5)
        writer.reopen()  # postrotate: the signal
    else:  # a careful copytruncate: the writer paused, and the follower caught up, before the copy
        with writer.lock:
            wait_for(lambda: caught_up(b"".join(writer.written)))
            shutil.copyfile(log, log.with_name(log.name + ".1"))
            os.truncate(log, 0)


def wait_for(condition, seconds: float = 60.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def decoded(path) -> bytes:
    """What ``seqd decompress --salvage`` makes of a .sqd file still being written."""
    out = io.BytesIO()
    stdout = io.TextIOWrapper(out)
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        code = main(["decompress", "--salvage", "-c", str(path)])
    got = out.getvalue()
    stdout.detach()  # the BytesIO is not closed with the wrapper
    return got if code in (0, 2) else b""


def run_through_rotation(kind, log, command, received):
    """Write lines, rotate, write more, while ``command`` follows ``log``; everything written must be received."""
    writer = LogWriter(log)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        writer.write_line()
        wait_for(lambda: received() != b"" or proc.poll() is not None, STARTUP_SECONDS)
        assert proc.poll() is None, proc.stderr.read().decode()  # up, and holding the first file
        writer.start()
        time.sleep(0.5)
        rotate(kind, log, writer, lambda text: received() == text)
        time.sleep(0.5)
        writer.stop()
        wait_for(lambda: received() == writer.text())
    finally:
        writer.stop()
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # never left behind, whatever failed
            proc.kill()
            raise
    assert proc.returncode == 0, err.decode()
    assert received() == writer.text() and len(writer.written) > 100
    return writer.text(), out


@pytest.mark.parametrize("kind", ["create", "copytruncate"])
def test_compress_follow_through_rotation(tmp_path, kind):
    log = tmp_path / "app.log"
    log.write_bytes(b"")
    out = tmp_path / "app.sqd"
    command = SEQD + ["compress", "--follow", "--flush-seconds", "0.2", "-o", str(out), str(log)]
    text, _ = run_through_rotation(kind, log, command, lambda: decoded(out) if out.exists() else b"")
    whole = subprocess.run(SEQD + ["decompress", "-c", str(out)], capture_output=True)
    assert whole.returncode == 0 and whole.stdout == text  # the end record too: every byte once, in order


@pytest.mark.parametrize("kind", ["create", "copytruncate"])
def test_publish_follow_through_rotation(tmp_path, kind):
    log = tmp_path / "app.log"
    log.write_bytes(b"")
    server = FakeServer()
    try:
        command = SEQD + ["publish", "--follow", "web", str(log), "--api", server.endpoint]
        _, out = run_through_rotation(kind, log, command, lambda: bytes(server.streams.get("web", b"")))
        assert b"published" in out
        positions = [r.position for r in server.ops("publish")]
        assert positions == sorted(set(positions))  # conditional appends, none retried or repeated
    finally:
        server.close()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_publish_follow_ends_on_a_stop_signal_having_sent_the_file_even_when_started_in_the_background(tmp_path, stop):
    # a job started with & by a script inherits SIGINT ignored, and systemd stops a service with SIGTERM: either
    # way the follow ends as on a terminal's Ctrl-C, once what the file holds is sent
    log = tmp_path / "app.log"
    log.write_bytes(b"".join(b"line %d\n" % i for i in range(300)))
    server = FakeServer()
    proc = subprocess.Popen(SEQD + ["publish", "--follow", "web", str(log), "--api", server.endpoint],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        wait_for(lambda: bytes(server.streams.get("web", b"")) == log.read_bytes() or proc.poll() is not None,
                 STARTUP_SECONDS)
        append(log, b"the last line\n")
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        server.close()
    assert proc.returncode == 0, err.decode()
    assert bytes(server.streams["web"]) == log.read_bytes() and b"published" in out


def test_a_followed_file_that_can_no_longer_be_read_ends_the_output_cleanly_then_is_reported(tmp_path):
    """A read error in the follower stops the follow as a signal does: what was read is coded, the output gets its
    end record and decodes, and the command then fails naming the error (it does not go on compressing nothing)."""
    import argparse
    from seqd.cli import _encode
    from seqd.core import container

    def growing():
        yield b"line one\n"
        yield b"line two\n"
        raise PermissionError(13, "Permission denied")

    class Collect:
        def __init__(self):
            self.parts = []

        def write(self, data):
            self.parts.append(data)

        def sync(self):
            pass

    class Quiet:
        def show(self, done_in, done_out):
            pass

    config = container.default_config()
    out = Collect()
    header = container.Header(config, container.DEFAULT_BLOCK_SIZE, container.build_info())
    out.write(header.to_bytes())
    args = argparse.Namespace(flush_seconds=0.2, block_size=container.DEFAULT_BLOCK_SIZE, chain_size=None)
    n_in, _, crc, failure = _encode.follow(growing(), threading.Event(), out, config, args, Quiet())
    out.write(container.end_record(n_in, crc))
    assert isinstance(failure, PermissionError) and n_in == 18
    assert container.decompress(b"".join(out.parts)) == b"line one\nline two\n"
