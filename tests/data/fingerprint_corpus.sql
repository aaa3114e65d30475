# Fingerprint corpus, compared with pt-fingerprint by tests/fingerprint_vs_pt.rs.
# Records are separated by ";\n" (pt-fingerprint's file format). Lines starting with '#'
# at the start of a record are annotations. Intended differences from pt-fingerprint are
# listed in fingerprint_expected.txt.
#
# ===== sysbench 1.0.20 oltp_common.lua: statements with literal values (--db-ps-mode=disable)
SELECT c FROM sbtest1 WHERE id=5012;
SELECT c FROM sbtest2 WHERE id=1;
SELECT c FROM sbtest3 WHERE id=99999;
SELECT c FROM sbtest4 WHERE id=50;
SELECT c FROM sbtest10 WHERE id=4242;
SELECT c FROM sbtest1 WHERE id BETWEEN 4990 AND 5089;
SELECT c FROM sbtest3 WHERE id BETWEEN 1 AND 100;
SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 1 AND 100;
SELECT SUM(k) FROM sbtest2 WHERE id BETWEEN 731 AND 830;
SELECT c FROM sbtest1 WHERE id BETWEEN 200 AND 299 ORDER BY c;
SELECT c FROM sbtest4 WHERE id BETWEEN 9 AND 108 ORDER BY c;
SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 7 AND 106 ORDER BY c;
SELECT DISTINCT c FROM sbtest3 WHERE id BETWEEN 5555 AND 5654 ORDER BY c;
UPDATE sbtest1 SET k=k+1 WHERE id=5012;
UPDATE sbtest4 SET k=k+1 WHERE id=17;
UPDATE sbtest1 SET c='68487932199-96439406143-93774651418-41631865787-96406072701-20604855487-25459966574-28203206787-41238978918-19503783441' WHERE id=5012;
UPDATE sbtest2 SET c='13241531885-45658403807-79170748828-69419634012-13605813761-77983377181-01582588137-21344716829-87370944992-02457486289' WHERE id=998;
DELETE FROM sbtest1 WHERE id=5012;
DELETE FROM sbtest3 WHERE id=4;
INSERT INTO sbtest1 (id, k, c, pad) VALUES (5012, 4993, '68487932199-96439406143-93774651418-41631865787-96406072701-20604855487-25459966574-28203206787-41238978918-19503783441', '22195207048-70116052123-74140395089-76317954521-98694025897');
INSERT INTO sbtest2 (id, k, c, pad) VALUES (998, 5020, '13241531885-45658403807-79170748828-69419634012-13605813761-77983377181-01582588137-21344716829-87370944992-02457486289', '74140395089-76317954521-98694025897-22195207048-70116052123');
BEGIN;
COMMIT;
# ===== the same through prepared statements (COM_STMT_PREPARE text)
SELECT c FROM sbtest1 WHERE id=?;
SELECT c FROM sbtest2 WHERE id=?;
SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?;
SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?;
SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c;
SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c;
UPDATE sbtest1 SET k=k+1 WHERE id=?;
UPDATE sbtest1 SET c=? WHERE id=?;
DELETE FROM sbtest1 WHERE id=?;
INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?);
INSERT INTO sbtest3 (id, k, c, pad) VALUES (?, ?, ?, ?);
# ===== sysbench prepare / prewarm / cleanup and the other bundled scripts
CREATE TABLE sbtest1(
  id INTEGER NOT NULL AUTO_INCREMENT,
  k INTEGER DEFAULT '0' NOT NULL,
  c CHAR(120) DEFAULT '' NOT NULL,
  pad CHAR(60) DEFAULT '' NOT NULL,
  PRIMARY KEY (id)
) /*! ENGINE = innodb */ ;
INSERT INTO sbtest1(k, c, pad) VALUES(4993, '68487932199-96439406143-93774651418-41631865787-96406072701-20604855487-25459966574-28203206787-41238978918-19503783441', '22195207048-70116052123-74140395089-76317954521-98694025897'),(5020, '13241531885-45658403807-79170748828-69419634012-13605813761-77983377181-01582588137-21344716829-87370944992-02457486289', '74140395089-76317954521-98694025897-22195207048-70116052123'),(17, '51477429584-82637359862-17062591361-48296766498-84516713283-94066891779-09581390427-11062931224-86473290431-48206357127', '98694025897-22195207048-70116052123-74140395089-76317954521');
INSERT INTO sbtest2(id, k, c, pad) VALUES(1, 4993, '68487932199-96439406143', '22195207048-70116052123'),(2, 5020, '13241531885-45658403807', '74140395089-76317954521');
CREATE INDEX k_1 ON sbtest1(k);
ANALYZE TABLE sbtest1;
SELECT AVG(id) FROM (SELECT * FROM sbtest1 FORCE KEY (PRIMARY) LIMIT 10000) t;
SELECT COUNT(*) FROM (SELECT * FROM sbtest1 WHERE k LIKE '%0%' LIMIT 10000) t;
SET tmp_table_size=2*1024*1024*1024;
DROP TABLE IF EXISTS sbtest1;
SELECT id, k, c, pad
          FROM sbtest1
          WHERE k IN (4993, 12, 7711, 3, 9021, 55, 478, 6112, 2, 9999);
