"""Where a stream lives in a cluster: its partition, its log's subject, and the replica that owns it.

* **Partition.**  A stream named ``name`` is in partition
  ``int.from_bytes(blake2b(name.encode("utf-8"), digest_size=8).digest(), "big") % partitions``.
  The number of partitions is fixed when the cluster is created
  (``engine.ClusterSettings.partitions``): changing it would move every
  stream.
* **Owner.**  Partition p goes to the live member m with the highest score
  ``blake2b(f"{m}/{p}".encode(), digest_size=8)`` read as a big-endian
  integer (rendezvous hashing; ties, which need a 64-bit collision, go to the
  smaller id).  When a member joins or leaves, only the partitions whose
  highest score was, or becomes, its own move.
* **Subject.**  A stream's log is the subject ``seqd.log.<p>.<token>``,
  the token its name with each ``.`` written ``~`` (a stream name is
  ``[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}``, so the token is one subject
  token, and the mapping is one to one).  A partition's streams are then the
  subjects under ``seqd.log.<p>.>``.
"""

from __future__ import annotations

import hashlib
import re

from ...clients.cluster import partition_of  # the clients route by it too: one definition

LOG_SUBJECTS = "seqd.log"
MEMBER_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a member's id is a key of the key-value store


def score(member: str, partition: int) -> int:
    """Member ``member``'s rendezvous score for ``partition``."""
    return int.from_bytes(hashlib.blake2b(f"{member}/{partition}".encode(), digest_size=8).digest(), "big")


def owner_of(partition: int, members) -> str | None:
    """The member that partition ``partition`` goes to among the live ``members`` (None if there are none)."""
    best, best_score = None, -1
    for m in sorted(members):
        s = score(m, partition)
        if s > best_score:
            best, best_score = m, s
    return best


def assignment(partitions: int, members) -> dict[int, str | None]:
    """Every partition's owner among ``members``."""
    members = list(members)
    return {p: owner_of(p, members) for p in range(partitions)}


def subject_of(name: str, partitions: int) -> str:
    """The subject of the stream ``name``'s log."""
    return f"{LOG_SUBJECTS}.{partition_of(name, partitions)}.{name.replace('.', '~')}"


def partition_subjects(partition: int) -> str:
    """The subjects (a wildcard) of every stream's log in ``partition``."""
    return f"{LOG_SUBJECTS}.{partition}.>"


def name_of(subject: str) -> str:
    """The stream whose log is ``subject`` (the inverse of :func:`subject_of`)."""
    head, dot, rest = subject.partition(LOG_SUBJECTS + ".")
    partition, _, token = rest.partition(".")
    if head or not dot or not partition.isdigit() or not token:
        raise ValueError(f"{subject!r} is not a stream's log subject")
    return token.replace("~", ".")


def check_member_id(member: str) -> str:
    if not isinstance(member, str) or not MEMBER_ID.fullmatch(member):
        raise ValueError(f"a member id is 1-64 letters, digits, '_' or '-', got {member!r}")
    return member
