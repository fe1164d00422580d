-- DDL as real MariaDB/MySQL schemas write it. Each case is one statement (one QUERY event).
-- "expect:" is what the schema tracker must do: `ignored`, `error`, or `<kind> <table>, ...`.
-- "shape:" (optional) is the table's columns afterwards, as TableDef.describe() prints them.
-- "server: skip" marks statements the MariaDB test server cannot run (MySQL-only syntax).

-- case: plain table with keys, defaults and comments
-- expect: create_table customers
-- shape: customers(id bigint unsigned, email varchar(191), name varchar(100), created_at datetime, status tinyint, balance decimal(12,2))
CREATE TABLE `customers` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT COMMENT 'surrogate key',
  `email` varchar(191) NOT NULL,
  `name` varchar(100) DEFAULT '' COMMENT 'display name, may be ''empty''',
  `created_at` datetime NOT NULL DEFAULT current_timestamp(),
  `status` tinyint(4) NOT NULL DEFAULT 1,
  `balance` decimal(12,2) NOT NULL DEFAULT 0.00,
  PRIMARY KEY (`id`),
  UNIQUE KEY `uniq_email` (`email`),
  KEY `idx_created` (`created_at`)
) ENGINE=InnoDB AUTO_INCREMENT=1000 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='customer master'

-- case: DEFAULT (expression), CHECK constraints, ON UPDATE
-- expect: create_table orders
-- shape: orders(id int, customer_id bigint unsigned, placed date, updated timestamp(3), qty int, price decimal(10,4), total decimal(14,4) stored, ref char(36))
CREATE TABLE orders (
  id INT NOT NULL AUTO_INCREMENT,
  customer_id BIGINT UNSIGNED NOT NULL,
  placed DATE DEFAULT (curdate()),
  updated TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  qty INT NOT NULL DEFAULT 1 CHECK (qty > 0),
  price DECIMAL(10,4) NOT NULL,
  total DECIMAL(14,4) AS (qty * price) PERSISTENT,
  ref CHAR(36) NOT NULL DEFAULT uuid(),
  CONSTRAINT pk_orders PRIMARY KEY (id),
  CONSTRAINT chk_price CHECK (price >= 0),
  CONSTRAINT fk_cust FOREIGN KEY (customer_id) REFERENCES customers (id) ON DELETE CASCADE ON UPDATE RESTRICT,
  INDEX (customer_id, placed)
)

-- case: generated columns, virtual and stored, with JSON
-- expect: create_table events
-- shape: events(id int unsigned, payload json, kind varchar(32) virtual, day date stored, tags longtext)
CREATE TABLE events (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  payload JSON NOT NULL,
  kind VARCHAR(32) GENERATED ALWAYS AS (json_unquote(json_extract(payload, '$.kind'))) VIRTUAL,
  day DATE GENERATED ALWAYS AS (cast(json_value(payload, '$.ts') as date)) STORED,
  tags LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin CHECK (json_valid(tags)),
  KEY k_kind (kind)
)

-- case: charsets and collations per column, national and binary types
-- expect: create_table texts
-- shape: texts(a varchar(10), b char(4), c text, d varchar(20), e char(2), f varbinary(16), g binary(8), h tinytext, i blob, j mediumtext, k longblob, l varchar(5), m binary(3))
CREATE TABLE texts (
  a VARCHAR(10) CHARACTER SET latin1,
  b CHAR(4) CHARSET ascii COLLATE ascii_bin,
  c TEXT COLLATE utf8mb4_bin,
  d NATIONAL VARCHAR(20),
  e NCHAR(2),
  f VARBINARY(16),
  g BINARY(8),
  h TINYTEXT,
  i BLOB,
  j MEDIUMTEXT CHARACTER SET utf8mb3,
  k LONGBLOB,
  l VARCHAR(5) BINARY,
  m CHAR(3) CHARACTER SET binary
) DEFAULT CHARACTER SET = latin2 COLLATE latin2_general_ci

-- case: every numeric and temporal type
-- expect: create_table numbers
-- shape: numbers(t tinyint, s smallint unsigned, m mediumint, i int unsigned zerofill, b bigint, bo tinyint, d decimal(10,0), n decimal(5,2), f float, f2 float(7,3), dbl double, r double, fp double, bt bit(12), y year, dt date, tm time(6), dtm datetime(2), ts timestamp)
CREATE TABLE numbers (
  t TINYINT, s SMALLINT UNSIGNED, m MEDIUMINT, i INT(8) ZEROFILL, b BIGINT SIGNED, bo BOOLEAN,
  d DECIMAL, n NUMERIC(5,2), f FLOAT, f2 FLOAT(7,3), dbl DOUBLE PRECISION, r REAL, fp FLOAT(30),
  bt BIT(12), y YEAR(4), dt DATE, tm TIME(6), dtm DATETIME(2), ts TIMESTAMP NULL
)

-- case: ENUM and SET with quotes, escapes and trailing spaces
-- expect: create_table labels
-- shape: labels(e enum('small','it''s','back\slash','x'), s set('a','b','c'))
CREATE TABLE labels (
  e ENUM('small', 'it''s', 'back\\slash', 'x  ') NOT NULL DEFAULT 'small',
  s SET('a','b','c') DEFAULT 'a,b'
)

-- case: invisible columns (MariaDB 10.3+)
-- expect: create_table secret
-- shape: secret(id int, token varchar(64) invisible, note text)
CREATE TABLE secret (id INT PRIMARY KEY, token VARCHAR(64) INVISIBLE DEFAULT 'x', note TEXT)

