//! Exports for other programs: CSV (one row per number) and JSON (everything); the rows
//! also feed the Parquet writer.

use crate::compare::counters::{CounterBasis, CounterRow};
use crate::compare::runs::{RunComparison, TestOutcome};
use crate::compare::stats::NoiseTest;
use crate::compare::{ratio, Basis, CloneTime, FunctionDelta, Method, ProfileComparison, Significance};
use std::io::{self, Write};

/// The CSV header.
pub const CSV_HEADER: &str =
    "test,kind,name,run1,run2,delta,ratio,delta_pct_of_run1_cpu,run1_pct_of_cpu,run2_pct_of_cpu,run1_sd_pct,run2_sd_pct,noise_method,ci95,p_value,significant,listed,unit,\
verdict,q_value,noise_test,detectable_observed,detectable_true_80,share_p_value,share_q_value,share_verdict,clones,matched";

/// One CSV line, made in a buffer and written whole: 10^5 rows have 2.6 million
/// fields, each written as it is formatted.
struct Line(Vec<u8>);

impl Line {
    /// A text field, quoted when it must be.
    fn text(&mut self, s: &str) -> &mut Self {
        if s.contains([',', '"', '\n']) {
            self.0.push(b'"');
            self.0.extend_from_slice(s.replace('"', "\"\"").as_bytes());
            self.0.push(b'"');
        } else {
            self.0.extend_from_slice(s.as_bytes());
        }
        self.0.push(b',');
        self
    }

    /// A number, or nothing.
    fn num(&mut self, x: Option<f64>) -> &mut Self {
        if let Some(x) = x {
            push_f64(&mut self.0, x);
        }
        self.0.push(b',');
        self
    }

    /// `true`, `false`, or nothing.
    fn flag(&mut self, b: Option<bool>) -> &mut Self {
        self.text(match b {
            Some(true) => "true",
            Some(false) => "false",
            None => "",
        })
    }

    /// Ends the line: its last comma becomes the new line.
    fn end(&mut self) -> &[u8] {
        if let Some(last) = self.0.last_mut() {
            *last = b'\n';
        }
        &self.0
    }
}

/// Appends `x` as `{x}` writes it: the shortest digits that read back as `x`, never with
/// an exponent. zmij finds the same digits several times faster (core's formatting was a
/// tenth of upcmp's CPU time at 10^5 functions) and writes them in place for exponents
/// around zero, where the only difference is its `.0` after a whole number.
///
/// The two differ only when x lies exactly halfway between two shortest candidates:
/// zmij rounds to even, core up. Then x's exact decimal ends in 5 one place below the
/// candidates' last digit, a place of at most half an ulp (x·2^-53): x has at least 17
/// significant digits and the candidates at least 16. Core writes those that may be
/// such a tie ([`may_be_halfway`]), and zmij's exponents.
fn push_f64(buf: &mut Vec<u8>, x: f64) {
    let mut buffer = zmij::Buffer::new();
    let s = buffer.format(x);
    let s = s.strip_suffix(".0").unwrap_or(s);
    let significant = s
        .bytes()
        .skip_while(|b| matches!(b, b'-' | b'0' | b'.'))
        .filter(u8::is_ascii_digit)
        .count();
    if (significant > 15 && may_be_halfway(x)) || s.contains('e') {
        // Writing to a Vec cannot fail.
        let _ = write!(buf, "{x}");
    } else {
        buf.extend_from_slice(s.as_bytes());
    }
}

/// Whether `x` can lie halfway between two decimals of 16 or 17 significant digits:
/// only if its exact decimal has at most 18. Most values with that many digits are
/// quotients whose exact decimals have dozens, and zmij's digits are core's: checking
/// this costs a multiplication, where each of them was formatted twice.
/// x = m·2^-k with m odd has as many significant digits as m·5^k (which 10 does not
/// divide); a whole x may be a tie from 2^53 on and is left to core.
fn may_be_halfway(x: f64) -> bool {
    let bits = x.to_bits();
    let (exponent, fraction) = (((bits >> 52) & 0x7ff) as i32, bits & ((1 << 52) - 1));
    let (m, e) = match exponent {
        0 => (fraction, -1074),
        _ => (fraction | 1 << 52, exponent - 1075),
    };
    if m == 0 {
        return false;
    }
    let (m, e) = (m >> m.trailing_zeros(), e + m.trailing_zeros() as i32);
    let k = e.unsigned_abs();
    e >= 0 || (k <= 26 && u128::from(m) * 5u128.pow(k) < 10u128.pow(18))
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
        NoiseTest::Moderated => "moderated",
        NoiseTest::Dispersed => "dispersed",
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
    /// The symbols folded into a function row (its clones), with their values.
    pub clones: &'a [CloneTime],
    /// How a function row was matched across the runs when not by name alone.
    pub matched: Option<&'a str>,
}

