// Command gomysql-jsonl is the benchmark's go-mysql contestant: it decodes binlog files with
// go-mysql's replication.BinlogParser (ParseFile, CRC32 checked) and writes every row change
// as a JSON line into a file, so it is timed output to output against binlake decode --output
// jsonl. The JSON writer is our own: go-mysql hands back Go values, not text.
//
// Usage: gomysql-jsonl -out FILE BINLOG...
// Prints one JSON stats line on stdout: rows, seconds and rows per table and operation.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Column kinds: how a decoded value becomes JSON.
const (
	kindPlain  = iota // numbers, temporals as strings, decimals as strings
	kindText          // a string in a UTF-8 compatible character set
	kindLatin1        // a string in latin1, converted to UTF-8
	kindBinary        // bytes, written as base64
	kindEnum          // an index into the column's values
	kindSet           // a bit set over the column's values
)

type column struct {
	key    []byte // `"name":` ready to append
	kind   int
	values []string // ENUM/SET values
}

type table struct {
	prefix map[replication.EnumRowsEventType][]byte // `{"op":..,"schema":..,"table":..,`
	cols   []column
}

var latin1Collations = map[uint64]bool{5: true, 8: true, 15: true, 31: true, 47: true, 48: true, 49: true, 94: true}

func describe(tm *replication.TableMapEvent) *table {
	names := tm.ColumnNameString()
	collations := tm.CollationMap()
	enums := tm.EnumStrValueMap()
	sets := tm.SetStrValueMap()
	t := &table{prefix: map[replication.EnumRowsEventType][]byte{}, cols: make([]column, tm.ColumnCount)}
	for _, op := range []replication.EnumRowsEventType{replication.EnumRowsEventTypeInsert,
		replication.EnumRowsEventTypeUpdate, replication.EnumRowsEventTypeDelete} {
		b := []byte(`{"op":"` + op.String() + `","schema":`)
		b = appendString(b, tm.Schema)
		b = append(b, `,"table":`...)
		b = appendString(b, tm.Table)
		t.prefix[op] = append(b, ',')
	}
	for i := range t.cols {
		name := "col" + strconv.Itoa(i)
		if i < len(names) {
			name = names[i]
		}
		c := column{key: append(appendString(nil, []byte(name)), ':')}
		if coll, ok := collations[i]; ok {
			switch {
			case coll == 63:
				c.kind = kindBinary
			case latin1Collations[coll]:
				c.kind = kindLatin1
			default:
				c.kind = kindText
			}
		} else if v, ok := enums[i]; ok {
			c.kind, c.values = kindEnum, v
		} else if v, ok := sets[i]; ok {
			c.kind, c.values = kindSet, v
		} else if tm.ColumnType[i] == mysql.MYSQL_TYPE_BLOB || tm.ColumnType[i] == mysql.MYSQL_TYPE_GEOMETRY {
			c.kind = kindBinary
		}
		t.cols[i] = c
	}
	return t
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string (UTF-8 passed through, control characters escaped).
func appendString(b []byte, s []byte) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendLatin1(b []byte, s []byte) []byte {
	u := make([]byte, 0, len(s)*2)
	for _, c := range s {
		u = utf8.AppendRune(u, rune(c))
	}
	return appendString(b, u)
}

func appendValue(b []byte, c *column, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case int8:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case int64:
		switch c.kind {
		case kindEnum:
			if x >= 1 && int(x) <= len(c.values) {
				return appendString(b, []byte(c.values[x-1])), nil
			}
			return append(b, `""`...), nil
		case kindSet:
			out := make([]byte, 0, 32)
			for i, name := range c.values {
				if x&(1<<uint(i)) != 0 {
					if len(out) > 0 {
						out = append(out, ',')
					}
					out = append(out, name...)
				}
			}
			return appendString(b, out), nil
		}
		return strconv.AppendInt(b, x, 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case float32:
		return strconv.AppendFloat(b, float64(x), 'g', -1, 32), nil
	case float64:
		return strconv.AppendFloat(b, x, 'g', -1, 64), nil
	case string:
		switch c.kind {
		case kindBinary:
			return appendBase64(b, []byte(x)), nil
		case kindLatin1:
			return appendLatin1(b, []byte(x)), nil
		}
		return appendString(b, []byte(x)), nil
	case []byte:
		switch c.kind {
		case kindText:
			return appendString(b, x), nil
		case kindLatin1:
			return appendLatin1(b, x), nil
		}
		return appendBase64(b, x), nil
	}
	return b, fmt.Errorf("column %s: no JSON form for a Go %T", c.key, v)
}

func appendBase64(b []byte, x []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, x)
	return append(b, '"')
}

func appendImage(b []byte, t *table, row []any) ([]byte, error) {
	b = append(b, '{')
	var err error
	for i, v := range row {
		if i >= len(t.cols) {
			break
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, t.cols[i].key...)
		if b, err = appendValue(b, &t.cols[i], v); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func main() {
	out := flag.String("out", "", "the JSON lines file to write")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: gomysql-jsonl -out FILE BINLOG...")
		os.Exit(2)
	}
	fh, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gomysql-jsonl:", err)
		os.Exit(1)
	}
	w := bufio.NewWriterSize(fh, 1<<20)
	started := time.Now()

	p := replication.NewBinlogParser()
	p.SetFlavor("mariadb")
	p.SetVerifyChecksum(true)
	tables := map[string]*table{} // by schema, name and column types
	counts := map[string]map[string]int{}
	rows := 0
	line := make([]byte, 0, 1<<16)

	onEvent := func(e *replication.BinlogEvent) error {
		re, ok := e.Event.(*replication.RowsEvent)
		if !ok {
			return nil
		}
		name := string(re.Table.Schema) + "." + string(re.Table.Table)
		key := name + "\x00" + string(re.Table.ColumnType)
		t := tables[key]
		if t == nil {
			t = describe(re.Table)
			tables[key] = t
		}
		op := re.Type()
		byOp := counts[name]
		if byOp == nil {
			byOp = map[string]int{}
			counts[name] = byOp
		}
		step := 1
		if op == replication.EnumRowsEventTypeUpdate {
			step = 2
		}
		var err error
		for i := 0; i+step <= len(re.Rows); i += step {
			line = append(line[:0], t.prefix[op]...)
			switch op {
			case replication.EnumRowsEventTypeInsert:
				line = append(line, `"after":`...)
				line, err = appendImage(line, t, re.Rows[i])
			case replication.EnumRowsEventTypeDelete:
				line = append(line, `"before":`...)
				line, err = appendImage(line, t, re.Rows[i])
			default:
				line = append(line, `"before":`...)
				if line, err = appendImage(line, t, re.Rows[i]); err == nil {
					line = append(line, `,"after":`...)
					line, err = appendImage(line, t, re.Rows[i+1])
				}
			}
			if err != nil {
				return fmt.Errorf("%s at %d: %w", name, e.Header.LogPos, err)
			}
			line = append(line, '}', '\n')
			if _, err = w.Write(line); err != nil {
				return err
			}
			rows++
			byOp[op.String()]++
		}
		return nil
	}
	for _, file := range flag.Args() {
		if err := p.ParseFile(file, 0, onEvent); err != nil {
			fmt.Fprintf(os.Stderr, "gomysql-jsonl: %s: %v\n", file, err)
			os.Exit(1)
		}
	}
	if err := w.Flush(); err == nil {
		err = fh.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gomysql-jsonl:", err)
		os.Exit(1)
	}
	stats, _ := json.Marshal(map[string]any{"rows": rows, "seconds": time.Since(started).Seconds(),
		"tables": counts})
	fmt.Println(string(stats))
}
