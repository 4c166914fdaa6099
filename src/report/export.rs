//! Exports for other programs: CSV (one row per number) and JSON (everything); the rows
//! also feed the Parquet writer.

use crate::compare::counters::{CounterBasis, CounterRow};
use crate::compare::runs::{RunComparison, TestOutcome};
use crate::compare::stats::NoiseTest;
use crate::compare::{ratio, Basis, Method, ProfileComparison, Significance};
use std::io::{self, Write};

/// The CSV header.
pub const CSV_HEADER: &str =
    "test,kind,name,run1,run2,delta,ratio,delta_pct_of_run1_cpu,run1_pct_of_cpu,run2_pct_of_cpu,run1_sd_pct,run2_sd_pct,noise_method,ci95,p_value,significant,listed,unit,\
verdict,q_value,noise_test,detectable_observed,detectable_true_80,share_p_value,share_q_value,share_verdict";

/// A CSV field, quoted when it must be. The CSV's fields are written as they are
/// formatted, without a string each: 10^5 rows have 2.6 million of them.
struct Field<'a>(&'a str);

impl std::fmt::Display for Field<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.contains([',', '"', '\n']) {
            write!(f, "\"{}\"", self.0.replace('"', "\"\""))
        } else {
            f.write_str(self.0)
        }
    }
}

fn field(s: &str) -> Field<'_> {
    Field(s)
}

/// A number, or nothing.
struct Num(Option<f64>);

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(x) => write_f64(f, x),
            None => Ok(()),
        }
    }
}

/// Writes `x` as `{x}` does: the shortest digits that read back as `x`, never with an
/// exponent. zmij finds the same digits several times faster (core's formatting was a
/// tenth of upcmp's CPU time at 10^5 functions) and writes them in place for exponents
/// around zero, where the only difference is its `.0` after a whole number.
///
/// The two differ only when x lies exactly halfway between two shortest candidates:
/// zmij rounds to even, core up. Then x's exact decimal ends in 5 one place below the
/// candidates' last digit, a place of at most half an ulp (x·2^-53): x has at least 17
/// significant digits and the candidates at least 16. Core writes those, and zmij's
/// exponents.
fn write_f64(f: &mut std::fmt::Formatter<'_>, x: f64) -> std::fmt::Result {
    let mut buffer = zmij::Buffer::new();
    let s = buffer.format(x);
    let s = s.strip_suffix(".0").unwrap_or(s);
    let significant = s
        .bytes()
        .skip_while(|b| matches!(b, b'-' | b'0' | b'.'))
        .filter(u8::is_ascii_digit)
        .count();
    if significant > 15 || s.contains('e') {
        write!(f, "{x}")
    } else {
        f.write_str(s)
    }
}

fn num(x: Option<f64>) -> Num {
    Num(x)
}

fn flag(b: Option<bool>) -> Flag {
    Flag(b)
}

/// `true`, `false`, or nothing.
struct Flag(Option<bool>);

impl std::fmt::Display for Flag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(b) => write!(f, "{b}"),
            None => Ok(()),
        }
    }
}

fn method(m: Method) -> &'static str {
    match m {
        Method::Welch => "welch",
        Method::SamplingError => "sampling_error",
    }
}

fn test_name(t: NoiseTest) -> &'static str {
    match t {
        NoiseTest::ExactCounts => "exact_counts",
        NoiseTest::NormalCounts => "normal_counts",
        NoiseTest::Welch => "welch",
        NoiseTest::OneVsMany => "one_vs_many",
    }
}