SELECT count(k)
          FROM sbtest1
          WHERE k BETWEEN 4993 AND 5002 OR k BETWEEN 12 AND 21 OR k BETWEEN 7711 AND 7720;
INSERT INTO sbtest1 VALUES(1, 4993, '68487932199-96439406143', '22195207048-70116052123'),(2, 5020, '13241531885-45658403807', '74140395089-76317954521');
# ===== what clients send when they connect
select @@version_comment limit 1;
SET NAMES utf8mb4;
SET NAMES utf8mb4 COLLATE utf8mb4_general_ci;
SET autocommit=1;
SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION';
SHOW WARNINGS;
SELECT DATABASE();
SHOW VARIABLES LIKE 'lower_case_%';
SELECT @@max_allowed_packet, @@session.transaction_isolation;
SET character_set_results = NULL;
SHOW FULL PROCESSLIST;
SHOW GLOBAL STATUS LIKE 'Threads_connected';
# ===== percona-toolkit t/lib/QueryRewriter.t fingerprint() cases
UPDATE groups_search SET  charter = '   -------3\'\' XXXXXXXXX.\n    \n    -----------------------------------------------------', show_in_list = 'Y' WHERE group_id='aaaaaaaa';
SELECT /*!40001 SQL_NO_CACHE */ * FROM `film`;
CALL foo(1, 2, 3);
administrator command: Init DB;
REPLACE /*foo.bar:3/3*/ INTO checksum.checksum (db, tbl, chunk, boundaries, this_cnt, this_crc) SELECT 'foo', 'bar', 2 AS chunk_num, '`id` >= 2166633', COUNT(*) AS cnt, LOWER(CONV(BIT_XOR(CAST(CRC32(CONCAT_WS('#', `id`, `created_by`)) AS UNSIGNED)), 10, 16)) AS crc FROM `foo`.`bar` USE INDEX (`PRIMARY`) WHERE (`id` >= 2166633);
use `foo`;
select 
--bar
 foo;
select foo--bar
foo;
select foo -- bar
;
select null, 5.001, 5001. from foo;
select 'hello', '
hello
', "hello", '\'' from foo;
select 'hello'
;
select '\\' from foo;
select   foo;
SELECT * from foo where a = 5;
select 0e0, +6e-30, -6.00 from foo where a = 5.5 or b=0.5 or c=.5;
select 0x0, x'123', 0b1010, b'10101' from foo;
 select  * from
foo where a = 5;
select * from foo where a in (5) and b in (5, 8,9 ,9 , 10);
select foo_1 from foo_2_3;
select 123foo from 123foo;
select 123_foo from 123_foo;
insert into abtemp.coxed select foo.bar from foo;
insert into foo(a, b, c) values(2, 4, 5);
insert into foo(a, b, c) values(2, 4, 5) , (2,4,5);
insert into foo(a, b, c) value(2, 4, 5);
select * from foo limit 5;
select * from foo limit 5, 10;
select * from foo limit 5 offset 10;
select 1 union select 2 union select 4;
select 1 union all select 2 union all select 4;
select * from (select 1 union all select 2 union all select 4) as x join (select 2 union select 2 union select 3) as y;
replace into `film_actor` values(1,1,'2006-02-15 04:05:03'),(1,10,'2006-02-15 04:05:03'),(1,20,'2006-02-15 04:05:03'),(1,30,'2006-02-15 04:05:03');
insert ignore into `film_actor` values(1,1,'2006-02-15 04:05:03'),(1,10,'2006-02-15 04:05:03'),(1,20,'2006-02-15 04:05:03');
insert into foo (a,b,c,d,e,f,g,h) values(1,2,3,4,5,6,7,8),(1,2,3,4,5,6,7,8),(1,2,3,4,5,6,7,8);
insert into the_universe values('galaxy',1,'star'),('galaxy',2,'star'),('galaxy',3,'star');
select c from t where i=1 order by c asc;
select * from t where i=1 order by a, b ASC, d DESC, e asc;
select * from t where i=1      order            by 
      a,  b          ASC, d    DESC,    
                             
                             e asc;
