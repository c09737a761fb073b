#!/bin/bash
# Builds the PostgreSQL data directory the e2e scenarios and benchmarks unpack in their
# guests: initdb and a pgbench database of scale 4 (400,000 accounts, about 50 MiB), made
# once on the host (initdb alone takes 30 s in an emulated guest), as a zstd tarball (6 MiB:
# the guests read it through 9p, at a few MiB/s).
#
#   tests/e2e/pg_template.sh OUT.tar.zst
set -euo pipefail
out=${1:?usage: pg_template.sh OUT.tar.zst}
bin=/usr/lib/postgresql/15/bin
[ -x $bin/initdb ] || { echo "pg_template: PostgreSQL 15 is not installed (make deps)" >&2; exit 1; }
id postgres >/dev/null 2>&1 || { echo "pg_template: no postgres user (make deps)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/pt-pgtemplate.XXXXXX)
trap 'runuser -u postgres -- $bin/pg_ctl -D "$tmp/data" stop -m immediate >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
chown postgres: "$tmp"
runuser -u postgres -- $bin/initdb -D "$tmp/data" -A trust -E UTF8 --locale=C >"$tmp/initdb.log" 2>&1 ||
	{ cat "$tmp/initdb.log" >&2; exit 1; }
# While it is built, a small WAL (the load leaves 64 MiB of it otherwise, which the guests
# would copy for nothing); the copies run with the defaults.
runuser -u postgres -- $bin/pg_ctl -D "$tmp/data" \
	-o "-k $tmp -p 5499 -c listen_addresses='' -c min_wal_size=32MB -c max_wal_size=64MB" \
	-l "$tmp/log" start -w >/dev/null
runuser -u postgres -- pgbench -h "$tmp" -p 5499 -i -s 4 -q postgres >/dev/null 2>&1 ||
	{ cat "$tmp/log" >&2; exit 1; }
# Settled as a long-running database is: its statistics current, so that autovacuum has
# nothing to do in the guests. pgbench's own VACUUM ANALYZE runs in the session that loaded
# the rows, whose insert counts reach the statistics after it: the template said 400,000
# rows changed since the last analyze, and each guest's autovacuum analyzed
# pgbench_accounts a minute after its start, reading all of it through the shared buffers
# (6,714 buffer hits, 52 MiB): an offloaded PostgreSQL read its whole table back from the
# tier in the middle of real_servers' light load, whenever that minute fell there.
# Each database (template1's catalogs were analyzed in the guests too), and a second VACUUM
# for the pg_statistic rows the ANALYZE replaced.
for db in postgres template1; do
	runuser -u postgres -- psql -h "$tmp" -p 5499 -X -q -c "VACUUM (ANALYZE)" -c VACUUM "$db" >/dev/null
done
for _ in 1 2 3; do
	runuser -u postgres -- psql -h "$tmp" -p 5499 -X -q -c "SELECT pg_switch_wal()" -c CHECKPOINT postgres >/dev/null
done
runuser -u postgres -- $bin/pg_ctl -D "$tmp/data" stop -m fast -w >/dev/null
# After a clean shutdown only the segment of the last checkpoint's redo point is needed;
# the others are old or recycled for later (PostgreSQL creates new ones as it needs them).
redo=$($bin/pg_controldata "$tmp/data" | sed -n "s/^Latest checkpoint's REDO WAL file: *//p")
[ -n "$redo" ] && find "$tmp/data/pg_wal" -maxdepth 1 -type f -name '0000*' ! -name "$redo" -delete
tar -C "$tmp" -cf - data | zstd -q -3 -o "$out.new" -f
mv "$out.new" "$out"
echo "  PGDATA $out"
