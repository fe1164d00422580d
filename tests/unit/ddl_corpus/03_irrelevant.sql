-- Statements that reach the binlog as QUERY events but change no table shape. Peers have
-- stopped on each of these (Debezium on ALTER USER ... and FLUSH, Maxwell on CHECK).

-- case: a table so the statements below have something to refer to
-- expect: create_table base
CREATE TABLE base (id INT PRIMARY KEY, v INT)

-- case: account management
-- expect: ignored
-- server: skip
ALTER USER 'app'@'%' IDENTIFIED BY 'secret' RETAIN CURRENT PASSWORD

-- case: create user
-- expect: ignored
CREATE USER IF NOT EXISTS 'corpus_reader'@'localhost' IDENTIFIED BY 'pw'

-- case: grants
-- expect: ignored
GRANT SELECT, INSERT ON base TO 'corpus_reader'@'localhost'

-- case: revoke
-- expect: ignored
REVOKE INSERT ON base FROM 'corpus_reader'@'localhost'

-- case: drop user
-- expect: ignored
DROP USER 'corpus_reader'@'localhost'

-- case: flush
-- expect: ignored
FLUSH TABLES base

-- case: flush privileges
-- expect: ignored
FLUSH PRIVILEGES

-- case: maintenance
-- expect: ignored
OPTIMIZE TABLE base

-- case: analyze
-- expect: ignored
ANALYZE TABLE base PERSISTENT FOR ALL

-- case: views
-- expect: ignored
CREATE OR REPLACE ALGORITHM=MERGE DEFINER=CURRENT_USER SQL SECURITY INVOKER VIEW v_base AS SELECT id, v FROM base WHERE v > 0

-- case: drop view
-- expect: ignored
DROP VIEW IF EXISTS v_base

-- case: trigger with a compound body
-- expect: ignored
CREATE DEFINER=CURRENT_USER TRIGGER trg_base BEFORE INSERT ON base FOR EACH ROW BEGIN SET NEW.v = COALESCE(NEW.v, 0); END

-- case: drop trigger
-- expect: ignored
DROP TRIGGER IF EXISTS trg_base

-- case: stored procedure
-- expect: ignored
CREATE PROCEDURE p_touch(IN x INT) BEGIN UPDATE base SET v = x; ALTER TABLE base COMMENT 'never run at create time'; END

-- case: function
-- expect: ignored
CREATE FUNCTION f_double(x INT) RETURNS INT DETERMINISTIC RETURN x * 2

-- case: drop routines
-- expect: ignored
DROP PROCEDURE IF EXISTS p_touch

-- case: drop function
-- expect: ignored
DROP FUNCTION IF EXISTS f_double

-- case: events
-- expect: ignored
CREATE EVENT IF NOT EXISTS ev_cleanup ON SCHEDULE EVERY 1 DAY DO DELETE FROM base WHERE v < 0

-- case: drop event
-- expect: ignored
DROP EVENT IF EXISTS ev_cleanup

-- case: sequences change values, not shapes
-- expect: create_sequence s1
CREATE SEQUENCE s1

-- case: alter sequence
-- expect: ignored
ALTER SEQUENCE s1 RESTART WITH 10

-- case: drop sequence
-- expect: drop_sequence s1
DROP SEQUENCE s1

-- case: statement-based DML inside QUERY events
-- expect: ignored
INSERT INTO base VALUES (1, 2)

-- case: session settings
-- expect: ignored
SET @x = 1

-- case: a database of its own (tracked, no table changes)
-- expect: create_database
CREATE DATABASE IF NOT EXISTS corpus_extra CHARACTER SET latin1

-- case: alter database
-- expect: alter_database
ALTER DATABASE corpus_extra CHARACTER SET utf8mb4

-- case: drop database
-- expect: drop_database
DROP DATABASE corpus_extra

-- case: DDL on a table in another database that is not tracked
-- expect: ignored
-- server: skip
ALTER TABLE mysql.user_audit ADD COLUMN x INT
