// The same small workload through node mysql2, carried as asked. Prints a checksum of every
// result. usage: node workload.js MODE HOST PORT USER PASSWORD DATABASE TABLE
//   MODE plain | tls | compress | tls_compress
'use strict';
const crypto = require('crypto');
const mysql = require('mysql2/promise');

async function main() {
  const [mode, host, port, user, password, database, table] = process.argv.slice(2);
  const opts = { host, port: Number(port), user, password, database };
  if (mode === 'tls' || mode === 'tls_compress') opts.ssl = { rejectUnauthorized: false };
  if (mode === 'compress' || mode === 'tls_compress') opts.compress = true;
  const conn = await mysql.createConnection(opts);
  const digest = crypto.createHash('sha256');
  await conn.query(`DROP TABLE IF EXISTS ${table}`);
  await conn.query(`CREATE TABLE ${table} (id INT PRIMARY KEY, name VARCHAR(64), payload TEXT)`);
  for (let i = 0; i < 20; i++) {
    await conn.query(`INSERT INTO ${table} VALUES (?, ?, ?)`, [i, `name-${i}`, 'p'.repeat(i * 40)]);
  }
  for (let i = 0; i < 10; i++) {
    // Prepared: COM_STMT_PREPARE once, COM_STMT_EXECUTE each time.
    const [rows] = await conn.execute(`SELECT id, name, payload FROM ${table} WHERE id = ?`, [i]);
    digest.update(JSON.stringify(rows));
  }
  const [agg] = await conn.query(`SELECT COUNT(*) AS n, SUM(LENGTH(payload)) AS len FROM ${table}`);
  digest.update(JSON.stringify(agg));
  const [big] = await conn.query(`SELECT REPEAT('z', 200000) AS z`);
  digest.update(JSON.stringify(big));
  await conn.query(`UPDATE ${table} SET name = CONCAT(name, '!') WHERE id < 5`);
  const cipher = conn.connection.stream.getCipher ? conn.connection.stream.getCipher().name : '';
  await conn.end();
  console.log(digest.digest('hex'), cipher);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
