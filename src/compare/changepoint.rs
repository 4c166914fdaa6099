//! Change points of a series of runs: E-Divisive means (Matteson & James, "A nonparametric
//! approach for multiple change point analysis of multivariate data", JASA 2014), the
//! method of MongoDB's performance CI and Hunter, with its permutation test. Pure: values
//! in, change points out (docs/formulas.md, "History and change points").
//!
//! A series is a list of runs, each with its repetitions' values. The divergence is taken
//! over every value, but a split falls only between runs and the permutation test shuffles
//! whole runs, so a run's repetitions stay together (they share the run's noise: boot,
//! placement, machine state) and never count as independent evidence of a change.

use super::stats::t_cdf;
use serde::Serialize;

/// Significance level of each permutation test: 1%, so that a series with no change shows
/// a false change point in about 1% of histories (measured: docs/formulas.md).
pub const ALPHA: f64 = 0.01;
/// Permutations of each test: 199 gives p-values in steps of 0.5%, so p ≤ 1% is reachable.
pub const PERMUTATIONS: usize = 199;

/// How to look for change points.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ChangeOptions {
    /// A change point is kept when its permutation p-value is at most this.
    pub alpha: f64,
    /// Permutations per test.
    pub permutations: usize,
    /// Seed of the permutations (the same series gives the same answer every time).
    pub seed: u64,
    /// Fewest runs in a segment.
    pub min_runs: usize,
}

impl Default for ChangeOptions {
    fn default() -> Self {
        ChangeOptions {
            alpha: ALPHA,
            permutations: PERMUTATIONS,
            seed: 0x5eed,
            min_runs: 2,
        }
    }
}

/// A change point: the series moves between run `index - 1` and run `index`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangePoint {
    /// The first run of the new segment (0-based).
    pub index: usize,
    /// The permutation test's p-value when the point was found.
    pub p_value: f64,
    /// Mean of the run means of the segment before.
    pub before: f64,
    /// Mean of the run means of the segment after.
    pub after: f64,
    /// (after − before) / before, in percent; None when before is 0.
    pub change_pct: Option<f64>,
}

impl ChangePoint {
    /// 1 − p: how sure the test is that the series moved here.
    pub fn confidence(&self) -> f64 {
        1.0 - self.p_value
    }
}

/// splitmix64: the permutations' random numbers, seeded, identical on every machine.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Fisher–Yates.
    fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            xs.swap(i, j);
        }
    }
}

/// The best split of the runs `runs` (each a slice of values): `(q, k)` where the second
/// segment starts at run `k`, q being Matteson & James' Q̂ with α = 1:
/// Q̂ = mn/(m+n) · (2/(mn) Σ|x−y| − Σ_{i<j}|x_i−x_j|/C(m,2) − Σ_{i<j}|y_i−y_j|/C(n,2)).
/// O(N log N) in the values: the within-segment sums grow and shrink one value at a time,
/// each value's distances to those before it (or after it) summed from a Fenwick tree of
/// counts and sums over the values' ranks (a history of 10^4 runs is 10^4 values a split,
/// and 199 permutations of each).
fn best_split(runs: &[&[f64]], min_runs: usize) -> Option<(f64, usize)> {
    let xs: Vec<f64> = runs.iter().flat_map(|r| r.iter().copied()).collect();
    let n = xs.len();
    if runs.len() < 2 * min_runs || n < 2 {
        return None;
    }
    // left[t] = Σ_{i<j<t} |x_i − x_j|; right[t] = Σ_{t≤i<j} |x_i − x_j|.
    let rank = ranks(&xs);
    let mut left = vec![0.0; n + 1];
    let mut seen = Fenwick::new(n);
    for t in 0..n {
        left[t + 1] = left[t] + seen.distances(rank[t], xs[t]);
        seen.insert(rank[t], xs[t]);
    }
    let mut right = vec![0.0; n + 1];
    let mut seen = Fenwick::new(n);
    for t in (0..n).rev() {
        right[t] = right[t + 1] + seen.distances(rank[t], xs[t]);
        seen.insert(rank[t], xs[t]);
    }
    let total = left[n];
    let pairs = |k: f64| k * (k - 1.0) / 2.0;
    let mut best: Option<(f64, usize)> = None;
    let mut at = 0;
    for (k, r) in runs.iter().enumerate() {
        if k >= min_runs && runs.len() - k >= min_runs {
            let (m, o) = (at as f64, (n - at) as f64);
            let between = total - left[at] - right[at];
            let within_x = if at >= 2 { left[at] / pairs(m) } else { 0.0 };
            let within_y = if n - at >= 2 { right[at] / pairs(o) } else { 0.0 };
            let q = m * o / (m + o) * (2.0 * between / (m * o) - within_x - within_y);
            if best.map_or(true, |b| q > b.0) {
                best = Some((q, k));
            }
        }
        at += r.len();
    }
    best
}

