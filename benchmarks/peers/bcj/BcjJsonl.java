// The benchmark's mysql-binlog-connector-java contestant: decodes binlog files with
// BinaryLogFileReader (mode "file"), or a live stream with BinaryLogClient (mode "stream"),
// and writes every row change as a JSON line into a file, so it is timed output to output
// against binlake --output jsonl. The JSON writer is our own: the library hands back Java
// values (signed integers, epoch microseconds, bytes), not text.
//
// Usage:
//   BcjJsonl file OUT BINLOG...
//   BcjJsonl stream OUT HOST PORT USER FIRST_FILE LAST_FILE END_POS   (password in MYSQL_PWD)
// Prints one JSON stats line on stdout: rows, seconds and rows per table and operation.

import com.github.shyiko.mysql.binlog.BinaryLogClient;
import com.github.shyiko.mysql.binlog.BinaryLogFileReader;
import com.github.shyiko.mysql.binlog.event.DeleteRowsEventData;
import com.github.shyiko.mysql.binlog.event.Event;
import com.github.shyiko.mysql.binlog.event.EventHeaderV4;
import com.github.shyiko.mysql.binlog.event.EventType;
import com.github.shyiko.mysql.binlog.event.RotateEventData;
import com.github.shyiko.mysql.binlog.event.TableMapEventData;
import com.github.shyiko.mysql.binlog.event.TableMapEventMetadata;
import com.github.shyiko.mysql.binlog.event.UpdateRowsEventData;
import com.github.shyiko.mysql.binlog.event.WriteRowsEventData;
import com.github.shyiko.mysql.binlog.event.deserialization.EventDeserializer;

import java.io.BufferedWriter;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Serializable;
import java.io.Writer;
import java.math.BigDecimal;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

public final class BcjJsonl {
    // binlog column type codes
    static final int TINY = 1, SHORT = 2, LONG = 3, FLOAT = 4, DOUBLE = 5, TIMESTAMP = 7,
        LONGLONG = 8, INT24 = 9, DATE = 10, TIME = 11, DATETIME = 12, YEAR = 13, VARCHAR = 15,
        BIT = 16, TIMESTAMP_V2 = 17, DATETIME_V2 = 18, TIME_V2 = 19, NEWDECIMAL = 246,
        ENUM = 247, SET = 248, BLOB = 252, VAR_STRING = 253, STRING = 254, GEOMETRY = 255;

    /** How one column's values become JSON, worked out once per table map. */
    static final class Column {
        String key;          // "name":
        int type;            // the real type (ENUM/SET resolved)
        boolean unsigned;
        Charset charset;     // character columns; null for binary
        String[] values;     // ENUM/SET
        int fsp;
    }

    static final class Table {
        String prefixInsert, prefixUpdate, prefixDelete, name;
        Column[] cols;
    }

    final Writer out;
    final Map<Long, Table> tables = new HashMap<>();
    final Map<String, Table> described = new HashMap<>();
    final Map<String, Map<String, Integer>> counts = new TreeMap<>();
    long rows;
    final StringBuilder line = new StringBuilder(1 << 16);

    BcjJsonl(Writer out) {
        this.out = out;
    }

    static EventDeserializer deserializer() {
        EventDeserializer d = new EventDeserializer();
        d.setCompatibilityMode(EventDeserializer.CompatibilityMode.DATE_AND_TIME_AS_LONG_MICRO,
            EventDeserializer.CompatibilityMode.CHAR_AND_BINARY_AS_BYTE_ARRAY);
        return d;
    }

    static Charset charsetOf(int collation) {
        switch (collation) {
            case 63: return null;
            case 5: case 8: case 15: case 31: case 47: case 48: case 49: case 94:
                return StandardCharsets.ISO_8859_1;
            default: return StandardCharsets.UTF_8;
        }
    }

    static int realType(TableMapEventData tm, int i) {
        int t = tm.getColumnTypes()[i] & 0xFF;
        if (t == STRING) {
            int m0 = tm.getColumnMetadata()[i] >> 8;
            if (m0 == ENUM || m0 == SET) return m0;
        }
        return t;
    }

    static boolean isCharacter(int t) {
        return t == STRING || t == VAR_STRING || t == VARCHAR || t == BLOB || t == GEOMETRY;
    }