/// One row of the machine-readable table: a benchmark value, a summary line or a function
/// of one test. CSV and Parquet both write these, so they carry the same columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Row<'a> {
    /// The test.
    pub test: &'a str,
    /// `bench`, `summary` or `function`.
    pub kind: &'static str,
    /// The benchmark's description, the summary line's key or the function.
    pub name: &'a str,
    /// Run 1's value (seconds for times).
    pub run1: Option<f64>,
    /// Run 2's value.
    pub run2: Option<f64>,
    /// run2 - run1 (summary and function rows).
    pub delta: Option<f64>,
    /// run2 / run1 for summary lines; the speed ratio for benchmarks.
    pub ratio: Option<f64>,
    /// The delta as % of run 1's CPU time (function rows).
    pub delta_pct_of_run1_cpu: Option<f64>,
    /// The function's share of run 1's CPU time (%).
    pub run1_pct_of_cpu: Option<f64>,
    /// The function's share of run 2's CPU time (%).
    pub run2_pct_of_cpu: Option<f64>,
    /// Run 1's standard deviation across repetitions, % of its mean.
    pub run1_sd_pct: Option<f64>,
    /// Run 2's standard deviation across repetitions, % of its mean.
    pub run2_sd_pct: Option<f64>,
    /// `welch` or `sampling_error`.
    pub noise_method: Option<&'static str>,
    /// Half-width of the 95% confidence interval of the delta.
    pub ci95: Option<f64>,
    /// p-value of the delta.
    pub p_value: Option<f64>,
    /// Whether the delta is significant at 95%.
    pub significant: Option<bool>,
    /// Whether the text report lists the function (above the cutoff).
    pub listed: Option<bool>,
    /// The unit of run1, run2 and delta: `sec`, `/sec` (a rate), the sampled event's
    /// name for its counts, `%` for shares; empty for counts of CPUs and repetitions.
    pub unit: &'a str,
    /// What the report prints: `significant`, `sampling only`, `noise`, `n/a`, or
    /// `below cutoff` (tested, in no family).
    pub verdict: Option<&'static str>,
    /// The p-value adjusted in the row's family (BH q-value, or Holm).
    pub q_value: Option<f64>,
    /// The test that decided: `exact_counts`, `normal_counts`, `welch`, `one_vs_many`.
    pub noise_test: Option<&'static str>,
    /// The observed change below which the delta is not significant at 95% (X).
    pub detectable_observed: Option<f64>,
    /// The true change detected 80% of the time (Y).
    pub detectable_true_80: Option<f64>,
    /// The p-value of the function's share of CPU samples.
    pub share_p_value: Option<f64>,
    /// Its BH q-value over the shares of the rows above the cutoff.
    pub share_q_value: Option<f64>,
    /// Its verdict.
    pub share_verdict: Option<&'static str>,
}

impl<'a> Row<'a> {
    fn new(test: &'a str, kind: &'static str, name: &'a str) -> Self {
        Row {
            test,
            kind,
            name,
            run1: None,
            run2: None,
            delta: None,
            ratio: None,
            delta_pct_of_run1_cpu: None,
            run1_pct_of_cpu: None,
            run2_pct_of_cpu: None,
            run1_sd_pct: None,
            run2_sd_pct: None,
            noise_method: None,
            ci95: None,
            p_value: None,
            significant: None,
            listed: None,
            unit: "",
            verdict: None,
            q_value: None,
            noise_test: None,
            detectable_observed: None,
            detectable_true_80: None,
            share_p_value: None,
            share_q_value: None,
            share_verdict: None,
        }
    }

    /// The row with the columns of the test `n`.
    fn with_noise(self, n: &Significance) -> Self {
        Row {
            noise_method: Some(method(n.method)),
            ci95: n.ci95,
            p_value: n.p_value,
            significant: Some(n.significant),
            verdict: Some(n.verdict.word()),
            q_value: n.q_value,
            noise_test: n.test.map(test_name),
            detectable_observed: n.detectable.map(|d| d.observed),
            detectable_true_80: n.detectable.map(|d| d.true_change_80),
            ..self
        }
    }
}

/// Every benchmark value, summary line and function of every compared test.
pub fn rows(r: &RunComparison) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    each_row(r, &mut |row| out.push(row));
    out
}

/// Gives `f` the rows of [`rows`], one by one.
fn each_row<'a>(r: &'a RunComparison, f: &mut dyn FnMut(Row<'a>)) {
    for t in &r.tests {
        let TestOutcome::Compared {
            bench,
            profile,
            counters,
            ..
        } = &t.outcome
        else {
            continue;
        };
        for b in bench {
            let row = Row {
                run1: b.run1,
                run2: b.run2,
                ratio: b.speed_ratio,
                run1_sd_pct: b.sd_pct(1),
                run2_sd_pct: b.sd_pct(2),
                unit: &b.unit,
                ..Row::new(&t.name, "bench", &b.description)
            };
            f(match &b.noise {
                Some(n) => row.with_noise(n),
                // One run a side: nothing tested.
                None => Row {
                    verdict: Some("n/a"),
                    ..row
                },
            });
        }
        each_profile_row(&t.name, profile, f);
        each_counter_row(&t.name, counters, f);
    }
}

/// Gives `f` one row per counter of a test (`kind` `counter`): the tested values (per
/// operation when the unit is `/op`, else over the test), their ratio and test.
fn each_counter_row<'a>(test: &'a str, counters: &'a [CounterRow], f: &mut dyn FnMut(Row<'a>)) {
    for c in counters {
        f(Row {
            run1: c.run1,
            run2: c.run2,
            delta: c.run1.zip(c.run2).map(|(a, b)| b - a),
            ratio: c.run1.zip(c.run2).and_then(|(a, b)| ratio(a, b)),
            run1_sd_pct: c.run1_sd_pct,
            run2_sd_pct: c.run2_sd_pct,
            listed: Some(c.listed),
            unit: match c.basis {
                CounterBasis::PerOperation => "/op",
                CounterBasis::PerTest => "count",
                CounterBasis::Ratio => "ratio",
            },
            ..Row::new(test, "counter", &c.name).with_noise(&c.noise)
        });
    }
}