/// The `clones` column: each symbol folded into the row with its values in run 1 and
/// run 2 (`name run1/run2`, an absent value empty), `; ` between them; none when empty.
pub fn clones_text(clones: &[CloneTime]) -> Option<String> {
    use std::fmt::Write as _;
    if clones.is_empty() {
        return None;
    }
    let mut s = String::new();
    for (k, c) in clones.iter().enumerate() {
        let v = |x: Option<f64>| x.map(|x| format!("{x}")).unwrap_or_default();
        let _ = write!(
            s,
            "{}{} {}/{}",
            if k > 0 { "; " } else { "" },
            c.name,
            v(c.run1),
            v(c.run2)
        );
    }
    Some(s)
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
            clones: &[],
            matched: None,
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
    each_row(r, &mut |rows| rows.each(&mut |row| out.push(row)));
    out
}

/// Rows of the table: one, or a test's function rows, which are most of them and made
/// apart (10^5 rows are written on every core).
// One lives at a time, handed on at once: a box would cost more than its size.
#[allow(clippy::large_enum_variant)]
enum Rows<'a> {
    One(Row<'a>),
    Functions {
        test: &'a str,
        unit: &'a str,
        rows: &'a [FunctionDelta],
    },
}

impl<'a> Rows<'a> {
    fn each(self, f: &mut dyn FnMut(Row<'a>)) {
        match self {
            Rows::One(row) => f(row),
            Rows::Functions { test, unit, rows } => rows.iter().for_each(|r| f(function_row(test, unit, r))),
        }
    }
}

/// Gives `f` the rows of [`rows`], in order.
fn each_row<'a>(r: &'a RunComparison, f: &mut dyn FnMut(Rows<'a>)) {
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
            f(Rows::One(match &b.noise {
                Some(n) => row.with_noise(n),
                // One run a side: nothing tested.
                None => Row {
                    verdict: Some("n/a"),
                    ..row
                },
            }));
        }
        each_profile_row(&t.name, profile, f);
        each_counter_row(&t.name, counters, f);
    }
}

/// Gives `f` one row per counter of a test (`kind` `counter`): the tested values (per
/// operation when the unit is `/op`, else over the test), their ratio and test.
fn each_counter_row<'a>(test: &'a str, counters: &'a [CounterRow], f: &mut dyn FnMut(Rows<'a>)) {
    for c in counters {
        f(Rows::One(Row {
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
        }));
    }
}

/// One profile comparison's summary and function rows, with `test` as their test.
pub fn profile_rows<'a>(test: &'a str, profile: &'a ProfileComparison, out: &mut Vec<Row<'a>>) {
    each_profile_row(test, profile, &mut |rows| rows.each(&mut |row| out.push(row)));
}

/// Gives `f` the rows of [`profile_rows`], one by one.
fn each_profile_row<'a>(test: &'a str, profile: &'a ProfileComparison, out: &mut dyn FnMut(Rows<'a>)) {
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
        out(Rows::One(row));
    }
    out(Rows::Functions {
        test,
        unit,
        rows: &profile.rows,
    });
}

/// A function's row: its values are written unscaled, in `unit`.
fn function_row<'a>(test: &'a str, unit: &'a str, f: &'a FunctionDelta) -> Row<'a> {
    Row {
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
        clones: &f.clones,
        matched: f.matched.as_deref(),
        ..Row::new(test, "function", &f.function).with_noise(&f.noise)
    }
}