    Table describe(TableMapEventData tm) {
        TableMapEventMetadata md = tm.getEventMetadata();
        int n = tm.getColumnTypes().length;
        List<String> names = md != null ? md.getColumnNames() : null;
        BitSet signedness = md != null ? md.getSignedness() : null;
        List<Integer> collations = characterCollations(md, n, tm, false);
        List<String[]> enums = md != null && md.getEnumStrValues() != null ? md.getEnumStrValues() : List.of();
        List<String[]> sets = md != null && md.getSetStrValues() != null ? md.getSetStrValues() : List.of();
        Table t = new Table();
        t.name = tm.getDatabase() + "." + tm.getTable();
        String head = ",\"schema\":" + quote(tm.getDatabase()) + ",\"table\":" + quote(tm.getTable()) + ",";
        t.prefixInsert = "{\"op\":\"insert\"" + head + "\"after\":";
        t.prefixUpdate = "{\"op\":\"update\"" + head + "\"before\":";
        t.prefixDelete = "{\"op\":\"delete\"" + head + "\"before\":";
        t.cols = new Column[n];
        int ch = 0, en = 0, se = 0;
        for (int i = 0; i < n; i++) {
            Column c = new Column();
            c.type = realType(tm, i);
            c.key = quote(names != null && i < names.size() ? names.get(i) : "col" + i) + ":";
            c.unsigned = signedness != null && signedness.get(i);
            c.fsp = tm.getColumnMetadata()[i];
            if (c.type == ENUM || c.type == SET) {
                c.values = c.type == ENUM ? enums.get(en++) : sets.get(se++);
            } else if (isCharacter(c.type)) {
                c.charset = collations != null ? charsetOf(collations.get(ch)) : null;
                ch++;
            }
            t.cols[i] = c;
        }
        return t;
    }

    /** The collation of each character (or ENUM/SET) column in order, from the table map's
     *  default-charset or column-charset field; null when the map has neither. */
    static List<Integer> characterCollations(TableMapEventMetadata md, int n, TableMapEventData tm, boolean enumSet) {
        if (md == null) return null;
        TableMapEventMetadata.DefaultCharset dc = enumSet ? md.getEnumAndSetDefaultCharset() : md.getDefaultCharset();
        List<Integer> per = enumSet ? md.getEnumAndSetColumnCharsets() : md.getColumnCharsets();
        if (per != null) return per;
        if (dc == null) return null;
        List<Integer> out = new ArrayList<>();
        Map<Integer, Integer> overrides = dc.getCharsetCollations();
        int p = 0;
        for (int i = 0; i < n; i++) {
            int t = realType(tm, i);
            boolean counts = enumSet ? (t == ENUM || t == SET) : isCharacter(t);
            if (!counts) continue;
            Integer o = overrides != null ? overrides.get(p) : null;
            out.add(o != null ? o : dc.getDefaultCharsetCollation());
            p++;
        }
        return out;
    }

    static final char[] HEX = "0123456789abcdef".toCharArray();

