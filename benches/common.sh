# Sourced by the bench scripts (`benches/NAME.sh`, run from the repository root):
# - $bin: the release binaries, $BIN or else $CARGO_TARGET_DIR/release or target/release,
#   as an absolute path;
# - scratch: makes $work, a temporary directory removed when the script exits;
# - rate FILE: the last rate (operations per second) unixperf printed in FILE.
bin=${BIN:-${CARGO_TARGET_DIR:-target}/release}
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac

scratch() {
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
}

rate() { awk '/ trep @ /{gsub(/[()]/,""); for(i=1;i<=NF;i++) if ($i ~ /\/sec:?$/) {sub(/\/sec:?/,"",$i); print $i}}' "$1" | tail -1; }
