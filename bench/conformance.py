"""``seqd compress`` beside ``gzip`` on the same cases: exit codes and the files left behind.

    python bench/conformance.py            # prints the table
    python bench/conformance.py --write    # and records it in docs/benchmarks.md

Each case runs once with gzip and once with seqd, each in a fresh temporary
directory built the same way (``.gz`` for gzip, ``.sqd`` for seqd), as a
shell command.  The table gives each tool's exit code and the directory's
entries afterwards (``@`` a symbolic link, ``|`` a FIFO, ``%`` a device,
``/`` a directory, a mode where it matters), and a verdict: **same** (exit
code and entries alike, up to the suffix), **safer** (seqd's outcome differs
on purpose; the row says why) or **differs** (with what seqd does instead,
where that is by design).  Cases that cannot be built
here (no root for a tmpfs or a device node, no ``script`` for a terminal)
say so in their row instead of a result.  ``tests/test_conformance.py``
holds seqd to each row's outcome.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import command_line, report  # noqa: E402

TEXT = b"".join(f"2026-11-22 08:{i % 60:02d}:{i % 59:02d} INFO worker-{i % 5} job {i}\n".encode() for i in range(300))
NOISE = os.urandom(48 << 10)  # incompressible: fills a 64 KiB file system
SEQD = f"{shlex.quote(sys.executable)} -m seqd compress"


@dataclass
class Case:
    name: str
    command: str  # {Z}: the tool (gzip, or seqd compress), {S}: its suffix (gz, sqd)
    setup: Callable[[Path, str], str | None] = lambda d, s: _files(d)  # returns why the case cannot be built
    seqd_command: str | None = None  # when gzip has no such option: seqd's own command line
    why: str = ""  # when seqd's outcome differs on purpose: why (it is safer, or what it does instead)
    safer: bool = True  # whether that difference makes seqd safer, or only different
    teardown: Callable[[Path], None] = lambda d: None


def _files(d: Path, *names: str) -> None:
    for name in names or ("a.log",):
        (d / name).write_bytes(TEXT)


def _two(d: Path, s: str) -> None:
    _files(d, "a.log", "b.log")


def _three(d: Path, s: str) -> None:
    _files(d, "a.log", "b.log", "c.log")


def _compressed(d: Path, s: str) -> None:
    _files(d)
    _tool_run(s, "-k a.log", d)


def _damaged(d: Path, s: str) -> None:
    _compressed(d, s)
    packed = d / f"a.log.{s}"
    data = bytearray(packed.read_bytes())
    data[len(data) // 2] ^= 0x40
    packed.write_bytes(bytes(data))


def _existing(d: Path, s: str) -> None:
    _files(d)
    (d / f"a.log.{s}").write_bytes(b"precious")


def _link_in(d: Path, s: str) -> None:
    _files(d)
    (d / "l.log").symlink_to("a.log")


def _link_out(d: Path, s: str) -> None:
    _files(d, "a.log", "other")
    (d / f"a.log.{s}").symlink_to("other")


def _fifo_out(d: Path, s: str) -> str | None:
    _files(d)
    os.mkfifo(d / f"a.log.{s}")
    subprocess.Popen(["sh", "-c", f"cat a.log.{s} > /dev/null"], cwd=d)  # a reader, so that writers may open it
    return None


def _device_out(d: Path, s: str) -> str | None:
    if os.geteuid() != 0:
        return "making a device node needs root"
    _files(d)
    os.mknod(d / f"a.log.{s}", stat.S_IFCHR | 0o666, os.makedev(1, 3))  # the null device, as /dev/null is
    return None


def _fifo_in(d: Path, s: str) -> None:
    os.mkfifo(d / "f")


def _suffix(d: Path, s: str) -> None:
    _files(d, f"x.{s}")


def _dir(d: Path, s: str) -> None:
    (d / "sub").mkdir()


def _mode(d: Path, s: str) -> None:
    _files(d)
    os.chmod(d / "a.log", 0o600)
    os.utime(d / "a.log", ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))


def _unreadable(d: Path, s: str) -> str | None:
    _files(d)
    os.chmod(d / "a.log", 0)
    return None


def _immutable(d: Path, s: str) -> str | None:
    _files(d, "a.log")
    if subprocess.run(["chattr", "+i", str(d)], capture_output=True).returncode:
        return "chattr +i is not available here (it needs root and a file system that supports it)"
    return None


def _undo_immutable(d: Path) -> None:
    subprocess.run(["chattr", "-i", str(d)], capture_output=True)


def _tmpfs(options: str) -> Callable[[Path, str], str | None]:
    def setup(d: Path, s: str) -> str | None:
        (d / "small").mkdir()
        if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(d / "small")],
                                               capture_output=True).returncode:
            return "mounting a tmpfs needs root"
        (d / "small" / "a.log").write_bytes(NOISE)
        return None
    return setup


def _unmount(d: Path) -> None:
    subprocess.run(["umount", str(d / "small")], capture_output=True)


def _terminal(d: Path, s: str) -> str | None:
    if not shutil.which("script"):
        return "no script(1) to give the command a terminal"
    _compressed(d, s)
    return None


def _dash(d: Path, s: str) -> None:
    _files(d, "-x")


CASES = [
    Case("three files", "{Z} a.log b.log c.log", _three),
    Case("two files, -f (a second name is an input)", "{Z} -f a.log b.log", _two),
    Case("-k keeps the input", "{Z} -k a.log"),
    Case("-1, the fastest level", "{Z} -1 a.log"),
    Case("-9k, the most compression (flags together)", "{Z} -9k a.log"),
    Case("-c, two files, decoded back", "{Z} -c a.log b.log > both && {Z} -dc both > again && cat a.log b.log | "
         "cmp -s - again && rm again", _two),
    Case("-o FILE", "{Z} -c a.log > out", seqd_command="{Z} -o out a.log",
         why="gzip has no -o (the shell opens out and gzip -c keeps the input); seqd -o removes the input as "
             "any compression to a file does", safer=False),
    Case("standard input to standard output", "{Z} < a.log > out"),
    Case("existing output", "{Z} a.log", _existing),
    Case("existing output, -f", "{Z} -f a.log", _existing),
    Case("mode and mtime carried over", "{Z} a.log && stat -c '%a %Y' a.log.{S} > meta", _mode),
    Case("-t on a good file", "{Z} -t a.log.{S}", _compressed),
    Case("-t on a damaged file", "{Z} -t a.log.{S}", _damaged),
    Case("-l", "{Z} -l a.log.{S} > /dev/null", _compressed),
    Case("-d with an unknown suffix", "{Z} -d a.log"),
    Case("suffix already present", "{Z} x.{S}", _suffix,
         why="gzip 1.12 says 'already has .gz suffix -- unchanged' and exits 0; seqd exits 2, so a script "
             "learns that a file was not compressed"),
    Case("directory", "{Z} sub", _dir,
         why="gzip ignores a directory with a warning (2), because with -r it would recurse; seqd has no -r, "
             "so naming a directory is an error (1)"),
    Case("missing file", "{Z} nope.log"),
    Case("a file named -x, after --", "{Z} -- -x", _dash),
    Case("symbolic link as input", "{Z} l.log", _link_in),
    Case("symbolic link as output", "{Z} a.log", _link_out),
    Case("FIFO as input", "{Z} f", _fifo_in),
    Case("FIFO as output, -f", "{Z} -f -k a.log", _fifo_out,
         why="gzip -f unlinks the FIFO and creates a regular file in its place; seqd writes into the FIFO and "
             "keeps it, as zstd does"),
    Case("device node as output, -f", "{Z} -f -k a.log", _device_out,
         why="gzip -f replaces the device node with a regular file (as root, /dev/null itself); seqd writes "
             "into the device and keeps it, as zstd does"),
    Case("/dev/null as output", "{Z} -dkfc a.log.{S} > /dev/null", _compressed,
         seqd_command="{Z} -dkf a.log.{S} -o /dev/null",
         why="gzip has no -o; seqd -o /dev/null writes into the device, keeps it, and keeps the input"),
    Case("unreadable input (mode 000)", "{Z} a.log", _unreadable),
    Case("read-only directory (chattr +i)", "{Z} a.log", _immutable, teardown=_undo_immutable),
    Case("disk full while writing (64 KiB tmpfs)", "{Z} small/a.log", _tmpfs("size=64k"), teardown=_unmount),
    Case("disk full at open (tmpfs without a free inode)", "{Z} small/a.log", _tmpfs("size=1m,nr_inodes=2"),
         teardown=_unmount),
    Case("compress to a terminal", "script -qec '{Z} -c a.log' /dev/null > /dev/null", _terminal,
         why="gzip writes compressed data to the terminal when it is given a file name (it refuses only for "
             "standard input); seqd refuses in both cases unless -f"),
    Case("decompress from a terminal", "script -qec '{Z} -d' /dev/null > /dev/null", _terminal),
]


def _tool(suffix: str) -> str:
    return "gzip" if suffix == "gz" else SEQD


def _tool_run(suffix: str, args: str, d: Path) -> None:
    subprocess.run(f"{_tool(suffix)} {args}", shell=True, cwd=d, check=True, capture_output=True)


def entries(d: Path, suffix: str) -> list[str]:
    """The directory's entries, sorted, with a mark for their type (and a regular file's mode if not 644)."""
    out = []
    for p in sorted(d.rglob("*")):
        st = p.lstat()
        rel = str(p.relative_to(d)).replace(f".{suffix}", ".Z")
        if stat.S_ISLNK(st.st_mode):
            rel += "@"
        elif stat.S_ISFIFO(st.st_mode):
            rel += "|"
        elif stat.S_ISCHR(st.st_mode):
            rel += "%"
        elif stat.S_ISDIR(st.st_mode):
            rel += "/"
        elif stat.S_IMODE(st.st_mode) != 0o644:
            rel += f" ({stat.S_IMODE(st.st_mode):o})"
        if p.name == "meta":
            rel += f" = {p.read_text().strip()}"
        out.append(rel)
    return out


def run_case(case: Case, suffix: str) -> tuple[int | None, list[str], str]:
    """(exit code, entries after, what went to standard error), or (None, [], why it could not be built)."""
    with tempfile.TemporaryDirectory(prefix=f"conformance-{suffix}-") as tmp:
        d = Path(tmp)
        try:
            why = case.setup(d, suffix)
            if why:
                return None, [], why
            template = case.seqd_command if (suffix == "sqd" and case.seqd_command) else case.command
            cmd = template.format(Z=_tool(suffix), S=suffix)
            proc = subprocess.run(cmd, shell=True, cwd=d, capture_output=True, text=True, timeout=300,
                                  stdin=subprocess.DEVNULL)
            listing = entries(d, suffix)
        finally:
            case.teardown(d)
        return proc.returncode, listing, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""


def table() -> str:
    rows = ["| case | command | gzip: exit, files | seqd: exit, files | verdict |", "|---|---|---|---|---|"]
    root = os.geteuid() == 0
    for case in CASES:
        gz, sq = run_case(case, "gz"), run_case(case, "sqd")
        cell = lambda r: f"{r[0]}: {', '.join(r[1]) or '(empty)'}".replace("|", "\\|")  # noqa: E731
        command = case.command if not case.seqd_command else f"{case.command}; seqd: {case.seqd_command}"
        command = command.replace("|", "\\|")
        if gz[0] is None or sq[0] is None:
            rows.append(f"| {case.name} | `{command}` | not run | not run | not tested: {gz[2] or sq[2]} |")
            continue
        if (gz[0], gz[1]) == (sq[0], sq[1]):
            verdict = "same"
        elif case.why:
            verdict = f"{'safer' if case.safer else 'differs'}: {case.why}"
        else:
            verdict = "differs"
        if case.setup is _unreadable and root:
            verdict += " (run as root, who reads a mode-000 file: permission is not enforced here; the " \
                       "read-only directory row tests a refusal)"
        rows.append(f"| {case.name} | `{command}` | {cell(gz)} | {cell(sq)} | {verdict} |".replace("\n", " "))
        print(f"{case.name}: gzip {gz[0]} {gz[1]} / seqd {sq[0]} {sq[1]}  {sq[2]}", file=sys.stderr, flush=True)
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the table in docs/benchmarks.md")
    args = parser.parse_args()
    gzip = subprocess.run(["gzip", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    text = (f"`{command_line('conformance.py')}`, against {gzip} (as "
            f"{'root' if os.geteuid() == 0 else 'an ordinary user'}). Files after the command: `.Z` is the "
            "tool's suffix (`.gz`, `.sqd`), `@` a symbolic link, `|` a FIFO, `%` a device node, `/` a "
            "directory, a mode in brackets where it is not 644.\n\n" + table())
    report("conformance", text, args.write)


if __name__ == "__main__":
    main()