fn write_rows(rows: &[Row<'_>], mut out: impl Write) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    let mut line = Line(Vec::new());
    for r in rows {
        write_row(r, &mut line, &mut out)?;
    }
    Ok(())
}

fn write_row(r: &Row<'_>, line: &mut Line, out: &mut impl Write) -> io::Result<()> {
    line.0.clear();
    line.text(r.test)
        .text(r.kind)
        .text(r.name)
        .num(r.run1)
        .num(r.run2)
        .num(r.delta)
        .num(r.ratio)
        .num(r.delta_pct_of_run1_cpu)
        .num(r.run1_pct_of_cpu)
        .num(r.run2_pct_of_cpu)
        .num(r.run1_sd_pct)
        .num(r.run2_sd_pct)
        .text(r.noise_method.unwrap_or_default())
        .num(r.ci95)
        .num(r.p_value)
        .flag(r.significant)
        .flag(r.listed)
        .text(r.unit)
        .text(r.verdict.unwrap_or_default())
        .num(r.q_value)
        .text(r.noise_test.unwrap_or_default())
        .num(r.detectable_observed)
        .num(r.detectable_true_80)
        .num(r.share_p_value)
        .num(r.share_q_value)
        .text(r.share_verdict.unwrap_or_default())
        .text(clones_text(r.clones).as_deref().unwrap_or_default())
        .text(r.matched.unwrap_or_default());
    out.write_all(line.end())
}

/// Writes every benchmark value, summary line and function of every test as CSV rows
/// (`kind` is `bench`, `summary` or `function`; seconds for times).
pub fn write_csv(r: &RunComparison, mut out: impl Write) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    // Row by row, and function rows a block at a time: the rows of 10^5 functions
    // would be 30 MB at once.
    let mut written = Ok(());
    let mut line = Line(Vec::new());
    each_row(r, &mut |rows| {
        if written.is_ok() {
            written = match rows {
                Rows::One(row) => write_row(&row, &mut line, &mut out),
                Rows::Functions { test, unit, rows } => super::write_blocks(rows, &mut out, |_, block, text| {
                    let mut line = Line(Vec::new());
                    block
                        .iter()
                        .try_for_each(|f| write_row(&function_row(test, unit, f), &mut line, text))
                }),
            };
        }
    });
    written
}

/// Writes the whole comparison as JSON, indented down to the tables' rows, each row
/// (a function, a benchmark value, a counter) on one line.
///
/// The function rows are written apart, in blocks ([`super::write_blocks`]), into the text of
/// the comparison without them, where each test's `"rows": []` is: no JSON string can
/// hold those bytes (its quotes are escaped), so only a key can. Should another key of
/// that name ever hold an empty list, the places would not match the tests, and the
/// comparison is written whole.
pub fn write_json(r: &RunComparison, mut out: impl Write) -> io::Result<()> {
    const HOLE: &[u8] = b"\"rows\": []";
    // root → tests → test → outcome → profile → rows → a row.
    const DEPTH: usize = 6;
    let rows: Vec<&[FunctionDelta]> = r.function_rows().flatten().collect();
    let mut rest = Vec::new();
    write_rows_per_line(&r.without_function_rows(), DEPTH, &mut rest)?;
    let holes: Vec<usize> = memchr::memmem::find_iter(&rest, HOLE).collect();
    if holes.len() != rows.len() {
        return write_rows_per_line(r, DEPTH, out);
    }
    let mut at = 0;
    for (hole, rows) in holes.into_iter().zip(rows).filter(|(_, rows)| !rows.is_empty()) {
        // The key's line is indented as its object's fields; the rows one level more.
        let indent = rest[..hole].iter().rev().take_while(|&&b| b == b' ').count();
        out.write_all(&rest[at..hole])?;
        out.write_all(b"\"rows\": [")?;
        super::write_blocks(rows, &mut out, |first, block, text| {
            for (k, row) in block.iter().enumerate() {
                if first + k > 0 {
                    text.push(b',');
                }
                text.push(b'\n');
                text.resize(text.len() + indent + 2, b' ');
                push_function_row(text, row)?;
            }
            Ok(())
        })?;
        write!(out, "\n{:indent$}]", "")?;
        at = hole + HOLE.len();
    }
    out.write_all(&rest[at..])
}

/// A function row of results.json as `serde_json::to_writer` writes it, made by hand: its
/// keys need no escape and its numbers go to zmij directly, where serde_json escaped every
/// key again for each of 10^5 rows (upcmp's CPU time at 10^5 functions 0.58 s -> 0.53
/// s). Strings and enums are written by serde, so their names have one source; a test
/// holds the whole row to serde_json's text for rows of every shape, and fails when a
/// field is added to the row or its tests without being added here.
fn push_function_row(b: &mut Vec<u8>, f: &FunctionDelta) -> io::Result<()> {
    let mut o = JsonObject(b, b'{');
    push_serde(o.key("function"), &f.function)?;
    push_json_opt(o.key("run1"), f.run1);
    push_json_opt(o.key("run2"), f.run2);
    push_json_f64(o.key("delta"), f.delta);
    push_json_f64(o.key("delta_pct_of_run1_cpu"), f.delta_pct_of_run1_cpu);
    push_json_f64(o.key("run1_pct_of_cpu"), f.run1_pct_of_cpu);
    push_json_f64(o.key("run2_pct_of_cpu"), f.run2_pct_of_cpu);
    push_json_opt(o.key("run1_sd_pct"), f.run1_sd_pct);
    push_json_opt(o.key("run2_sd_pct"), f.run2_sd_pct);
    push_significance(o.key("noise"), &f.noise)?;
    push_significance(o.key("share_noise"), &f.share_noise)?;
    push_serde(o.key("above_cutoff"), &f.above_cutoff)?;
    push_serde(o.key("listed"), &f.listed)?;
    o.end();
    Ok(())
}

