#!/bin/sh
# The dataset at scale (docs/dataset.md, "Scale"): N synthetic runs of one test with 2,000
# functions (benches/dataset_runs.py), labelled side=a|b in blocks of 500 and batch=N/1000,
# exported with `upcmp export`; then the history of the test's top functions and a group
# comparison of 500 runs a side. Wall time and peak memory (RSS) of each, with DuckDB
# (python3 -m pip install duckdb) running the same reads as the peer.
#
# usage: benches/dataset.sh [N...]   (default: 1000 10000), from the repository root, after
#        cargo build --release --features parquet
set -eu
. benches/common.sh
scratch
sizes=${*:-1000 10000}
functions=2000

# Runs COMMAND..., printing "wall_s peak_MiB" (peak: the largest RSS of the command).
measure() {
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" >"$work/out" 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  awk '{printf "%.2f %.0f\n", $1, $2 / 1024}' "$work/time"
}

duck='import duckdb,sys; duckdb.sql(sys.argv[1]).fetchall()'

for n in $sizes; do
  d="$work/n$n"
  mkdir -p "$d"
  python3 benches/dataset_runs.py "$d" "$n" "$functions"
  # Export in blocks of 500 runs, each block one label pair.
  total=0; peak=0; k=0
  while [ "$k" -lt "$n" ]; do
    side=$(( (k / 500) % 2 )); [ "$side" = 0 ] && side=a || side=b
    batch=$(( k / 1000 ))
    set -- $(seq -f "$d/runs/%05g" "$k" $(( k + 499 < n - 1 ? k + 499 : n - 1 )))
    r=$(measure "$bin/upcmp" export "$@" --to "$d/ds" --label "side=$side" --label "batch=$batch")
    total=$(echo "$total ${r% *}" | awk '{print $1 + $2}')
    m=${r#* }; [ "$m" -gt "$peak" ] && peak=$m
    k=$(( k + 500 ))
  done
  bytes=$(du -sb "$d/ds" | cut -f1)
  echo "n=$n export: $(echo "$total $n" | awk '{printf "%.1f ms", 1000 * $1 / $2}') per run, peak ${peak} MiB; dataset $(echo "$bytes $n" | awk '{printf "%.1f kB", $1 / $2 / 1000}') per run ($(echo "$bytes" | awk '{printf "%.0f MB", $1 / 1e6}') in all)"

  ds="$d/ds"
  if "$bin/upcmp" history --help 2>/dev/null | grep -q "Usage: upcmp history"; then
    r=$(measure "$bin/upcmp" history "$ds" --test big)
    echo "n=$n history (upcmp history, test big): ${r% *} s, peak ${r#* } MiB"
  fi
  q="WITH f AS (SELECT * FROM read_parquet('$ds/functions/**/*.parquet', hive_partitioning = true) WHERE test = 'big'),
     top AS (SELECT function FROM f GROUP BY function ORDER BY SUM(seconds) DESC LIMIT 10),
     r AS (SELECT run_id, started FROM read_parquet('$ds/runs/**/*.parquet', hive_partitioning = true) WHERE test = 'big')
     SELECT r.started, f.function, SUM(f.seconds) FROM f JOIN top USING (function) JOIN r USING (run_id) GROUP BY ALL ORDER BY 1, 2"
  r=$(measure python3 -c "$duck" "$q")
  echo "n=$n history of the top 10 functions (DuckDB, peer): ${r% *} s, peak ${r#* } MiB"

  r=$(measure "$bin/upcmp" "$ds" --side side=a,batch=0 --side side=b,batch=0 "$d/res" -q --no-html)
  echo "n=$n group comparison, 500 runs a side (upcmp): ${r% *} s, peak ${r#* } MiB"
  q=$(awk '/^```sql$/{on=1; next} /^```$/{on=0} on' docs/dataset.md | sed "s|{DATASET}|$ds|g")
  r=$(measure python3 -c "$duck" "$q")
  echo "n=$n group query of docs/dataset.md, every run of each side (DuckDB, peer): ${r% *} s, peak ${r#* } MiB"
  rm -rf "$d"
done
