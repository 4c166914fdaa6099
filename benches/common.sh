# Sourced by the bench scripts (`benches/NAME.sh`, run from the repository root):
# - $bin: the release binaries, $BIN or else $CARGO_TARGET_DIR/release or target/release,
#   as an absolute path;
# - scratch: makes $work, a temporary directory removed when the script exits;
# - rate FILE: the last rate (operations per second) unixperf printed in FILE;
# - peak CMD...: prints "SECONDS MIB" (wall time, peak RSS) of one run of CMD in $PWD,
#   its output thrown away; on failure the end of its standard error, and exit 1.
bin=${BIN:-${CARGO_TARGET_DIR:-target}/release}
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac

scratch() {
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
}

rate() { awk '/ trep @ /{gsub(/[()]/,""); for(i=1;i<=NF;i++) if ($i ~ /\/sec:?$/) {sub(/\/sec:?/,"",$i); print $i}}' "$1" | tail -1; }

peak() {
  /usr/bin/time -f "%e %M" -o time.txt "$@" >/dev/null 2>err.txt || {
    echo "failed: $*" >&2; tail -5 err.txt >&2; exit 1; }
  read -r s kib < <(tail -n 1 time.txt)
  echo "$s $((kib / 1024))"
}