fn push_significance(b: &mut Vec<u8>, s: &Significance) -> io::Result<()> {
    let mut o = JsonObject(b, b'{');
    push_serde(o.key("method"), &s.method)?;
    push_serde(o.key("test"), &s.test)?;
    push_serde(o.key("not_tested"), &s.not_tested)?;
    push_json_f64(o.key("delta"), s.delta);
    push_json_opt(o.key("se"), s.se);
    push_json_opt(o.key("df"), s.df);
    push_json_opt(o.key("ci95"), s.ci95);
    push_json_opt(o.key("p_value"), s.p_value);
    push_json_opt(o.key("q_value"), s.q_value);
    push_serde(o.key("sampling_only"), &s.sampling_only)?;
    push_serde(o.key("significant"), &s.significant)?;
    push_serde(o.key("verdict"), &s.verdict)?;
    match s.detectable {
        Some(d) => {
            let mut inner = JsonObject(o.key("detectable"), b'{');
            push_json_f64(inner.key("observed"), d.observed);
            push_json_f64(inner.key("true_change_80"), d.true_change_80);
            inner.end();
        }
        None => o.key("detectable").extend_from_slice(b"null"),
    }
    push_json_opt(o.key("level"), s.level);
    o.end();
    Ok(())
}

/// A compact JSON object made key by key; the byte before the next key (`{`, then `,`).
struct JsonObject<'b>(&'b mut Vec<u8>, u8);

impl JsonObject<'_> {
    /// Writes `key` (a field's name: nothing to escape) and gives the text for its value.
    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        self.0.push(self.1);
        self.1 = b',';
        self.0.push(b'"');
        self.0.extend_from_slice(key.as_bytes());
        self.0.extend_from_slice(b"\":");
        self.0
    }

    fn end(self) {
        self.0.push(b'}');
    }
}

/// A value written by serde_json (a string, an enum, a flag): its escapes and its names
/// have one source.
fn push_serde(b: &mut Vec<u8>, v: &impl serde::Serialize) -> io::Result<()> {
    serde_json::to_writer(b, v).map_err(io::Error::other)
}

/// A number as serde_json writes it: zmij's shortest digits, null when not finite.
fn push_json_f64(b: &mut Vec<u8>, x: f64) {
    if x.is_finite() {
        b.extend_from_slice(zmij::Buffer::new().format_finite(x).as_bytes());
    } else {
        b.extend_from_slice(b"null");
    }
}

