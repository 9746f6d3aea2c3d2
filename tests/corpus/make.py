"""Write the frozen decoding corpus of today's byte model: ``python tests/corpus/make.py [LEVEL ...]`` (the default
byte model's format, 4 since seqd 0.22; with levels, e.g. 1 6 9, a file of each).

Each format version of ``.sqd`` gets one directory, ``tests/corpus/format-<N>/``,
written by the seqd of that format and never rewritten: every later seqd must
decode every file in every such directory to the bytes named in its
``MANIFEST.json`` (``tests/test_corpus.py``; the policy is in ``docs/format.md``).
This script writes only the current format's directory, and in it only the
cases it does not hold yet (a new model level, or a new default preset): a
file once written is never touched again.  The first preset of a format
names its files ``<case>.sqd``; a later preset of the same format (the
default byte model's newest, ``core/faces.py``) names its own
``<case>-<preset>.sqd``, so each preset a format carries has frozen files of
its own.  A frozen byte model gets no new files.

The inputs are made here, from a fixed seed, so that nothing outside the
repository is copied into it: a synthetic log, bytes of every value, an
empty file, a multi-block file, and one file per model level when levels exist.
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# the preset each format's files without a suffix have
FIRST_PRESET = {1: "bytes-1", 2: "bytes-2", 3: "bytes-11", 4: "bitwise-1"}


def synthetic_log(lines: int, seed: int) -> bytes:
    """Log-like lines: an incrementing timestamp, a few hosts and services, numbers, repeated templates."""
    rng = random.Random(seed)
    hosts = ["web-1", "web-2", "db-a", "cache"]
    services = ["sshd", "nginx", "cron", "kernel", "postgres"]
    templates = [
        "Accepted publickey for {user} from 10.0.{a}.{b} port {port} ssh2",
        "GET /api/v1/items/{n} HTTP/1.1 200 {size} {ms}ms",
        "({user}) CMD (run-parts /etc/cron.hourly)",
        "TCP: request_sock_TCP: Possible SYN flooding on port {port}. Sending cookies.",
        "checkpoint complete: wrote {n} buffers ({pct}.{b}%); sync files={a}",
        "connection reset by peer while reading response header from upstream, client: 10.0.{a}.{b}",
    ]
    t = 1_700_000_000
    out = []
    for _ in range(lines):
        t += rng.choice((0, 0, 1, 1, 2, 7))
        fields = dict(user=rng.choice(["root", "deploy", "alice", "bob"]), a=rng.randrange(256), b=rng.randrange(256),
                      port=rng.randrange(1024, 65536), n=rng.randrange(10**6), size=rng.randrange(100, 99999),
                      ms=rng.randrange(1, 900), pct=rng.randrange(100))
        line = (f"{t} {rng.choice(hosts)} {rng.choice(services)}[{rng.randrange(100, 32768)}]: "
                + rng.choice(templates).format(**fields))
        out.append(line)
    return ("\n".join(out) + "\n").encode()


def every_byte(seed: int) -> bytes:
    """Each of the 256 byte values, then a shuffled repetition: the alphabet fills to its cap."""
    rng = random.Random(seed)
    values = list(range(256))
    rng.shuffle(values)
    tail = [rng.choice(values[:16]) if rng.random() < 0.8 else rng.randrange(256) for _ in range(3000)]
    return bytes(values + tail)


def cases(levels: list[str], version: int) -> list[tuple[str, bytes, list[str]]]:
    log = synthetic_log(400, seed=1)
    out = [
        ("empty", b"", []),
        ("log", log, []),
        ("bytes", every_byte(seed=2), []),
        ("blocks", synthetic_log(300, seed=3), ["--block-size", "4K"]),
    ]
    if version >= 3:  # chains of blocks, each a learner of its own (--chain-size): format 3 on
        out.append(("chains", synthetic_log(300, seed=3), ["--block-size", "4K", "--chain-size", "8K"]))
    out += [(f"level{level}", log[:12_000], [f"-{level}"]) for level in levels]
    return out


def main() -> int:
    from seqd.core.faces import DEFAULT

    version, preset = DEFAULT.writes, DEFAULT.versions.preset
    model: list[str] = []  # seqd compress's default model
    levels = sys.argv[1:]  # the levels to cover, e.g. 1 6 9
    target = HERE / f"format-{version}"
    target.mkdir(parents=True, exist_ok=True)
    index = target / "MANIFEST.json"
    manifest = json.loads(index.read_text()) if index.exists() else {"format": version, "files": {}}
    writer = subprocess.run([sys.executable, "-m", "seqd", "--version"], capture_output=True, text=True,
                            check=True).stdout.strip()
    added = []
    for name, data, options in cases(levels, version):
        options = model + options
        stem = name if FIRST_PRESET.get(version, preset) == preset else f"{name}-{preset}"
        path = target / f"{stem}.sqd"
        if path.name in manifest["files"] or path.exists():
            continue
        sqd = subprocess.run([sys.executable, "-m", "seqd", "compress", "-c", "-q", *options, "-"],
                             input=data, capture_output=True, check=True).stdout
        path.write_bytes(sqd)
        manifest["files"][path.name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                                        "options": options, "writer": writer, "preset": preset}
        added.append(path.name)
    index.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{target}: added {', '.join(added) or 'nothing (every case is there; files are never rewritten)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