    static String quote(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2);
        appendString(b, s);
        return b.toString();
    }

    static void appendString(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0, n = s.length(); i < n; i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                switch (c) {
                    case '\n': b.append("\\n"); break;
                    case '\r': b.append("\\r"); break;
                    case '\t': b.append("\\t"); break;
                    default: b.append("\\u00").append(HEX[c >> 4]).append(HEX[c & 15]);
                }
            } else {
                b.append(c);
            }
        }
        b.append('"');
    }

    static void pad(StringBuilder b, long v, int width) {
        String s = Long.toString(v);
        for (int i = s.length(); i < width; i++) b.append('0');
        b.append(s);
    }

    static void appendFraction(StringBuilder b, long micros, int fsp) {
        if (fsp <= 0) return;
        b.append('.');
        String s = Long.toString(1_000_000 + micros);  // 1xxxxxx
        b.append(s, 1, 1 + Math.min(fsp, 6));
    }

    /** An ISO date, or date-time with `fsp` fraction digits ("Z" after a TIMESTAMP's). */
    static void appendDateTime(StringBuilder b, long micros, int fsp, boolean withTime, boolean utc) {
        long secs = Math.floorDiv(micros, 1_000_000L);
        long frac = Math.floorMod(micros, 1_000_000L);
        LocalDateTime t = LocalDateTime.ofEpochSecond(secs, 0, ZoneOffset.UTC);
        b.append('"');
        pad(b, t.getYear(), 4); b.append('-'); pad(b, t.getMonthValue(), 2); b.append('-');
        pad(b, t.getDayOfMonth(), 2);
        if (withTime) {
            b.append('T'); pad(b, t.getHour(), 2); b.append(':'); pad(b, t.getMinute(), 2);
            b.append(':'); pad(b, t.getSecond(), 2);
            appendFraction(b, frac, fsp);
            if (utc) b.append('Z');
        }
        b.append('"');
    }

    void appendValue(StringBuilder b, Column c, Serializable v) throws IOException {
        if (v == null) {
            b.append("null");
            return;
        }
        switch (c.type) {
            case TINY: case SHORT: case INT24: case LONG: {
                long x = ((Number) v).longValue();
                if (c.unsigned) {
                    x &= c.type == TINY ? 0xFFL : c.type == SHORT ? 0xFFFFL : c.type == INT24 ? 0xFFFFFFL : 0xFFFFFFFFL;
                }
                b.append(x);
                return;
            }
            case LONGLONG: {
                long x = (Long) v;
                b.append(c.unsigned ? Long.toUnsignedString(x) : Long.toString(x));
                return;
            }
            case YEAR:
                b.append(((Number) v).intValue());
                return;
            case FLOAT:
                b.append((Float) v);
                return;
            case DOUBLE:
                b.append((Double) v);
                return;
            case NEWDECIMAL:
                b.append('"').append(((BigDecimal) v).toPlainString()).append('"');
                return;
            case BIT: {
                long[] words = ((BitSet) v).toLongArray();
                b.append(words.length == 0 ? "0" : Long.toUnsignedString(words[0]));
                return;
            }
            case DATE:
                appendDateTime(b, (Long) v, 0, false, false);
                return;
            case DATETIME: case DATETIME_V2:
                appendDateTime(b, (Long) v, c.type == DATETIME_V2 ? c.fsp : 0, true, false);
                return;
            case TIMESTAMP: case TIMESTAMP_V2:
                appendDateTime(b, (Long) v, c.type == TIMESTAMP_V2 ? c.fsp : 0, true, true);
                return;
            case TIME: case TIME_V2: {
                long micros = (Long) v;
                long secs = Math.floorDiv(micros, 1_000_000L);
                b.append('"');
                pad(b, secs / 3600, 2); b.append(':'); pad(b, secs / 60 % 60, 2); b.append(':');
                pad(b, secs % 60, 2);
                appendFraction(b, Math.floorMod(micros, 1_000_000L), c.type == TIME_V2 ? c.fsp : 0);
                b.append('"');
                return;
            }
            case ENUM: {
                int i = ((Number) v).intValue();
                appendString(b, i >= 1 && i <= c.values.length ? c.values[i - 1] : "");
                return;
            }
            case SET: {
                long bits = ((Number) v).longValue();
                StringBuilder s = new StringBuilder();
                for (int i = 0; i < c.values.length; i++) {
                    if ((bits & (1L << i)) != 0) {
                        if (s.length() > 0) s.append(',');
                        s.append(c.values[i]);
                    }
                }
                appendString(b, s.toString());
                return;
            }
            default:
                if (v instanceof byte[]) {
                    byte[] bytes = (byte[]) v;
                    if (c.charset == null) {
                        b.append('"').append(Base64.getEncoder().encodeToString(bytes)).append('"');
                    } else {
                        appendString(b, new String(bytes, c.charset));
                    }
                    return;
                }
                if (v instanceof String) {
                    appendString(b, (String) v);
                    return;
                }
                throw new IOException(c.key + " no JSON form for a " + v.getClass().getName());
        }
    }

    void appendImage(StringBuilder b, Table t, BitSet included, Serializable[] row) throws IOException {
        b.append('{');
        int k = 0;
        for (int i = 0; i < t.cols.length && k < row.length; i++) {
            if (!included.get(i)) continue;
            if (k > 0) b.append(',');
            b.append(t.cols[i].key);
            appendValue(b, t.cols[i], row[k++]);
        }
        b.append('}');
    }

    void count(Table t, String op) {
        counts.computeIfAbsent(t.name, k -> new TreeMap<>()).merge(op, 1, Integer::sum);
        rows++;
    }

    void flushLine() throws IOException {
        line.append("}\n");
        out.append(line);
        line.setLength(0);
    }

    void onEvent(Event event) throws IOException {
        EventType type = event.getHeader().getEventType();
        if (type == EventType.TABLE_MAP) {
            TableMapEventData tm = event.getData();
            String key = tm.getDatabase() + "." + tm.getTable() + "/" + new String(tm.getColumnTypes(), StandardCharsets.ISO_8859_1);
            tables.put(tm.getTableId(), described.computeIfAbsent(key, k -> describe(tm)));
        } else if (EventType.isWrite(type)) {
            WriteRowsEventData d = event.getData();
            Table t = tables.get(d.getTableId());
            for (Serializable[] row : d.getRows()) {
                line.append(t.prefixInsert);
                appendImage(line, t, d.getIncludedColumns(), row);
                flushLine();
                count(t, "insert");
            }
        } else if (EventType.isUpdate(type)) {
            UpdateRowsEventData d = event.getData();
            Table t = tables.get(d.getTableId());
            for (Map.Entry<Serializable[], Serializable[]> row : d.getRows()) {
                line.append(t.prefixUpdate);
                appendImage(line, t, d.getIncludedColumnsBeforeUpdate(), row.getKey());
                line.append(",\"after\":");
                appendImage(line, t, d.getIncludedColumns(), row.getValue());
                flushLine();
                count(t, "update");
            }
        } else if (EventType.isDelete(type)) {
            DeleteRowsEventData d = event.getData();
            Table t = tables.get(d.getTableId());
            for (Serializable[] row : d.getRows()) {
                line.append(t.prefixDelete);
                appendImage(line, t, d.getIncludedColumns(), row);
                flushLine();
                count(t, "delete");
            }
        }
    }

    String stats(double seconds) {
        StringBuilder b = new StringBuilder("{\"rows\":").append(rows).append(",\"seconds\":")
            .append(seconds).append(",\"tables\":{");
        boolean first = true;
        for (Map.Entry<String, Map<String, Integer>> e : counts.entrySet()) {
            if (!first) b.append(',');
            first = false;
            appendString(b, e.getKey());
            b.append(":{");
            boolean f2 = true;
            for (Map.Entry<String, Integer> op : e.getValue().entrySet()) {
                if (!f2) b.append(',');
                f2 = false;
                appendString(b, op.getKey());
                b.append(':').append(op.getValue());
            }
            b.append('}');
        }
        return b.append("}}").toString();
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3 || !(args[0].equals("file") || (args[0].equals("stream") && args.length == 8))) {
            System.err.println("usage: BcjJsonl file OUT BINLOG... | stream OUT HOST PORT USER FIRST LAST END_POS");
            System.exit(2);
        }
        long started = System.nanoTime();
        try (Writer w = new BufferedWriter(new OutputStreamWriter(new FileOutputStream(args[1]), StandardCharsets.UTF_8), 1 << 20)) {
            BcjJsonl peer = new BcjJsonl(w);
            if (args[0].equals("file")) {
                for (int i = 2; i < args.length; i++) {
                    try (BinaryLogFileReader reader = new BinaryLogFileReader(new File(args[i]), deserializer())) {
                        for (Event e; (e = reader.readEvent()) != null; ) {
                            peer.onEvent(e);
                        }
                    }
                }
            } else {
                stream(peer, args);
            }
            w.flush();
            System.out.println(peer.stats((System.nanoTime() - started) / 1e9));
        }
    }

    /** Replicate from FIRST:4 until the end of LAST at END_POS, then disconnect. */
    static void stream(BcjJsonl peer, String[] a) throws Exception {
        String password = System.getenv().getOrDefault("MYSQL_PWD", "");
        BinaryLogClient client = new BinaryLogClient(a[2], Integer.parseInt(a[3]), a[4], password);
        client.setServerId(4242);
        client.setKeepAlive(false);
        client.setBinlogFilename(a[5]);
        client.setBinlogPosition(4);
        client.setEventDeserializer(deserializer());
        String last = a[6];
        long end = Long.parseLong(a[7]);
        String[] file = {a[5]};
        CountDownLatch done = new CountDownLatch(1);
        Exception[] failure = {null};
        client.registerEventListener(e -> {
            if (done.getCount() == 0) return;
            try {
                peer.onEvent(e);
                // (a ROTATE's own position is in the file it ends, before the name changes)
                long next = ((EventHeaderV4) e.getHeader()).getNextPosition();
                if (file[0].compareTo(last) > 0 || (file[0].equals(last) && next >= end)) {
                    done.countDown();
                }
                if (e.getHeader().getEventType() == EventType.ROTATE) {
                    file[0] = ((RotateEventData) e.getData()).getBinlogFilename();
                }
            } catch (Exception ex) {
                failure[0] = ex;
                done.countDown();
            }
        });
        client.connect(30_000);
        if (!done.await(3600, TimeUnit.SECONDS)) {
            throw new IOException("the stream did not reach " + last + ":" + end);
        }
        client.disconnect();
        if (failure[0] != null) throw failure[0];
    }
}
