#!/usr/bin/env bash
# test-failures.sh LOG: what each failed test said, from a `go test -v` log, at
# most a few lines a message, so that the end of a failed run (what CI shows)
# says why and not only which. The whole log stays in LOG.
set -euo pipefail
log=${1:?usage: test-failures.sh LOG}
echo "=== what the failed tests said (the whole log: $log)"
# A panic (a test's, or the -timeout's "test timed out") ends the run: its first lines.
grep -m1 -A40 '^panic: ' "$log" || true
# A message is a line "    file_test.go:NN: ..." and its continuation lines, indented
# deeper (or blank). Each is kept under the test that ran when it was written
# (=== RUN / === CONT) and printed, its first 30 lines, at that test's "--- FAIL";
# a passing test's are dropped. 600 lines in all.
awk '
	/^=== (RUN|CONT|PAUSE) / { cur = $3; inmsg = 0; next }
	/^ +[A-Za-z0-9_]+_test\.go:[0-9]+: / { n = 0; inmsg = 1; depth = match($0, /[^ ]/); said[cur] = said[cur] $0 "\n"; n++; next }
	inmsg && (match($0, /[^ ]/) > depth || $0 ~ /^ *$/) {
		if (n < 30) said[cur] = said[cur] $0 "\n"; else if (n == 30) said[cur] = said[cur] "        …\n"
		n++; next
	}
	{ inmsg = 0 }
	/^ *--- FAIL: / { print; printf "%s", said[$3]; delete said[$3]; next }
	/^ *--- (PASS|SKIP): / { delete said[$3] }
' "$log" | head -n 600