/// Each value's place among the values sorted (ties in input order): 0..n.
fn ranks(xs: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..xs.len()).collect();
    order.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]).then(a.cmp(&b)));
    let mut rank = vec![0; xs.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r;
    }
    rank
}

/// Counts and sums of the values inserted so far, by rank.
struct Fenwick {
    count: Vec<f64>,
    sum: Vec<f64>,
    total: (f64, f64),
}

impl Fenwick {
    fn new(n: usize) -> Self {
        Fenwick {
            count: vec![0.0; n + 1],
            sum: vec![0.0; n + 1],
            total: (0.0, 0.0),
        }
    }

    fn insert(&mut self, rank: usize, x: f64) {
        let mut i = rank + 1;
        while i < self.count.len() {
            self.count[i] += 1.0;
            self.sum[i] += x;
            i += i & i.wrapping_neg();
        }
        self.total.0 += 1.0;
        self.total.1 += x;
    }

    /// Σ |v − x| over the values v inserted, x of rank `rank` (not inserted yet).
    fn distances(&self, rank: usize, x: f64) -> f64 {
        let (mut below, mut below_sum) = (0.0, 0.0);
        let mut i = rank;
        while i > 0 {
            below += self.count[i];
            below_sum += self.sum[i];
            i -= i & i.wrapping_neg();
        }
        let (above, above_sum) = (self.total.0 - below, self.total.1 - below_sum);
        (x * below - below_sum) + (above_sum - x * above)
    }
}

