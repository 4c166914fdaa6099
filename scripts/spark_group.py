#!/usr/bin/env python3
"""Runs the group query of docs/dataset.md with Spark SQL (pyspark, local mode) on a dataset
and checks its per-function means against upcmp's for the same runs to 1e-9.

The query is the SQL block of docs/dataset.md, unchanged but for its table sources: each
`read_parquet('{DATASET}/TABLE/**/*.parquet', hive_partitioning = true)` becomes a view of
`spark.read.parquet(DATASET/TABLE)` (Spark discovers the hive partitions itself; partition
type inference is off, so a kernel `6.1` stays a string, as in DuckDB and polars).

usage: spark_group.py DATASET RESULTS_DIR
  DATASET      runs exported with --label side=a (upcmp's run 1) and side=b (run 2)
  RESULTS_DIR  upcmp's results for the same two sides (results.csv is read)

Prints the number of means compared, the largest difference and the time taken; exits 1
when a mean differs by more than 1e-9 or fewer than one mean per function row was compared.
"""
import csv
import os
import re
import sys
import time


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    dataset, results = os.path.abspath(sys.argv[1]), sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    doc = open(os.path.join(here, "..", "docs", "dataset.md")).read()
    sql = doc.split("```sql\n", 1)[1].split("```", 1)[0]
    tables = sorted(set(re.findall(r"read_parquet\('\{DATASET\}/(\w+)/\*\*/\*\.parquet', hive_partitioning = true\)", sql)))
    sql = re.sub(r"read_parquet\('\{DATASET\}/(\w+)/\*\*/\*\.parquet', hive_partitioning = true\)", r"ds_\1", sql)

    start = time.monotonic()
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("upcmp-group-query")
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for t in tables:
        spark.read.parquet(os.path.join(dataset, t)).createOrReplaceTempView(f"ds_{t}")
    means = {}
    for row in spark.sql(sql).collect():
        means[(row["side"], row["test"], row["name"])] = row["mean_seconds"]
    spark.stop()
    took = time.monotonic() - start

    checked, worst, bad = 0, 0.0, []
    with open(os.path.join(results, "results.csv"), newline="") as f:
        for c in csv.DictReader(f):
            if c["kind"] != "function":
                continue
            for side, col in (("a", "run1"), ("b", "run2")):
                m = means.get((side, c["test"], c["name"]))
                if m is None or c[col] == "":
                    continue
                d = abs(m - float(c[col]))
                worst = max(worst, d)
                checked += 1
                if d > 1e-9:
                    bad.append((side, c["test"], c["name"], m, c[col]))
    print(f"spark {spark.version}: {len(means)} means from the dataset, {checked} compared with upcmp's, "
          f"largest difference {worst:.3g} s, {took:.1f} s")
    for b in bad[:10]:
        print("differs:", b)
    sys.exit(1 if bad or checked == 0 else 0)


if __name__ == "__main__":
    main()
