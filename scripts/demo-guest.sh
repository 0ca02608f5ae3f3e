#!/usr/bin/env bash
# The guest half of `make demo` (scripts/demo.sh): runs as root inside the
# QEMU guest and leaves bfhq's output in $BFT_EXPORT.  With BFT_BACKEND=bpf
# it runs on the build machine itself instead, through the BPF backend (a
# session of its own, removed at the end), and loads no module.
set -euo pipefail
bin=build/user
work=/tmp/bftrace-demo
mkdir -p "$work"
if [[ ${BFT_BACKEND:-} == bpf ]]; then
	export BFT_BPF_PIN_DIR=/sys/fs/bpf/bftrace-demo
	trap 'rm -rf "$BFT_BPF_PIN_DIR"' EXIT
else
	insmod "build/kmod-$(uname -r)/bftrace.ko"
fi

"$bin/bfhq" --output "$BFT_EXPORT" --start --count 1 --timeout 200 \
	>"$work/bfhq.log" 2>&1 &
hq=$!
sleep 1
"$bin/bfcollector" --hq 127.0.0.1:7000 --until-exit >"$work/collector.log" 2>&1 &
collector=$!
sleep 2

cat >"$work/demo.sql" <<'SQL'
CREATE TABLE city(name TEXT PRIMARY KEY, country TEXT, population INTEGER);
INSERT INTO city VALUES ('Lyon', 'FR', 522250), ('Porto', 'PT', 231800),
  ('Leeds', 'GB', 812000), ('Graz', 'AT', 298479);
CREATE INDEX city_country ON city(country);
SELECT country, count(*), sum(population) FROM city GROUP BY country ORDER BY 3 DESC;
UPDATE city SET population = population + 1000 WHERE country = 'FR';
SELECT name FROM city WHERE population > 300000 ORDER BY name;
SQL
echo "demo: bfctl run -p 'libsqlite3*:sqlite3_*' -- sqlite3 :memory:"
"$bin/bfctl" run -p 'libsqlite3*:sqlite3_*' -- sqlite3 -init "$work/demo.sql" :memory: .quit

# The collector ends once the traced process is gone and HQ has it all.
for _ in $(seq 60); do kill -0 "$collector" 2>/dev/null || break; sleep 1; done
kill "$collector" 2>/dev/null || true
wait "$collector" || echo "demo: bfcollector exited with $?"
for _ in $(seq 30); do kill -0 "$hq" 2>/dev/null || break; sleep 1; done
kill "$hq" 2>/dev/null || true
wait "$hq" || echo "demo: bfhq exited with $?"
cp "$work"/*.log "$BFT_EXPORT/"
[[ ${BFT_BACKEND:-} == bpf ]] || rmmod bftrace