fn push_json_opt(b: &mut Vec<u8>, x: Option<f64>) {
    match x {
        Some(x) => push_json_f64(b, x),
        None => b.extend_from_slice(b"null"),
    }
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
    use crate::compare::runs::TestComparison;

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
        // Core is asked only where a tie can be: a quotient's exact decimal is long.
        assert!(may_be_halfway(582_642_009_338_321.0 + 0.25) && may_be_halfway(2f64.powi(60)));
        assert!(!may_be_halfway(13.339200000018437) && !may_be_halfway(1.0 / 3.0) && !may_be_halfway(0.0));
        let mut buf = Vec::new();
        for v in values {
            buf.clear();
            push_f64(&mut buf, v);
            assert_eq!(std::str::from_utf8(&buf).unwrap(), format!("{v}"), "{:#x}", v.to_bits());
        }
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

    /// A comparison of `functions` functions in two recordings, its two profiles
    /// parsed from prfout text.
    fn recordings(functions: usize, note: &str) -> RunComparison {
        use crate::compare::imported::compare_imported;
        use crate::compare::CompareOptions;
        let profile = |seed: u64| {
            let mut text = format!(
                "upcmp-prfout 1\ntest t\nevent cpu-clock\nperiod-sec 0.001\ncpus 1\nwall-sec 1000\nidle-set idle\n\
                 cpu 0 samples {} lost 0 throttled 0\nfunctions {functions}\n",
                (0..functions as u64).map(|k| 1 + (k * seed) % 97).sum::<u64>()
            );
            for k in 0..functions as u64 {
                text += &format!("{} [kernel] f{k}\"{note}\n", 1 + (k * seed) % 97);
            }
            crate::store::prfout::parse(&(text + "end\n"), "t").unwrap()
        };
        let opts = CompareOptions::new(0.0, None);
        compare_imported("a".as_ref(), &profile(7), "b".as_ref(), &profile(11), &opts)
    }

    // The function rows are written in blocks, and into the rest of results.json where
    // each test's rows are: the text is the comparison's written whole.
    #[test]
    fn rows_written_apart_make_the_same_files() {
        let mut r = recordings(
            super::super::BLOCK * super::super::BLOCKS_AT_ONCE * 2 + 3,
            "\"rows\": []",
        );
        let compared = r.tests[0].clone();
        let empty = recordings(0, "").tests.remove(0);
        r.tests.push(TestComparison {
            name: "only".into(),
            outcome: TestOutcome::OnlyIn {
                run: 2,
                dir: "b/only".into(),
            },
        });
        r.tests.push(empty);
        r.tests.push(compared);
        r.warnings.push("a warning that says \"rows\": [] too".into());
        let (mut apart, mut whole) = (Vec::new(), Vec::new());
        write_json(&r, &mut apart).unwrap();
        write_rows_per_line(&r, 6, &mut whole).unwrap();
        assert!(apart.len() > 3 * 1024 * 1024, "{}", apart.len());
        assert!(apart == whole, "results.json differs from the comparison written whole");
        let (mut apart, mut whole) = (Vec::new(), Vec::new());
        write_csv(&r, &mut apart).unwrap();
        write_rows(&rows(&r), &mut whole).unwrap();
        assert_eq!(String::from_utf8(apart).unwrap(), String::from_utf8(whole).unwrap());
    }

    // results.json's function rows are written by hand: as serde_json writes them, for
    // rows of every shape (each enum's variants, absent and odd numbers, names to escape).
    #[test]
    fn function_rows_are_written_as_serde_json_writes_them() {
        use crate::compare::stats::{Detectable, Mark, Method, NoiseTest, NotTested};
        let numbers = [
            None,
            Some(0.0),
            Some(-0.0),
            Some(1.0),
            Some(13.339200000018437),
            Some(1e-300),
            Some(-2.5e21),
            Some(f64::NAN),
            Some(f64::INFINITY),
        ];
        let tests = [
            None,
            Some(NoiseTest::ExactCounts),
            Some(NoiseTest::NormalCounts),
            Some(NoiseTest::Welch),
            Some(NoiseTest::OneVsMany),
        ];
        let why = [
            None,
            Some(NotTested::SingleRuns),
            Some(NotTested::NoVariance),
            Some(NotTested::NoValues),
        ];
        let marks = [
            Mark::Significant,
            Mark::SamplingOnly,
            Mark::Noise,
            Mark::NotTested,
            Mark::BelowCutoff,
        ];
        let names = [
            "f",
            "a \"quoted\" name",
            "tab\tname",
            "\u{1}",
            "ünï [module]",
            "back\\slash",
            "",
        ];
        let n = |k: usize| numbers[k % numbers.len()];
        let noise = |k: usize| Significance {
            method: [Method::Welch, Method::SamplingError][k % 2],
            test: tests[k % tests.len()],
            not_tested: why[k % why.len()],
            delta: n(k + 1).unwrap_or(0.5),
            se: n(k + 2),
            df: n(k + 3),
            ci95: n(k + 4),
            p_value: n(k + 5),
            q_value: n(k + 6),
            sampling_only: k % 3 == 0,
            significant: k % 5 == 0,
            verdict: marks[k % marks.len()],
            detectable: (k % 4 != 0).then(|| Detectable {
                observed: n(k + 7).unwrap_or(2.0),
                true_change_80: n(k + 8).unwrap_or(-3.0),
            }),
            level: n(k + 9),
            growth: Default::default(),
            welch_sides: None,
        };
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for k in 0..2000 {
            let row = FunctionDelta {
                function: names[k % names.len()].to_string(),
                run1: n(k),
                run2: n(k / 3),
                delta: n(k / 5).unwrap_or(1.5),
                delta_pct_of_run1_cpu: n(k / 7).unwrap_or(0.0),
                run1_pct_of_cpu: n(k + 3).unwrap_or(7.0),
                run2_pct_of_cpu: n(k + 4).unwrap_or(8.0),
                run1_sd_pct: n(k / 11),
                run2_sd_pct: n(k / 13),
                noise: noise(k),
                share_noise: noise(k / 17 + 1),
                above_cutoff: k % 2 == 0,
                listed: k % 6 == 0,
                clones: Vec::new(),
                matched: None,
            };
            ours.clear();
            push_function_row(&mut ours, &row).unwrap();
            theirs.clear();
            serde_json::to_writer(&mut theirs, &row).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs),
                "row {k}"
            );
        }
    }
}