/// The change points of `runs` (each run's repetition values), in run order. Hierarchical
/// as in the paper: the best split over all current segments is tested against the same
/// statistic on `permutations` shufflings of the runs within each segment; kept when
/// p = (1 + #{permuted ≥ observed}) / (1 + permutations) ≤ alpha, then the next one is
/// sought; the first split not significant ends the search.
pub fn change_points(runs: &[Vec<f64>], opts: &ChangeOptions) -> Vec<ChangePoint> {
    let runs: Vec<&[f64]> = runs.iter().map(|r| r.as_slice()).collect();
    let min_runs = opts.min_runs.max(1);
    let mut rng = SplitMix(opts.seed);
    let mut cuts: Vec<(usize, f64)> = Vec::new();
    loop {
        let bounds = segment_bounds(&cuts, runs.len());
        let best = bounds
            .iter()
            .filter_map(|&(lo, hi)| best_split(&runs[lo..hi], min_runs).map(|(q, k)| (q, lo + k)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let Some((q, cut)) = best else { break };
        let mut beaten = 0;
        let mut order: Vec<&[f64]> = runs.clone();
        for _ in 0..opts.permutations {
            let mut top = f64::NEG_INFINITY;
            for &(lo, hi) in &bounds {
                rng.shuffle(&mut order[lo..hi]);
                if let Some((pq, _)) = best_split(&order[lo..hi], min_runs) {
                    top = top.max(pq);
                }
            }
            if top >= q {
                beaten += 1;
            }
        }
        let p = (1 + beaten) as f64 / (1 + opts.permutations) as f64;
        if p > opts.alpha {
            break;
        }
        cuts.push((cut, p));
        cuts.sort_by_key(|c| c.0);
    }
    let bounds = segment_bounds(&cuts, runs.len());
    let seg_mean = |(lo, hi): (usize, usize)| {
        let means: Vec<f64> = runs[lo..hi].iter().filter(|r| !r.is_empty()).map(|r| mean(r)).collect();
        mean(&means)
    };
    cuts.iter()
        .enumerate()
        .map(|(i, &(index, p_value))| {
            let (before, after) = (seg_mean(bounds[i]), seg_mean(bounds[i + 1]));
            ChangePoint {
                index,
                p_value,
                before,
                after,
                change_pct: (before != 0.0).then(|| (after - before) / before * 100.0),
            }
        })
        .collect()
}

/// The segments `[lo, hi)` that the sorted cuts make of `n` runs.
fn segment_bounds(cuts: &[(usize, f64)], n: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut lo = 0;
    for &(c, _) in cuts {
        out.push((lo, c));
        lo = c;
    }
    out.push((lo, n));
    out
}

fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        f64::NAN
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// Whether the newest run departs from the runs since the last change point: one run's
/// mean against the k run means before it, t = d / (s·√(1 + 1/k)) with ν = k − 1 (a
/// prediction interval), two-sided. None when it cannot tell: fewer than 3 runs before
/// it in the segment, or no spread among them and another value in the newest run.
pub fn newest_departs(runs: &[Vec<f64>], cps: &[ChangePoint]) -> Option<NewestRun> {
    let (newest, before) = runs.split_last()?;
    if newest.is_empty() {
        return None;
    }
    let start = cps
        .iter()
        .map(|c| c.index)
        .filter(|&i| i < runs.len() - 1)
        .max()
        .unwrap_or(0);
    let means: Vec<f64> = before[start..]
        .iter()
        .filter(|r| !r.is_empty())
        .map(|r| mean(r))
        .collect();
    let k = means.len() as f64;
    if means.len() < 3 {
        return None;
    }
    let m = mean(&means);
    let s2 = means.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (k - 1.0);
    let d = mean(newest) - m;
    // A constant segment: the same value again is no change; another is not measurable.
    let p = match (s2 > 0.0, d == 0.0) {
        (true, _) => 2.0 * (1.0 - t_cdf((d / (s2 * (1.0 + 1.0 / k)).sqrt()).abs(), k - 1.0)),
        (false, true) => 1.0,
        (false, false) => return None,
    };
    Some(NewestRun {
        delta: d,
        baseline: m,
        p_value: p.clamp(0.0, 1.0),
        runs_before: means.len(),
    })
}

/// The newest run against the runs since the last change point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewestRun {
    /// Its mean minus the baseline.
    pub delta: f64,
    /// The mean of the run means since the last change point.
    pub baseline: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Runs in the baseline.
    pub runs_before: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Normal noise from a seeded generator (Box–Muller).
    fn noise(rng: &mut SplitMix) -> f64 {
        let u1 = 1.0 - (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        let u2 = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// 60 runs of 3 repetitions around 100 with 1% run noise and 0.5% repetition noise,
    /// times (1 + step) from run 40 on.
    fn series(seed: u64, step: f64) -> Vec<Vec<f64>> {
        let mut rng = SplitMix(seed);
        (0..60)
            .map(|i| {
                let level = 100.0 * if i >= 40 { 1.0 + step } else { 1.0 };
                let run = level * (1.0 + 0.01 * noise(&mut rng));
                (0..3).map(|_| run * (1.0 + 0.005 * noise(&mut rng))).collect()
            })
            .collect()
    }

    #[test]
    fn tree_sums_equal_the_direct_sums() {
        let mut rng = SplitMix(7);
        let xs: Vec<f64> = (0..300)
            .map(|i| ((rng.next() % 50) as f64) * 0.1 + (i / 100) as f64)
            .collect();
        let rank = ranks(&xs);
        let mut seen = Fenwick::new(xs.len());
        for t in 0..xs.len() {
            let direct: f64 = xs[..t].iter().map(|x| (x - xs[t]).abs()).sum();
            let tree = seen.distances(rank[t], xs[t]);
            assert!((tree - direct).abs() <= 1e-9 * direct.max(1.0), "{t}: {tree} {direct}");
            seen.insert(rank[t], xs[t]);
        }
    }

    #[test]
    fn q_by_hand() {
        // [0, 0 | 1, 1]: between = 4, within 0: Q = 2·2/4 · (2·4/4) = 2.
        let runs: Vec<&[f64]> = vec![&[0.0], &[0.0], &[1.0], &[1.0]];
        assert_eq!(best_split(&runs, 1), Some((2.0, 2)));
        // Repetitions stay together: [0, 0] [1, 1] splits only between the runs.
        let runs: Vec<&[f64]> = vec![&[0.0, 0.0], &[1.0, 1.0]];
        assert_eq!(best_split(&runs, 1), Some((2.0, 1)));
    }

    #[test]
    fn a_five_percent_step_at_run_40_is_found_there() {
        for seed in 1..=10 {
            let cps = change_points(&series(seed, 0.05), &ChangeOptions::default());
            assert!(!cps.is_empty(), "seed {seed}: none found");
            let near: Vec<_> = cps.iter().filter(|c| c.index.abs_diff(40) <= 1).collect();
            assert_eq!(near.len(), 1, "seed {seed}: {cps:?}");
            let pct = near[0].change_pct.unwrap();
            assert!((pct - 5.0).abs() < 1.0, "seed {seed}: size {pct}");
            assert!(near[0].p_value <= ALPHA);
            // No other change point than the step.
            assert_eq!(cps.len(), 1, "seed {seed}: {cps:?}");
        }
    }

    /// The false-positive rate: at most 5 of 100 unchanged series show a change point
    /// (measured 1 of 100 at α = 1%; docs/formulas.md).
    #[test]
    fn unchanged_series_rarely_show_a_change_point() {
        let false_ones = (1000..1100)
            .filter(|&seed| !change_points(&series(seed, 0.0), &ChangeOptions::default()).is_empty())
            .count();
        eprintln!("false change points: {false_ones} of 100 unchanged series");
        assert!(false_ones <= 5, "{false_ones} of 100");
    }

    #[test]
    fn the_newest_run_departing_is_seen_and_a_short_segment_cannot_tell() {
        let mut runs = series(7, 0.0);
        let cps = change_points(&runs, &ChangeOptions::default());
        let same = newest_departs(&runs, &cps).unwrap();
        assert!(same.p_value > 0.01, "{same:?}");
        runs.last_mut().unwrap().iter_mut().for_each(|v| *v *= 1.08);
        let moved = newest_departs(&runs, &cps).unwrap();
        assert!(moved.p_value < 0.001 && moved.delta > 0.0, "{moved:?}");
        assert_eq!(newest_departs(&runs[..3], &[]), None);
    }
}
