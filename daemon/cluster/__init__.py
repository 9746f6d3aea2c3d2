"""seqd on a cluster: the parts that sit on NATS JetStream (``docs/cluster.md``).

A fleet of replicas shares one JetStream (three NATS nodes, each stream
replicated three times, fsynced before it acknowledges).  Everything a
replica must agree on with the others lives there:

* :mod:`.placement`: which partition a stream is in, which subject its log
  is, and which live replica a partition goes to (rendezvous hashing);
* :mod:`.records`: the log's record format, each record chained to the one
  before it, so that a replay knows it has every record;
* :mod:`.log`: a stream's log on JetStream: appends fenced by the subject's
  last sequence and deduplicated by a message id, replays that check the
  chain, compaction that keeps the record a snapshot stands on;
* :mod:`.ownership`: membership heartbeats and per-partition leases in the
  key-value store, whose revisions are fencing tokens;
* :mod:`.snapshots`: snapshots in the object store, behind a pointer that
  only moves forward;
* :mod:`.engine`: the settings, the connection and the JetStream resources.

Nothing here is imported by the single-machine daemon: ``nats-py`` is the
``cluster`` extra (``pip install 'seqd[cluster]'``), and only these modules
import it.
"""
