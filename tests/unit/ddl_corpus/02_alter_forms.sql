-- ALTER TABLE in the forms migrations tools (Rails, Django, Flyway, gh-ost, pt-osc) emit.

-- case: base table
-- expect: create_table items
-- shape: items(id int, name varchar(50), price decimal(8,2))
CREATE TABLE items (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(50) NOT NULL, price DECIMAL(8,2))

-- case: add columns at positions
-- expect: alter_table items
-- shape: items(sku char(8), id int, code int, name varchar(50), price decimal(8,2), qty int unsigned)
ALTER TABLE items ADD COLUMN code INT AFTER id, ADD qty INT UNSIGNED NOT NULL DEFAULT 0, ADD COLUMN sku CHAR(8) FIRST

-- case: add several columns in parentheses and an index
-- expect: alter_table items
-- shape: items(sku char(8), id int, code int, name varchar(50), price decimal(8,2), qty int unsigned, a int, b varchar(4))
ALTER TABLE items ADD (a INT, b VARCHAR(4)), ADD INDEX idx_code (code)

-- case: ADD COLUMN IF NOT EXISTS for an existing column
-- expect: alter_table items
-- shape: items(sku char(8), id int, code int, name varchar(50), price decimal(8,2), qty int unsigned, a int, b varchar(4))
ALTER TABLE items ADD COLUMN IF NOT EXISTS a BIGINT

-- case: drop columns, one of them indexed
-- expect: alter_table items
-- shape: items(sku char(8), id int, name varchar(50), price decimal(8,2), qty int unsigned, b varchar(4))
ALTER TABLE items DROP COLUMN code, DROP a

-- case: CHANGE renames and retypes, MODIFY retypes and moves
-- expect: alter_table items
-- shape: items(id int, sku char(8), title varchar(200), qty bigint, price decimal(12,3), b varchar(4))
ALTER TABLE items CHANGE name title VARCHAR(200) CHARACTER SET utf8mb4 NOT NULL, MODIFY price DECIMAL(12,3) NOT NULL AFTER title, MODIFY COLUMN qty BIGINT AFTER title, MODIFY sku CHAR(8) AFTER id

-- case: RENAME COLUMN (MariaDB 10.5+, MySQL 8)
-- expect: alter_table items
-- shape: items(id int, sku char(8), title varchar(200), quantity bigint, price decimal(12,3), b varchar(4))
ALTER TABLE items RENAME COLUMN qty TO quantity

-- case: swap two column names in one statement
-- expect: alter_table items
-- shape: items(id int, sku char(8), price varchar(200), quantity bigint, title decimal(12,3), b varchar(4))
ALTER TABLE items RENAME COLUMN title TO price, RENAME COLUMN price TO title

-- case: MODIFY changes the case of a column name
-- expect: alter_table items
-- shape: items(ID int, sku char(8), price varchar(200), quantity bigint, title decimal(12,3), b varchar(4))
ALTER TABLE items MODIFY ID INT NOT NULL AUTO_INCREMENT

-- case: options only: engine, comment, algorithm, lock, force
-- expect: alter_table items
ALTER TABLE items ENGINE=InnoDB, COMMENT='catalog', ALGORITHM=INPLACE, LOCK=NONE

-- case: ALTER COLUMN SET/DROP DEFAULT
-- expect: alter_table items
ALTER TABLE items ALTER COLUMN quantity SET DEFAULT 5, ALTER b DROP DEFAULT

-- case: key changes
-- expect: alter_table items
ALTER TABLE items ADD INDEX idx_q (quantity), ADD UNIQUE KEY uq_sku (sku), ADD FULLTEXT INDEX ft_price (price)

-- case: primary key change
-- expect: alter_table items
ALTER TABLE items DROP PRIMARY KEY, ADD PRIMARY KEY (ID, sku)

-- case: CREATE INDEX and DROP INDEX as statements
-- expect: create_index items
CREATE INDEX idx_b ON items (b(2))

-- case: drop index statement
-- expect: drop_index items
DROP INDEX idx_b ON items

-- case: CONVERT TO CHARACTER SET grows TEXT types
-- expect: create_table notes
-- shape: notes(t text, tt tinytext, v varchar(200), c char(10), b blob)
CREATE TABLE notes (t TEXT, tt TINYTEXT, v VARCHAR(200), c CHAR(10), b BLOB) CHARSET latin1

-- case: convert
-- expect: alter_table notes
-- shape: notes(t mediumtext, tt text, v varchar(200), c char(10), b blob)
ALTER TABLE notes CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci

-- case: default charset change affects only new columns
-- expect: alter_table notes
-- shape: notes(t mediumtext, tt text, v varchar(200), c char(10), b blob, n varchar(5))
ALTER TABLE notes DEFAULT CHARACTER SET latin1, ADD n VARCHAR(5)

-- case: ALTER TABLE ... RENAME TO moves the table
-- expect: alter_table notes, notes_v2
ALTER TABLE notes RENAME TO notes_v2

-- case: the ghost table of an online schema change (gh-ost)
-- expect: create_table items_gho
-- shape: items_gho(id int, sku char(8))
CREATE TABLE items_gho (id INT PRIMARY KEY, sku CHAR(8))

-- case: the cut-over itself
-- expect: rename_table items, items_gho, items_old
-- shape: items(id int, sku char(8))
RENAME TABLE items TO items_old, items_gho TO items

-- case: DROP TABLE, several names, one missing with IF EXISTS
-- expect: drop_table items_old, notes_v2
DROP TABLE IF EXISTS items_old, notes_v2, never_existed

-- case: TRUNCATE keeps the shape
-- expect: truncate_table items
TRUNCATE TABLE items

-- case: add system versioning later; new columns go before the implicit ones
-- expect: alter_table items
-- shape: items(id int, sku char(8), row_start timestamp(6), row_end timestamp(6))
ALTER TABLE items ADD SYSTEM VERSIONING

-- case: drop versioning again
-- expect: alter_table items
-- shape: items(id int, sku char(8))
ALTER TABLE items DROP SYSTEM VERSIONING

-- case: partition maintenance changes no columns
-- expect: create_table parts
CREATE TABLE parts (id INT NOT NULL, y INT NOT NULL, PRIMARY KEY (id, y)) PARTITION BY RANGE (y) (PARTITION p1 VALUES LESS THAN (2000), PARTITION p2 VALUES LESS THAN (3000))

-- case: add partition
-- expect: alter_table parts
ALTER TABLE parts ADD PARTITION (PARTITION p3 VALUES LESS THAN (4000))

-- case: reorganize and drop partition
-- expect: alter_table parts
ALTER TABLE parts REORGANIZE PARTITION p3 INTO (PARTITION p3a VALUES LESS THAN (3500), PARTITION p3b VALUES LESS THAN (4000))

-- case: remove partitioning
-- expect: alter_table parts
ALTER TABLE parts REMOVE PARTITIONING

-- case: DROP COLUMN IF EXISTS for a missing column
-- expect: alter_table parts
ALTER TABLE parts DROP COLUMN IF EXISTS nope

-- case: MySQL 8 invisible toggling (not MariaDB syntax)
-- expect: alter_table parts
-- server: skip
ALTER TABLE parts ALTER COLUMN y SET INVISIBLE

-- case: a column that does not exist cannot be dropped
-- expect: error
-- server: skip
ALTER TABLE parts DROP COLUMN nope