/// One profile comparison's summary and function rows, with `test` as their test.
pub fn profile_rows<'a>(test: &'a str, profile: &'a ProfileComparison, out: &mut Vec<Row<'a>>) {
    each_profile_row(test, profile, &mut |row| out.push(row));
}

/// Gives `f` the rows of [`profile_rows`], one by one.
fn each_profile_row<'a>(test: &'a str, profile: &'a ProfileComparison, out: &mut dyn FnMut(Row<'a>)) {
    let (a, c) = (&profile.run1, &profile.run2);
    // Values are written unscaled: seconds, an event's count, or a share.
    let unit = match profile.measure.basis {
        Basis::EventCount => a.event.as_str(),
        _ => profile.measure.unit.as_str(),
    };
    let summary = [
        ("cpus", f64::from(a.cpus), f64::from(c.cpus)),
        ("repetitions", a.repetitions as f64, c.repetitions as f64),
        ("elapsed", a.elapsed_sec, c.elapsed_sec),
        ("idle", a.idle, c.idle),
        ("cpu", a.cpu, c.cpu),
        ("lost", a.lost, c.lost),
    ];
    for (k, x, y) in summary {
        let mut row = Row {
            run1: Some(x),
            run2: Some(y),
            delta: Some(y - x),
            ratio: ratio(x, y),
            unit: match k {
                "cpus" | "repetitions" => "",
                "elapsed" => "sec",
                _ => unit,
            },
            ..Row::new(test, "summary", k)
        };
        if k == "cpu" {
            // A run of one has no spread: None, an empty field.
            row.run1_sd_pct = a.cpu_sd_pct;
            row.run2_sd_pct = c.cpu_sd_pct;
            row = row.with_noise(&profile.cpu_noise);
        }
        out(row);
    }
    for f in &profile.rows {
        out(Row {
            run1: f.run1,
            run2: f.run2,
            delta: Some(f.delta),
            delta_pct_of_run1_cpu: Some(f.delta_pct_of_run1_cpu),
            run1_pct_of_cpu: Some(f.run1_pct_of_cpu),
            run2_pct_of_cpu: Some(f.run2_pct_of_cpu),
            run1_sd_pct: f.run1_sd_pct,
            run2_sd_pct: f.run2_sd_pct,
            listed: Some(f.listed),
            unit,
            share_p_value: f.share_noise.p_value,
            share_q_value: f.share_noise.q_value,
            share_verdict: Some(f.share_noise.verdict.word()),
            ..Row::new(test, "function", &f.function).with_noise(&f.noise)
        });
    }
}

fn write_rows(rows: &[Row<'_>], mut out: impl Write) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    for r in rows {
        write_row(r, &mut out)?;
    }
    Ok(())
}

fn write_row(r: &Row<'_>, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        field(r.test),
        r.kind,
        field(r.name),
        num(r.run1),
        num(r.run2),
        num(r.delta),
        num(r.ratio),
        num(r.delta_pct_of_run1_cpu),
        num(r.run1_pct_of_cpu),
        num(r.run2_pct_of_cpu),
        num(r.run1_sd_pct),
        num(r.run2_sd_pct),
        r.noise_method.unwrap_or_default(),
        num(r.ci95),
        num(r.p_value),
        flag(r.significant),
        flag(r.listed),
        field(r.unit),
        r.verdict.unwrap_or_default(),
        num(r.q_value),
        r.noise_test.unwrap_or_default(),
        num(r.detectable_observed),
        num(r.detectable_true_80),
        num(r.share_p_value),
        num(r.share_q_value),
        r.share_verdict.unwrap_or_default()
    )
}

/// Writes every benchmark value, summary line and function of every test as CSV rows
/// (`kind` is `bench`, `summary` or `function`; seconds for times).
pub fn write_csv(r: &RunComparison, mut out: impl Write) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    // Row by row: the rows of 10^5 functions would be 30 MB at once.
    let mut written = Ok(());
    each_row(r, &mut |row| {
        if written.is_ok() {
            written = write_row(&row, &mut out);
        }
    });
    written
}

/// Writes the whole comparison as JSON, indented down to the tables' rows, each row
/// (a function, a benchmark value, a counter) on one line.
pub fn write_json(r: &RunComparison, out: impl Write) -> io::Result<()> {
    // root → tests → test → outcome → profile → rows → a row.
    write_rows_per_line(r, 6, out)
}

