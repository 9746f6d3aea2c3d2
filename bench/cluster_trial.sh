#!/usr/bin/env bash
# An operator's trial of seqd on a cluster, from the README: 3 NATS nodes, 2 replicas, a kill -9, bring it back.
# Run from anywhere: python bench/cluster.py is the measured benchmark; this is the hand trial of docs/cluster.md.
set -u
cd "$(dirname "$0")/.."
S=.venv/bin/seqd
rm -rf /tmp/op && mkdir -p /tmp/op
.venv/bin/python tests/natsd.py /tmp/op/nats > /tmp/op/nats.url 2>/tmp/op/nats.err &
NATS=$!
for i in $(seq 50); do [ -s /tmp/op/nats.url ] && break; sleep 0.2; done
URL=$(head -1 /tmp/op/nats.url); echo "NATS: $URL"
$S serve --config deploy/cluster/seqd.toml --cluster "$URL" --member r1 --metrics-port 9811 > /tmp/op/r1.log 2>&1 & R1=$!
$S serve --config deploy/cluster/seqd.toml --cluster "$URL" --member r2 --metrics-port 9812 > /tmp/op/r2.log 2>&1 & R2=$!
t0=$(date +%s.%N)
until curl -sf 127.0.0.1:9811/readyz >/dev/null && curl -sf 127.0.0.1:9812/readyz >/dev/null; do sleep 0.5; done
echo "both replicas ready after $(echo "$(date +%s.%N) - $t0" | bc) s"
for f in dpkg.log Apache_2k.log OpenSSH_2k.log; do
  $S publish --api "$URL" "${f%.log}" ../shared/data/logs/$f
done
echo "--- seqd streams"; $S streams --api "$URL"
owned() { curl -s 127.0.0.1:$1/metrics | grep '^seqd_cluster_partitions_owned' | awk '{print $2}'; }
echo "owned: r1 $(owned 9811), r2 $(owned 9812)"
holder=$($S stats --api "$URL" dpkg --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["member"])')
echo "dpkg is on $holder"
if [ "$holder" = r2 ]; then  # kill the one that holds it; the other is then called r1 below
  T=$R1; R1=$R2; R2=$T; P1=9812; P2=9811; M1=r2; M2=r1
else P1=9811; P2=9812; M1=r1; M2=r2; fi
echo "--- kill -9 $M1"; kill -9 $R1; t0=$(date +%s.%N)
echo "publish after kill:"; echo "GET /after-the-kill 200" | $S publish --api "$URL" dpkg -
echo "that publish returned $(echo "$(date +%s.%N) - $t0" | bc) s after the kill"
echo "owned: $M2 $(owned $P2); moves $(curl -s 127.0.0.1:$P2/metrics | grep '^seqd_cluster_moves_total' | awk '{print $2}')"
echo "--- seqd streams"; $S streams --api "$URL"
echo "--- bring $M1 back"
$S serve --config deploy/cluster/seqd.toml --cluster "$URL" --member $M1 --metrics-port $P1 >> /tmp/op/$M1.log 2>&1 & R1=$!
t0=$(date +%s.%N)
until curl -sf 127.0.0.1:$P1/readyz >/dev/null; do sleep 0.2; done
echo "$M1 ready again after $(echo "$(date +%s.%N) - $t0" | bc) s; owned: $M1 $(owned $P1), $M2 $(owned $P2)"
echo "--- seqd streams"; $S streams --api "$URL"
$S stats --api "$URL" | head -20
kill -TERM $R1 $R2; wait $R1 $R2; echo "replicas exited: $?"
kill -TERM $NATS; wait $NATS
