#!/usr/bin/env bash
# heal.sh CLUSTER SECONDS [KLAB]: on a running Docker cluster of three
# masters, cut the etcd leader's node off for SECONDS, heal the network and
# print how long after the heal the three members agree again: one leader,
# one term, applied indexes within 5 of each other. Uses KLAB_HOME as set.
set -euo pipefail
cluster=${1:?cluster name}
secs=${2:?seconds of partition}
klab=${3:-bin/klab}
"$klab" chaos partition leader --name "$cluster" >/dev/null
sleep "$secs"
"$klab" chaos heal --name "$cluster" >/dev/null
start=$(date +%s%N)
for _ in $(seq 1 600); do
	rows=$("$klab" status --name "$cluster" 2>/dev/null | grep '^master-' || true)
	terms=$(awk '{print $4}' <<<"$rows" | sort -u | wc -l)
	leaders=$(grep -c ' leader ' <<<"$rows" || true)
	followers=$(grep -c ' follower ' <<<"$rows" || true)
	spread=$(awk 'NR==1{lo=$6; hi=$6} {if ($6<lo) lo=$6; if ($6>hi) hi=$6} END{print hi-lo}' <<<"$rows")
	if [ "$terms" = 1 ] && [ "$leaders" = 1 ] && [ "$followers" = 2 ] && [ "$spread" -le 5 ]; then
		echo "partitioned ${secs}s: the members agree $(( ($(date +%s%N) - start) / 1000000 )) ms after the heal"
		exit 0
	fi
	sleep 0.5
done
echo "partitioned ${secs}s: the members do not agree 5 minutes after the heal" >&2
echo "$rows" >&2
exit 1