/// `value` as JSON, indented as serde_json's pretty printer does for containers at most
/// `depth` deep (the top one is 1) and compact below: 10^5 function rows indented field
/// by field would be half white space (174 MB of it) and hard to grep.
fn write_rows_per_line(value: &impl serde::Serialize, depth: usize, mut out: impl Write) -> io::Result<()> {
    let f = RowsPerLine {
        pretty: depth,
        depth: 0,
        has_value: false,
    };
    let mut ser = serde_json::Serializer::with_formatter(&mut out, f);
    value.serialize(&mut ser).map_err(io::Error::other)?;
    writeln!(out)
}

struct RowsPerLine {
    /// Containers this deep or less have one line per element.
    pretty: usize,
    depth: usize,
    has_value: bool,
}

impl RowsPerLine {
    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn element<W: ?Sized + Write>(&self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        if self.depth <= self.pretty {
            new_line(w, self.depth)?;
        }
        Ok(())
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        let closed = self.depth;
        self.depth -= 1;
        if closed <= self.pretty && self.has_value {
            new_line(w, self.depth)?;
        }
        w.write_all(bracket)
    }
}

/// A new line indented `depth` levels.
fn new_line<W: ?Sized + Write>(w: &mut W, depth: usize) -> io::Result<()> {
    w.write_all(b"\n")?;
    for _ in 0..depth {
        w.write_all(b"  ")?;
    }
    Ok(())
}

impl serde_json::ser::Formatter for RowsPerLine {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.element(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.element(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(if self.depth <= self.pretty { b": " } else { b":" })
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Writes one profile comparison (prfcmp) as CSV: the header, then its summary and
/// function rows with `test` set to `test`.
pub fn write_profile_csv(test: &str, profile: &ProfileComparison, out: &mut dyn Write) -> io::Result<()> {
    let mut rows = Vec::new();
    profile_rows(test, profile, &mut rows);
    write_rows(&rows, out)
}

/// Writes one profile comparison (prfcmp) as JSON.
pub fn write_profile_json(profile: &ProfileComparison, out: &mut dyn Write) -> io::Result<()> {
    // root → rows → a row.
    write_rows_per_line(profile, 2, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_core_writes_them() {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1 + 0.2,
            1e15,
            1e16,
            1e17,
            123456789012345680.0,
            // 582642009338321.25 and 1658206780088562.25, each halfway between two shortest
            // candidates: core rounds up, zmij to even.
            f64::from_bits(0x4300_8f47_4ffb_8e8a),
            f64::from_bits(0x4317_9085_685d_83c9),
            1e-5,
            1e-6,
            1e-7,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for _ in 0..300_000 {
            let r = next();
            // Any bit pattern; a count of samples of 1 ms; a share in %; a p-value; a
            // decimal of a few digits.
            values.push(f64::from_bits(r));
            values.push((r % 2_000_000) as f64 * 1e-3);
            values.push((r % 1_000_000) as f64 / 9_999.0);
            values.push((-((r % 100_000) as f64) / 997.0).exp());
            values.push((r % 100_000) as f64 / 10f64.powi((r >> 40) as i32 % 12));
            // From 2^48 on, where halfway cases are (582642009338321.25 is one).
            values.push(f64::from_bits(0x4310_0000_0000_0000 + (r >> 14)));
            values.push(f64::from_bits(0x4300_0000_0000_0000 + (r >> 12)));
        }
        for v in values {
            assert_eq!(Num(Some(v)).to_string(), format!("{v}"), "{:#x}", v.to_bits());
        }
        assert_eq!(Num(None).to_string(), "");
    }

    #[test]
    fn json_is_indented_down_to_the_rows_and_each_row_is_one_line() {
        let v = serde_json::json!({"a": 1, "rows": [{"f": "x", "n": {"p": 0.5}}, {"f": "y", "v": [1, 2]}], "e": [], "o": {}});
        let mut out = Vec::new();
        write_rows_per_line(&v, 2, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "{\n  \"a\": 1,\n  \"e\": [],\n  \"o\": {},\n  \"rows\": [\n    {\"f\":\"x\",\"n\":{\"p\":0.5}},\n    {\"f\":\"y\",\"v\":[1,2]}\n  ]\n}\n"
        );
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
        let mut pretty = Vec::new();
        write_rows_per_line(&v, usize::MAX, &mut pretty).unwrap();
        assert_eq!(
            String::from_utf8(pretty).unwrap(),
            format!("{}\n", serde_json::to_string_pretty(&v).unwrap()),
            "with no depth limit it is serde_json's pretty printing"
        );
    }
}
