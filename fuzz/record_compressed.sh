#!/usr/bin/env bash
# Records one `mariadb --compress` session (zlib protocol compression) against a throwaway
# mariadbd through the TCP tee `psprobe-bench record-traffic` (crates/psprobe-bench), into
# fuzz/recordings/ (a seed source for fuzz/make_seeds.py). Needs mariadbd, mariadb-install-db
# and the mariadb client.
set -euo pipefail
W="$(cd "$(dirname "$0")/.." && pwd)"
(cd "$W" && cargo build --release --locked -p psprobe-bench >&2)
BENCH="$W/target/release/psprobe-bench"
T=$(mktemp -d /tmp/fuzzrec.XXXX)
mariadb-install-db --no-defaults --datadir=$T/data --auth-root-authentication-method=normal --skip-test-db --user=root >$T/install.log 2>&1
PORT=$((20000 + RANDOM % 20000)); TEE=$((PORT + 1))
nice -n 10 mariadbd --no-defaults --datadir=$T/data --port=$PORT --bind-address=127.0.0.1 --socket=$T/s.sock --pid-file=$T/pid --log-error=$T/err.log --skip-log-bin --innodb-buffer-pool-size=16M --performance-schema=OFF --user=root >$T/console.log 2>&1 &
DB=$!
for i in $(seq 100); do mariadb-admin --no-defaults --protocol=TCP -h127.0.0.1 -P$PORT -uroot ping >/dev/null 2>&1 && break; sleep 0.2; done
mkdir -p $W/fuzz/recordings
"$BENCH" record-traffic --listen-port $TEE --upstream-port $PORT --out $W/fuzz/recordings/mariadb_compress.bin > $T/tee.log 2>&1 &
TEEPID=$!
for i in $(seq 50); do grep -q recording $T/tee.log && break; sleep 0.1; done
mariadb --no-defaults --protocol=TCP -h127.0.0.1 -P$TEE -uroot --compress -e "CREATE DATABASE d; USE d; CREATE TABLE t (id INT PRIMARY KEY, c VARCHAR(200)); INSERT INTO t VALUES (1, REPEAT('abc', 60)), (2, 'x'); SELECT * FROM t; SELECT REPEAT('z', 5000); SHOW STATUS LIKE 'Com_select'; DO SLEEP(0); SELECT 1; PREPARE s FROM 'SELECT c FROM t WHERE id=?'; SET @a=1; EXECUTE s USING @a; SELECT @@version_comment;" >/dev/null
sleep 0.5
kill -TERM $TEEPID; wait $TEEPID || true
kill -TERM $DB; wait $DB || true
rm -rf $T
ls -la $W/fuzz/recordings