LOAD DATA INFILE '/tmp/foo.txt' INTO db.tbl;
SELECT * FROM db.fbc5e685a5d3d45aa1d0347fdb7c4d35_temp where id=1;
SELECT * FROM db.temp_fbc5e685a5d3d45aa1d0347fdb7c4d35 where id=1;
SELECT * FROM prices.rt_5min where id=1;
/* -- S++ SU ABORTABLE -- spd_user: rspadim */SELECT SQL_SMALL_RESULT SQL_CACHE DISTINCT centro_atividade FROM est_dia WHERE unidade_id=1001 AND item_id=67 AND item_id_red=573;
SELECT * FROM tbl WHERE id=1 AND flag=true AND trueflag=FALSE;
# ===== more percona-toolkit style cases
CALL db.proc_name('a', 2, @out);
call Proc(1);
USE sakila;
USE db1;
SELECT * FROM t WHERE id IN (1,2,3);
SELECT * FROM t WHERE id IN (1);
SELECT * FROM t WHERE name IN ('a', 'b', 'c') AND id NOT IN (4, 5);
SELECT * FROM t WHERE id IN ( 1 , 2 , 3 );
SELECT * FROM t WHERE id IN(1,2);
SELECT * FROM t WHERE a IN (NULL, 1);
SELECT * FROM t WHERE a IN (SELECT b FROM u WHERE c = 5);
INSERT INTO t VALUES (1, 'a');
INSERT INTO t (a, b) VALUES (1, 'a'), (2, 'b'), (3, 'c');
INSERT INTO t(a,b) VALUES(1,'a'),(2,'b');
INSERT IGNORE INTO t (a) VALUES (1), (2);
REPLACE INTO t (a, b) VALUES (1, 2);
REPLACE INTO t VALUES (1, 2), (3, 4);
insert into t values (now(), 1), (now(), 2);
SELECT a FROM t WHERE b IS NULL;
SELECT a FROM t WHERE b IS NOT NULL;
UPDATE t SET a = NULL WHERE id = 3;
SELECT * FROM t WHERE a = 'it''s';
SELECT * FROM t WHERE a = "double";
SELECT * FROM t WHERE a = 'O\'Reilly';
SELECT * FROM t WHERE a = "say \"hi\"";
SELECT * FROM t WHERE a LIKE 'abc%' ESCAPE '!';
SELECT * FROM t ORDER BY a ASC;
SELECT * FROM t ORDER BY a DESC, b ASC LIMIT 10;
SELECT * FROM t ORDER BY a LIMIT 10 OFFSET 20;
SELECT * FROM t LIMIT 10,20;
SELECT * FROM t GROUP BY a ORDER BY a ASC;
SELECT a FROM t1 UNION SELECT a FROM t1;
SELECT a FROM t WHERE id = 1 UNION ALL SELECT a FROM t WHERE id = 2 UNION ALL SELECT a FROM t WHERE id = 3;
SELECT a FROM t WHERE id = 1 UNION SELECT b FROM u WHERE id = 2;
select * from t where a = 1 /* trailing comment */;
select /* inline */ * from t;
select * from t -- dash comment
where a = 1;
select * from t # hash comment
where a = 1;
SELECT * FROM t WHERE a = 1.5;
SELECT * FROM t WHERE a = -1;
SELECT * FROM t WHERE a = 1e10;
SELECT * FROM t WHERE a = .5;
SELECT * FROM t WHERE a > 10 AND b < 20 AND c >= 30 AND d <= 40 AND e <> 50 AND f != 60;
SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 10;
SELECT FOUND_ROWS();
SELECT COUNT(*) FROM t WHERE created > '2024-01-01 00:00:00';
SELECT * FROM t1 JOIN t2 ON t1.id = t2.t1_id WHERE t2.x = 5;
SELECT * FROM orders o LEFT JOIN customers c ON o.customer_id = c.id WHERE o.total > 100.50;
SELECT * FROM `db`.`table` WHERE `col` = 5;
SELECT `Name` FROM `Users` WHERE `Age` > 21;
DELETE FROM t WHERE created < '2020-01-01' LIMIT 1000;
UPDATE t SET a = 'x', b = 2 WHERE id IN (1, 2, 3);
UPDATE t SET counter = counter + 1 WHERE id = 5;
INSERT INTO t (a) SELECT a FROM u WHERE b = 3;
INSERT INTO t (a, b) VALUES (1, 2) ON DUPLICATE KEY UPDATE b = VALUES(b);
CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(255) NOT NULL DEFAULT '');
ALTER TABLE t ADD COLUMN c INT DEFAULT 0;
DROP TABLE t;
TRUNCATE TABLE t;
SHOW TABLES;
SHOW CREATE TABLE t;
SHOW ENGINE INNODB STATUS;
EXPLAIN SELECT * FROM t WHERE id = 5;
START TRANSACTION;
ROLLBACK;
SAVEPOINT sp;
SET @a = 5;
SELECT @a;
SELECT NOW(), CURDATE(), UNIX_TIMESTAMP();
SELECT IF(a > 5, 'big', 'small') FROM t;
SELECT CASE WHEN a = 1 THEN 'one' WHEN a = 2 THEN 'two' ELSE 'many' END FROM t;
SELECT * FROM t WHERE a BETWEEN 10 AND 20;
SELECT * FROM t WHERE DATE(created) = '2024-05-01';
SELECT a, COUNT(*) AS n FROM t GROUP BY a HAVING n > 3;
SELECT * FROM t FOR UPDATE;
SELECT * FROM t LOCK IN SHARE MODE;
LOCK TABLES t READ;
UNLOCK TABLES;
FLUSH TABLES;
KILL 42;
XA START 'xid1';
SELECT * FROM information_schema.tables WHERE table_schema = 'db';
SELECT * FROM t WHERE a = ? AND b IN (?, ?, ?);
SELECT * FROM t WHERE a = ? LIMIT ?;
SELECT * FROM t WHERE a = ? LIMIT ?, ?;
INSERT INTO t (a, b) VALUES (?, ?), (?, ?);
# ===== identifiers with digits (psprobe keeps them; pt folds them)
SELECT * FROM t1 WHERE id = 1;
SELECT col1, col2 FROM table2;
SELECT * FROM db1.users;
SELECT * FROM user_2024 WHERE x = 1;
SELECT md5(a), sha1(b), log10(c) FROM t;
SELECT * FROM t WHERE a = 1 COLLATE utf8mb4_bin;
SELECT * FROM tab1 JOIN idx1 USING (id);
SELECT * FROM `sbtest1` WHERE `id` = 3;
SELECT @v1;
SELECT a FROM t1 UNION SELECT a FROM t2;
SELECT x FROM log_2024_01 WHERE y = 'z';
# ===== qualified names with digits (pt also swallows the column after the dot)
SELECT t1.x, t1.y FROM t1;
SELECT t1.id FROM t1 JOIN t2 ON t1.id = t2.id;
# ===== hex, bit, introducers, national strings
SELECT 0x1F;
SELECT * FROM t WHERE a = 0xDEADBEEF;
SELECT X'1F';
SELECT B'101';
SELECT _utf8mb4'abc';
SELECT _latin1'abc';
SELECT _utf8mb4 'abc' COLLATE utf8mb4_unicode_ci;
SELECT _binary 0xFF;
SELECT N'abc';
SELECT n'abc';
SELECT * FROM t WHERE a = X'DEAD' OR b = x'beef';
# ===== minus and arithmetic
select a-b from t;
select a - b from t;
select a - 5 from t;
select a-5 from t;
SELECT k+1 FROM t;
SELECT * FROM t WHERE a = b - 1;
SELECT 1+1;
SELECT 5--3;
SELECT 2 * 3, 10 / 2, 7 % 3;
SELECT a * 2 FROM t;
SELECT * FROM t WHERE a = - 5;
SELECT * FROM t WHERE a = -?;
SELECT DATE_SUB(NOW(), INTERVAL -1 DAY);
SELECT * FROM t WHERE a = 1 - 2;
# ===== strings pt mishandles
SELECT 'a''b';
SELECT 'a\\' FROM t WHERE b = 'c';
SELECT 'a"b', "c";
SELECT 'a' 'b';
SELECT * FROM t WHERE a = '' AND b = "";
SELECT * FROM t WHERE a = 'x' -- it's a comment
AND b = 1;
# ===== comments pt mishandles
SELECT/*c*/1;
select a/**/from t where b = 1;
select 1 /**/, 2 /* c */;
SELECT 1 -- no space before comment
;
select a--b
from t;
select a --b
from t;
/* leading */ SELECT 1;
-- leading dash comment
SELECT 1;
  SELECT 1;
