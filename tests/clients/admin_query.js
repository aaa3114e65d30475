// Runs SQL statements against psprobe's admin interface with node's mysql2 driver and prints
// what it returned, as JSON, for tests/through_proxy/admin_clients.rs (same format as
// admin_query.py).
//
// usage: NODE_PATH=.../node_modules node admin_query.js HOST PORT USER PASSWORD < statements.json
'use strict';
const mysql = require('mysql2/promise');

async function main() {
  const [host, port, user, password] = process.argv.slice(2);
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const statements = JSON.parse(input);
  const conn = await mysql.createConnection({
    host, port: Number(port), user, password, database: 'psprobe', connectTimeout: 10000,
  });
  const out = [];
  for (const sql of statements) {
    try {
      const [rows, fields] = await conn.query({ sql, rowsAsArray: true });
      if (!fields) {
        out.push({ columns: [], rows: [] });
      } else {
        out.push({
          columns: fields.map((f) => ({ name: f.name, type: f.columnType })),
          rows,
        });
      }
    } catch (e) {
      out.push({ error: { code: e.errno, message: e.sqlMessage || String(e) } });
    }
  }
  await conn.end();
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
