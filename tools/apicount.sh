#!/usr/bin/env bash
# apicount.sh: the exported identifiers of each library package as
# `go doc -all` lists them (funcs, methods, types, and each exported const
# and var name; struct fields and interface methods are not counted).
#   bash tools/apicount.sh
set -euo pipefail
cd "$(dirname "$0")/.."
total=0
for p in fence lease lease/redislease lease/pglease lease/zklease lease/etcdlease sqlfence sqlfence/stdsql blobfence migrations; do
	if [ "$p" = lease/etcdlease ]; then out=$(cd lease/etcdlease && go doc -all .); else out=$(go doc -all "./$p"); fi
	n=$(printf '%s\n' "$out" | awk '
		/^(func|type) / { n++; next }
		/^(const|var) \(/ { blk = 1; next }
		blk && /^\)/ { blk = 0; next }
		blk && /^\t[A-Z][A-Za-z0-9_]*( |$|,)/ { n++; next }
		/^(const|var) [A-Z]/ { n++ }
		END { print n + 0 }')
	printf '%-18s %3d\n' "$p" "$n"
	total=$((total + n))
done
printf '%-18s %3d\n' total "$total"