select * from t where a = 1 # hash at end
;
# ===== optimizer hints and executable comments
SELECT /*+ MAX_EXECUTION_TIME(1000) */ * FROM t;
SELECT /*+ BKA(t1) NO_BKA(t2) */ * FROM t1 INNER JOIN t2 WHERE t1.a = t2.a;
UPDATE /*+ NO_RANGE_OPTIMIZATION(t) */ t SET a = 1 WHERE b = 2;
SELECT /*+ SET_VAR(sort_buffer_size = 16M) */ name FROM people ORDER BY name;
SELECT /*! STRAIGHT_JOIN */ a FROM t1, t2;
SELECT /*!40001 SQL_NO_CACHE */ a FROM t;
CREATE TABLE x (a INT) /*!50100 PARTITION BY HASH (a) */;
SELECT /*M!100100 1, */ 2;
# ===== call / use variants
call foo (1);
call foo;
call p1(1);
CALL `Proc Name`(1);
USE  spaced;
use db;;
# ===== unions pt collapses wrongly or not at all
select a from t union select a from t where x = 1;
select a from t where x = 1 union select a from t where x = 2 order by a;
SELECT a FROM t WHERE x = 1 UNION SELECT a FROM t WHERE x = 2 LIMIT 5;
# ===== limit / order by variants
select * from t limit 1 , 2;
select * from (select a from t limit 1, 2) x limit 3, 4;
SELECT * FROM t ORDER BY ascii(a) ASC;
SELECT * FROM t ORDER BY a, asc_col;
# ===== insert variants
insert into t values (1),(2) on duplicate key update a=values(a);
INSERT LOW_PRIORITY INTO t VALUES (NOW()), (NOW());
INSERT INTO t VALUES ('a),(b', 1), ('c', 2);
INSERT INTO t VALUES ();
# ===== NULL / booleans
SELECT * FROM t WHERE a = TRUE;
SELECT * FROM t WHERE a IS NULL AND b = true;
# ===== trailing whitespace and semicolons
SELECT 1 ;
SELECT 1;;
# ===== non-ASCII
SELECT * FROM t WHERE name = 'Ärger';
SELECT Größe FROM Maße WHERE id = 1;
SELECT * FROM t WHERE a = 'x' AND b = '日本語';
# ===== variables
SET @@session.sql_mode = 'ANSI';
SET GLOBAL max_connections = 500;
SELECT @@global.read_only;
# ===== more real-world shapes
SELECT doc->'$.name', doc->>'$.age' FROM people WHERE id = 3;
SELECT * FROM t WHERE created > NOW() - INTERVAL 1 DAY;
SELECT @rownum := @rownum + 1 AS rn, a FROM t, (SELECT @rownum := 0) r;
SELECT 1.5E-3, 2E10;
/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER trg BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1 */;
select 1; select 'two';
SELECT a,
       b
  FROM t
 WHERE c = 1;
INSERT INTO `film` VALUES (1,'ACADEMY DINOSAUR','A Epic Drama',2006,1,NULL,6,'0.99',86,'20.99','PG','Deleted Scenes','2006-02-15 05:03:42'),(2,'ACE GOLDFINGER','A Astounding Epistle',2006,1,NULL,3,'4.99',48,'12.99','G','Trailers','2006-02-15 05:03:42');
SELECT 1 FROM DUAL;
SELECT a, b FROM t GROUP BY 1, 2 ORDER BY 1 DESC;
SELECT * FROM t WHERE a = 0x00 AND b = 0xff;
SELECT * FROM t WHERE a <=> NULL;
SELECT * FROM t WHERE a = 'x' OR b = "y" OR c = 'z';
SELECT SQL_NO_CACHE * FROM t WHERE id = 10;
SELECT * FROM t WHERE id = 1 LIMIT 1;
UPDATE t SET a = a - 1 WHERE id = 2;
SELECT * FROM t WHERE a IN (1, 2) OR b IN ('x');
SELECT * FROM t1 WHERE a IN (1, 2) UNION ALL SELECT * FROM t1 WHERE a IN (3, 4, 5);
