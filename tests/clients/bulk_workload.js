// A workload through MariaDB's own Node connector (`mariadb`) that mixes the three kinds of
// statement psprobe counts: conn.batch() (COM_STMT_BULK_EXECUTE against MariaDB), conn.execute()
// (COM_STMT_EXECUTE) and conn.query() (COM_QUERY). It prints `ready` once its table exists, then
// runs rounds until its standard input closes (or MAX_ROUNDS, or MAX_MS), and prints what it sent
// as one JSON line: {rounds, batches, batch_rows, executes, queries, rows}.
// usage: node bulk_workload.js HOST PORT USER PASSWORD DATABASE TABLE
'use strict';
const mariadb = require('mariadb');

// Bounds of the loop whatever the caller does (it closes stdin long before either).
const MAX_ROUNDS = 20000;
const MAX_MS = 60000;
// Rows per batch() call: one COM_STMT_BULK_EXECUTE each.
const BATCH_ROWS = 10;
// Pause between rounds: a steady trickle, not a load test.
const PAUSE_MS = 2;

async function main() {
  const [host, port, user, password, database, table] = process.argv.slice(2);
  let stop = false;
  process.stdin.on('end', () => {
    stop = true;
  });
  process.stdin.resume();

  const conn = await mariadb.createConnection({ host, port: Number(port), user, password, database });
  let queries = 0;
  const query = async (sql) => {
    queries += 1;
    return conn.query(sql);
  };
  await query(`DROP TABLE IF EXISTS ${table}`);
  await query(`CREATE TABLE ${table} (id INT AUTO_INCREMENT PRIMARY KEY, k INT, name VARCHAR(64))`);
  process.stdout.write('ready\n');

  const started = Date.now();
  let rounds = 0;
  let batches = 0;
  let executes = 0;
  while (!stop && rounds < MAX_ROUNDS && Date.now() - started < MAX_MS) {
    const rows = [];
    for (let i = 0; i < BATCH_ROWS; i++) rows.push([rounds, `row-${rounds}-${i}`]);
    await conn.batch(`INSERT INTO ${table} (k, name) VALUES (?, ?)`, rows);
    batches += 1;
    await conn.execute(`SELECT name FROM ${table} WHERE k = ? LIMIT 1`, [rounds]);
    executes += 1;
    await query(`SELECT ${rounds} + 1 AS next`);
    rounds += 1;
    await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
  }
  const [{ n }] = await query(`SELECT COUNT(*) AS n FROM ${table}`);
  await conn.end();
  process.stdout.write(
    JSON.stringify({
      rounds,
      batches,
      batch_rows: BATCH_ROWS,
      executes,
      queries,
      rows: Number(n),
    }) + '\n',
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
