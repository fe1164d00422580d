-- Dump files, sql_mode variants, odd identifiers and MySQL 8 syntax.
-- "sql_mode:" sets the session sql_mode for one case (the server logs it with the statement).

-- case: mysqldump prologue settings are not DDL
-- expect: ignored
/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */

-- case: mysqldump drops before it creates
-- expect: ignored
DROP TABLE IF EXISTS `dumped`

-- case: mysqldump CREATE TABLE
-- expect: create_table dumped
-- shape: dumped(id int unsigned, slug varchar(64), body mediumtext, flags set('a','b'), created timestamp)
CREATE TABLE `dumped` (
  `id` int(10) unsigned NOT NULL AUTO_INCREMENT,
  `slug` varchar(64) COLLATE utf8mb4_unicode_ci NOT NULL,
  `body` mediumtext COLLATE utf8mb4_unicode_ci,
  `flags` set('a','b') COLLATE utf8mb4_unicode_ci NOT NULL DEFAULT '',
  `created` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (`id`),
  UNIQUE KEY `slug` (`slug`) USING BTREE,
  KEY `created` (`created`) COMMENT 'for ranges'
) ENGINE=InnoDB AUTO_INCREMENT=42 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC

-- case: mysqldump disables keys in a versioned comment
-- expect: alter_table dumped
/*!40000 ALTER TABLE `dumped` DISABLE KEYS */

-- case: and enables them again
-- expect: alter_table dumped
/*!40000 ALTER TABLE `dumped` ENABLE KEYS */

-- case: ANSI_QUOTES makes double quotes identifiers
-- expect: create_table ansi
-- sql_mode: ANSI_QUOTES
-- shape: ansi(a int, b varchar(3))
CREATE TABLE "ansi" ("a" INT, "b" VARCHAR(3) DEFAULT 'x')

-- case: ANSI_QUOTES in ALTER
-- expect: alter_table ansi
-- sql_mode: ANSI_QUOTES
-- shape: ansi(a int, b varchar(3), "q" int)
ALTER TABLE "ansi" ADD COLUMN """q""" INT

-- case: REAL_AS_FLOAT makes REAL a FLOAT
-- expect: create_table realf
-- sql_mode: REAL_AS_FLOAT
-- shape: realf(r float, d double)
CREATE TABLE realf (r REAL, d DOUBLE)

-- case: NO_BACKSLASH_ESCAPES keeps backslashes in labels
-- expect: create_table nbe
-- sql_mode: NO_BACKSLASH_ESCAPES
-- shape: nbe(e enum('a\\n','b'))
CREATE TABLE nbe (e ENUM('a\\n', 'b'))

-- case: comments of every kind inside a statement
-- expect: create_table cmt
-- shape: cmt(a int, b int)
CREATE TABLE cmt ( -- line comment
  a INT /* inline; with a semicolon */,
  # hash comment
  b INT)

-- case: escaped and non-ASCII identifiers
-- expect: create_table wé`ird
-- shape: wé`ird(col umn int, ключ varchar(5))
CREATE TABLE `wé``ird` (`col umn` INT, `ключ` VARCHAR(5))

-- case: identifiers that start with digits
-- expect: create_table 1st
-- shape: 1st(2nd int, 3e int)
CREATE TABLE 1st (2nd INT, `3e` INT)

-- case: utf8 means utf8mb3
-- expect: create_table u8
-- shape: u8(a varchar(10), b text)
CREATE TABLE u8 (a VARCHAR(10), b TEXT CHARACTER SET utf8) CHARSET=utf8

-- case: qualified names and ALTER ONLINE / IGNORE / WAIT
-- expect: alter_table u8
-- shape: u8(a varchar(10), b text, c int)
ALTER ONLINE IGNORE TABLE corpus.u8 WAIT 5 ADD COLUMN c INT, ALGORITHM=INPLACE, LOCK=NONE

-- case: a rename across names that are qualified
-- expect: rename_table u8, u8_renamed
RENAME TABLE corpus.u8 TO corpus.u8_renamed

-- case: MySQL 8 functional index, DEFAULT (expr), SRID and 0900 collations
-- expect: create_table m8
-- server: skip
-- shape: m8(id binary(16), name varchar(20), geo point)
CREATE TABLE m8 (
  id BINARY(16) NOT NULL DEFAULT (uuid_to_bin(uuid())),
  name VARCHAR(20),
  geo POINT NOT NULL SRID 4326,
  PRIMARY KEY (id),
  INDEX idx_lower ((lower(name))) INVISIBLE,
  SPATIAL INDEX (geo)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci

-- case: MySQL 8 instant ADD COLUMN and index visibility
-- expect: alter_table m8
-- server: skip
-- shape: m8(id binary(16), name varchar(20), geo point, c int)
ALTER TABLE m8 ADD COLUMN c INT, ALGORITHM=INSTANT, ALTER INDEX idx_lower VISIBLE

-- case: MySQL 8 logs CREATE TABLE ... SELECT as an atomic CREATE TABLE ... START TRANSACTION
-- expect: create_table m8_ctas
-- server: skip
-- shape: m8_ctas(a bigint)
CREATE TABLE `m8_ctas` (`a` bigint NOT NULL) START TRANSACTION

-- case: statement-based CREATE TABLE ... SELECT cannot be modeled without the query's types
-- expect: error
-- server: skip
CREATE TABLE sel_copy SELECT * FROM dumped

-- case: unknown syntax on a tracked table is an error, not a guess
-- expect: error
-- server: skip
ALTER TABLE dumped FROBNICATE COLUMN slug

-- case: a column attribute binlake does not know
-- expect: error
-- server: skip
CREATE TABLE mystery (a INT SPARKLY)
