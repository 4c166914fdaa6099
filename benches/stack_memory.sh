#!/usr/bin/env bash
# upsrun's stack analysis at scale: SAMPLES stack samples (default 10^6), each a random
# path 3 to 15 calls deep through a call graph of 300 real kernel functions (about 435,000
# distinct stacks, far more than a real test has), analysed with `upsrun --analyse`;
# prints wall time, peak memory and distinct stacks. Run as root from the repository root
# after `cargo build --release --workspace`:
#   benches/stack_memory.sh [SAMPLES]
set -euo pipefail
samples=${1:-1000000}
. "$(dirname "$0")/common.sh"
scratch
cd "$work"

# A real (tiny) upsrun run gives the directory layout, prfout and kallsyms.gz.
echo 't: true' > test_list
"$bin/upsrun" auto run > /dev/null

python3 - "$samples" <<'PY'
import gzip, random, sys
n = int(sys.argv[1])
rng = random.Random(1)
addrs = []
with gzip.open("run/kallsyms.gz", "rt") as f:
    for line in f:
        a, kind, rest = line.split(maxsplit=2)
        if kind in "tT" and "[" not in rest and int(a, 16):
            addrs.append(int(a, 16))
rng.shuffle(addrs)
funcs = addrs[:300]
callees = {f: rng.sample(funcs, 3) for f in funcs}
with gzip.open("run/t/samples.gz", "wt", compresslevel=1) as out:
    out.write("upcmp-samples 1\n")
    for i in range(n):
        f = funcs[0]
        chain = [f]
        for _ in range(rng.randint(3, 15)):
            f = rng.choice(callees[f])
            chain.append(f)
        chain.reverse()  # innermost first, as perf records them
        pcs = " ".join("%x" % (a + 8) for a in chain)
        out.write("s %d %d 100 100 k %x ffffffffffffff80 %s fffffffffffffe00 401000\n" % (i, i % 2, chain[0] + 8, pcs))
PY

/usr/bin/time -f "%e %M" -o time.txt "$bin/upsrun" --analyse run/t 2> /dev/null
read -r secs kib < time.txt
stacks=$(wc -l < run/t/stacks.folded)
echo "upsrun --analyse, $samples samples: ${secs} s, peak RSS $((kib / 1024)) MiB, $stacks distinct stacks"
