//! The seeded mutator of the mutation passes (`docs/fuzzing.md`): the same seed gives the
//! same inputs on every machine, so a failure found in CI reproduces anywhere. [`mutate`]
//! edits text formats (numbers, lines, format words); [`mutate_binary`] edits binary ones
//! (perf.data: integer fields set to the values that break readers).

/// A small, seeded pseudo-random generator (splitmix64): the same seed gives the same
/// mutations on every machine.
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Numbers that parsers get wrong: zero, signs, the edges of u32 and u64, huge and
/// special floats, CPU numbers at and past the bound, too many digits.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e308",
    "-1e308",
    "1e-320",
    "inf",
    "-inf",
    "nan",
    "NaN",
    "infinity",
    "0.0",
    "8191",
    "8192",
    "100000000",
    "ffffffffffffffff",
    "10000000000000000",
    "0x",
    "",
];

/// Words of the formats, to splice in where a mutation needs structure.
const WORDS: &[&str] = &[
    "\n",
    "\r\n",
    "\t",
    " ",
    "\n\n",
    ";",
    ":",
    "[",
    "]",
    "(",
    ")",
    "#",
    "/",
    "+0x",
    "é",
    "\u{0}",
    " PERF_RECORD_COMM ",
    "upcmp-prfout 1\n",
    "upcmp-prfout 2\n",
    "unit events\n",
    "unit ns\n",
    "period ",
    " weight ",
    " | ",
    "upcmp-samples 1\n",
    "upcmp-samples 2\n",
    "upcmp-samples 3\n",
    " @",
    "k 0 ",
    "k 1 -80 = ",
    " *0",
    " *1",
    " =",
    " +",
    " -",
    " -80",
    " -1 ",
    ":-1 ",
    " page-faults: ",
    " cpu-clock: ",
    "# event : name = ",
    "functions ",
    "end\n",
    "cpu 0 samples 1 lost 0 throttled 0\n",
    "cpus ",
    " trep @ ",
    " reps @ ",
    " msec (",
    "/sec): ",
    " [aggregate of 2 copies]",
    "Time: ",
    "Total time: ",
    " [sec]",
    "# Running '",
    "' benchmark:",
    "_[k]",
    " [kernel.kallsyms]",
];

/// Applies one to four random edits to `data`: bit flips, inserted runs long enough to
/// pass the name and line bounds, number substitutions, duplicated, dropped or swapped
/// lines, truncation, inserted format words, and splices of another seed.
pub fn mutate(rng: &mut Rng, data: &[u8], seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut out = data.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(10) {
            0 => {
                if !out.is_empty() {
                    let at = rng.below(out.len());
                    out[at] ^= 1 << rng.below(8);
                }
            }
            1 => {
                // A run: usually past MAX_NAME_BYTES, rarely past a line bound.
                let len = match rng.below(20) {
                    0 => (1 << 20) + rng.below(1 << 10),
                    1..=9 => 4096 + rng.below(64),
                    _ => rng.below(300),
                };
                let byte = *rng.pick(b"a7 ;\t\n:[]f.");
                let at = rng.below(out.len() + 1);
                out.splice(at..at, std::iter::repeat_n(byte, len));
            }
            2 | 3 => {
                // Replace a number (a run of digits, dots and hex letters) with an odd one.
                let starts: Vec<usize> = (0..out.len())
                    .filter(|&i| out[i].is_ascii_digit() && (i == 0 || !out[i - 1].is_ascii_alphanumeric()))
                    .collect();
                if !starts.is_empty() {
                    let at = *rng.pick(&starts);
                    let end = (at..out.len())
                        .find(|&i| !(out[i].is_ascii_hexdigit() || out[i] == b'.'))
                        .unwrap_or(out.len());
                    out.splice(at..end, rng.pick(NUMBERS).bytes());
                }
            }
            4 | 5 => {
                // Duplicate, drop or swap lines.
                let mut lines: Vec<Vec<u8>> = out.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                if !lines.is_empty() {
                    let k = rng.below(lines.len());
                    match rng.below(3) {
                        0 => {
                            let copies = if rng.below(4) == 0 { 1 + rng.below(200) } else { 1 };
                            let line = lines[k].clone();
                            for _ in 0..copies {
                                lines.insert(k, line.clone());
                            }
                        }
                        1 => {
                            lines.remove(k);
                        }
                        _ => {
                            let j = rng.below(lines.len());
                            lines.swap(k, j);
                        }
                    }
                    out = lines.concat();
                }
            }
            6 => out.truncate(rng.below(out.len() + 1)),
            7 | 8 => {
                let at = rng.below(out.len() + 1);
                out.splice(at..at, rng.pick(WORDS).bytes());
            }
            _ => {
                // Splice a piece of a seed in.
                let other = rng.pick(seeds);
                if !other.is_empty() {
                    let from = rng.below(other.len());
                    let to = (from + rng.below(400)).min(other.len());
                    let at = rng.below(out.len() + 1);
                    out.splice(at..at, other[from..to].iter().copied());
                }
            }
        }
    }
    out
}

/// Values that binary readers get wrong when a size, count or offset holds them.
const WIDE: &[u64] = &[
    0,
    1,
    7,
    8,
    16,
    0x7f,
    0xff,
    0xffff,
    0x7fff_ffff,
    0xffff_ffff,
    0x1_0000_0000,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX,
];

/// Applies one to four random edits to the binary `data`: 8-, 4- and 2-byte fields at
/// aligned offsets set to [`WIDE`] values (or the input's length, or near it), bit flips,
/// truncation, a duplicated or dropped range, and splices of another seed.
pub fn mutate_binary(rng: &mut Rng, data: &[u8], seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut out = data.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = out.len();
        match rng.below(8) {
            0..=3 if len >= 8 => {
                let width = *rng.pick(&[8usize, 8, 4, 2]);
                let at = rng.below(len / width) * width;
                let value = match rng.below(4) {
                    0 => len as u64 + rng.below(3) as u64 - 1,
                    _ => *rng.pick(WIDE),
                };
                out[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
            }
            4 => {
                if len > 0 {
                    let at = rng.below(len);
                    out[at] ^= 1 << rng.below(8);
                }
            }
            5 => out.truncate(rng.below(len + 1)),
            6 => {
                let from = rng.below(len + 1);
                let to = (from + rng.below(256)).min(len);
                if rng.below(2) == 0 {
                    let piece = out[from..to].to_vec();
                    out.splice(from..from, piece);
                } else {
                    out.drain(from..to);
                }
            }
            _ => {
                let other = rng.pick(seeds);
                if !other.is_empty() {
                    let from = rng.below(other.len());
                    let to = (from + rng.below(512)).min(other.len());
                    let at = rng.below(len + 1);
                    out.splice(at..at, other[from..to].iter().copied());
                }
            }
        }
    }
    out
}
