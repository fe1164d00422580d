"""The initial snapshot, consistent with the binlog, read in parallel primary-key chunks and
without long locks (Flink CDC / DBLog watermarks). Spark-free: `binlake.spark.snapshot`
wraps it as a Spark data source (`spark.read.format("binlake-snapshot")`).

Why chunks and watermarks: a single consistent read of a large table is one long transaction
on one core. Splitting the key space into chunks lets executors read in parallel; each chunk
is brought to a binlog position of its own (its HIGH watermark), and the rows carry that
position as their `seq`, so the apply step can merge them with the binlog stream exactly.

Per chunk (one Spark partition, on an executor, in the Spark source):

1. LOW: `START TRANSACTION WITH CONSISTENT SNAPSHOT`; LOW is the snapshot's own binlog
   position (MariaDB's `binlog_snapshot_file/position`, exact by construction; on MySQL,
   which has no such status, the position is read under a brief `FLUSH TABLES WITH READ
   LOCK`, as mysqldump does, so no transaction is between its binlog write and its commit;
   that path is not tested here, no MySQL server is available).
2. SELECT the chunk's key range (plain SQL, no row locks), COMMIT.
3. HIGH: the binlog end (`SHOW MASTER STATUS`) after the SELECT. Right after a rotation
   both may be just behind the new file's header events; a stream's boundary moves over
   those events, so it reaches such a position like any other.
4. Backfill: replay the binlog [LOW, HIGH) of this table (`BinlogStream(start=LOW,
   stop_at=HIGH)`, FULL row images) onto the chunk: inserts and updates put the new image of
   keys in the chunk, deletes and updates away remove them, TRUNCATE empties it. The chunk is
   then the table's state at HIGH for its key range. DDL on the table in the range (or since
   planning), a statement-logged change of it or an image without every column stops the chunk.
5. Emit every row as op "insert" with seq (file_index(HIGH), HIGH.pos, chunk, row) plus one
   marker row (op "chunk") that carries the chunk's range and watermarks, also when it is empty.

Chunk keys: the primary key, or a UNIQUE index of NOT NULL columns (option keys). Key types
with SQL ranges that order as ORDER BY does (integers, DECIMAL, FLOAT/DOUBLE, temporals,
CHAR/VARCHAR, BINARY/VARBINARY) are split; other keys (ENUM, SET, BIT) make one chunk. The
backfill keeps a changed row only if its key is in the chunk's range when that can be decided
in Python (integers, DECIMAL, floats, temporals, binary strings); for text keys (collations)
it keeps every row the window changed, which is still that row's state at HIGH.

Tables without a usable key: policy `noKeyPolicy`, "full" (default) reads the whole table in
one consistent snapshot in one chunk; LOW = HIGH = its exact binlog position, no backfill
(there is no key to reconcile by). "error" refuses.

Contract with the stream and the apply step (the exactness argument):

* Every snapshot row is the state of its key at its chunk's HIGH; every key that exists at
  HIGH and lies in the chunk's range has a row. A snapshot row's seq sorts after every binlog
  change before HIGH and before every change after it: HIGH is a transaction boundary, so no
  change has pos == HIGH.pos (`inner`/`row` only make the seq unique inside the table).
* Stream the binlog from `SnapshotWatermarks.stream_start` = min(HIGH) (every change before
  it is inside every chunk already).
* Apply snapshot rows and stream changes to an empty target with "per key, the change with
  the highest seq wins; a delete leaves a tombstone at its seq" (apply.py does exactly this:
  the `_seq` guard plus tombstones). The result equals the source once the stream has passed
  `stream_until` = max(HIGH), in any batch order. FULL row images are required.
* Between stream_start and stream_until the target may briefly show a state older than a
  chunk's HIGH (an insert and delete both before HIGH, in different batches). The DBLog
  filter removes that: drop a key change whose seq is not above its chunk's HIGH
  (`SnapshotWatermarks.covered`). It is an optimisation of transient states, not needed for
  the final result; it needs the key order in Python, so it only decides for key types with
  the same order in Python as on the server (integers, DECIMAL, temporals, binary strings).
* Keyless tables have no per-key rule: apply them as a multiset with the table-level filter
  (drop a change whose seq is not above the table's HIGH), which is required there.
  apply.py refuses keyless tables (change log only).
* Chunk rows are produced once: the output must be materialised once (written, or
  `localCheckpoint`) and the watermarks taken from that same data (`read_snapshot`). A second
  action on the lazy DataFrame reads the tables again, with new watermarks.

Modules: `server` (connections, LOW/HIGH watermarks), `tables` (shapes and chunk keys),
`values` (SELECT values -> the binlog path's JSON), `plan` (chunk boundaries), `chunks` (one
chunk read and backfilled), `watermarks` (where the stream starts, what the snapshot holds).
"""
