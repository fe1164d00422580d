#!/usr/bin/env bash
# Builds the benchmark's opt-in peer programs (our own small programs over go-mysql and
# mysql-binlog-connector-java) into ${BINLAKE_PEERS:-~/.cache/binlake/peers}:
#   gomysql-jsonl  go-mysql's BinlogParser.ParseFile, rows as JSON lines   (needs go >= 1.25)
#   bcj-jsonl      mysql-binlog-connector-java, files or a live stream      (needs javac, mvn)
# `binlake bench --tools go-mysql-file-jsonl,bcj-file-jsonl,bcj-stream-jsonl` runs them;
# a peer that is not built is skipped with a note. Either half may be built alone:
#   benchmarks/peers/build.sh [go|java]...
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="${BINLAKE_PEERS:-$HOME/.cache/binlake/peers}"
bcj_version=0.30.1
mkdir -p "$dest"
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(go java)

for part in "${parts[@]}"; do
  case "$part" in
    go)
      (cd "$here/gomysql" && go build -trimpath -o "$dest/gomysql-jsonl" .)
      echo "built $dest/gomysql-jsonl"
      ;;
    java)
      lib="$dest/bcj"
      rm -rf "$lib" && mkdir -p "$lib/classes"
      if ! mvn -q -B dependency:copy \
          -Dartifact="com.zendesk:mysql-binlog-connector-java:$bcj_version" \
          -DoutputDirectory="$lib" > "$lib/mvn.log" 2>&1; then
        cat "$lib/mvn.log" >&2
        exit 1
      fi
      jar="$lib/mysql-binlog-connector-java-$bcj_version.jar"
      javac -d "$lib/classes" -cp "$jar" "$here/bcj/BcjJsonl.java"
      cat > "$dest/bcj-jsonl" <<LAUNCHER
#!/bin/sh
exec java \${BCJ_JAVA_OPTS:-} -cp "$lib/classes:$jar" BcjJsonl "\$@"
LAUNCHER
      chmod +x "$dest/bcj-jsonl"
      echo "built $dest/bcj-jsonl (mysql-binlog-connector-java $bcj_version)"
      ;;
    *)
      echo "build.sh: unknown part '$part' (expected go or java)" >&2
      exit 2
      ;;
  esac
done