-- case: MariaDB data types UUID, INET6, INET4, geometry
-- expect: create_table net
-- shape: net(id uuid, v6 inet6, v4 inet4, loc point, area polygon, g geometry)
CREATE TABLE net (id UUID NOT NULL PRIMARY KEY, v6 INET6, v4 INET4, loc POINT NOT NULL, area POLYGON, g GEOMETRY, SPATIAL INDEX (loc))

-- case: partitioned table (mysqldump writes partitioning inside a versioned comment)
-- expect: create_table metrics
-- shape: metrics(id bigint, at datetime, v double)
CREATE TABLE `metrics` (
  `id` bigint NOT NULL,
  `at` datetime NOT NULL,
  `v` double DEFAULT NULL,
  PRIMARY KEY (`id`,`at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
/*!50100 PARTITION BY RANGE (to_days(`at`))
(PARTITION p2023 VALUES LESS THAN (739252) ENGINE = InnoDB,
 PARTITION pmax VALUES LESS THAN MAXVALUE ENGINE = InnoDB) */

-- case: hash partitioning and subpartitions without comments
-- expect: create_table logs
-- shape: logs(id int, region int, msg varchar(255))
CREATE TABLE logs (id INT NOT NULL, region INT NOT NULL, msg VARCHAR(255))
PARTITION BY LIST (region) SUBPARTITION BY HASH (id) SUBPARTITIONS 2 (
  PARTITION pe VALUES IN (1, 2), PARTITION pw VALUES IN (3, 4))

-- case: system versioning with implicit row_start/row_end
-- expect: create_table prices
-- shape: prices(sku varchar(20), price decimal(8,2), row_start timestamp(6), row_end timestamp(6))
CREATE TABLE prices (sku VARCHAR(20) NOT NULL PRIMARY KEY, price DECIMAL(8,2)) WITH SYSTEM VERSIONING

-- case: system versioning with explicit period columns
-- expect: create_table contracts
-- shape: contracts(id int, body text, valid_from timestamp(6) invisible, valid_to timestamp(6) invisible)
CREATE TABLE contracts (
  id INT,
  body TEXT,
  valid_from TIMESTAMP(6) GENERATED ALWAYS AS ROW START INVISIBLE,
  valid_to TIMESTAMP(6) GENERATED ALWAYS AS ROW END INVISIBLE,
  PERIOD FOR SYSTEM_TIME (valid_from, valid_to)
) WITH SYSTEM VERSIONING

-- case: table options with odd spellings
-- expect: create_table opts
-- shape: opts(a int)
CREATE TABLE IF NOT EXISTS opts (a INT) ENGINE = InnoDB ROW_FORMAT=DYNAMIC STATS_PERSISTENT=1 PACK_KEYS=0 CHECKSUM=1 COMMENT 'x' PAGE_COMPRESSED=0

-- case: CREATE TABLE IF NOT EXISTS for an existing table changes nothing
-- expect: ignored
CREATE TABLE IF NOT EXISTS opts (a INT, b INT)

-- case: CREATE TABLE ... LIKE copies the shape
-- expect: create_table customers_archive
-- shape: customers_archive(id bigint unsigned, email varchar(191), name varchar(100), created_at datetime, status tinyint, balance decimal(12,2))
CREATE TABLE customers_archive LIKE customers

-- case: CREATE OR REPLACE replaces
-- expect: create_table opts
-- shape: opts(x varchar(3), y int)
CREATE OR REPLACE TABLE opts (x VARCHAR(3), y INT)

-- case: a sequence is a table whose rows are in the binlog
-- expect: create_sequence seq_orders
-- shape: seq_orders(next_not_cached_value bigint, minimum_value bigint, maximum_value bigint, start_value bigint, increment bigint, cache_size bigint unsigned, cycle_option tinyint unsigned, cycle_count bigint)
CREATE SEQUENCE seq_orders START WITH 100 INCREMENT BY 10 CACHE 50

-- case: temporary tables never reach a row-based binlog
-- expect: ignored
-- server: skip
CREATE TEMPORARY TABLE tmp_calc (a INT)

-- case: TEXT(n) picks the smallest type that holds n characters
-- expect: create_table sized
-- shape: sized(a tinytext, b text, c mediumtext, d blob)
CREATE TABLE sized (a TEXT(50), b TEXT(1000), c TEXT(70000) CHARACTER SET latin1 COLLATE latin1_bin, d BLOB(300)) CHARSET utf8mb4

-- case: JSON by table-level CHECK, named and unnamed
-- expect: create_table jdocs
CREATE TABLE jdocs (a LONGTEXT, b LONGTEXT, c TEXT, CONSTRAINT a_is_json CHECK (json_valid(a)), CHECK (json_valid(`b`)))

-- case: dropping a JSON check makes the column text again
-- expect: alter_table jdocs
ALTER TABLE jdocs DROP CONSTRAINT a_is_json, ADD CONSTRAINT c_json CHECK (json_valid(c))

-- case: an unnamed CHECK added later
-- expect: alter_table jdocs
ALTER TABLE jdocs ADD CHECK (json_valid(a))

-- case: unnamed CHECKs are numbered among all table CHECKs
-- expect: create_table jdocs2
CREATE TABLE jdocs2 (a INT, b LONGTEXT, CHECK (a > 0), CHECK (json_valid(b)))
