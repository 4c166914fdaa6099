//! Annotated functions (`--annotate FUNC`): the text after the function table, CSV rows
//! and JSON (`docs/annotate.md`, `docs/format.md`). Every name and source line is
//! escaped before it is printed.

use crate::compare::annotate::{Annotation, LineRow};
use crate::model::escaped;
use std::io::{self, Write};

/// The CSV header of `results.annotate.csv` (and `prfcmp --annotate --format csv`).
pub const CSV_HEADER: &str =
    "function,kind,side,file,line1,line2,offset,function_of_line,inlined_into,samples1,samples2,\
seconds1,seconds2,delta,share_of_delta,verdict,p_value,q_value,noise_test,text";

fn where_of(r: &LineRow) -> String {
    let n = |l: Option<u32>| l.map_or_else(|| "-".to_string(), |l| l.to_string());
    match r.lines {
        [a, b] if a == b => format!("{}:{}", escaped(&r.file), n(a)),
        [a, b] => format!("{}:{}/{}", escaped(&r.file), n(a), n(b)),
    }
}

/// The text of the annotations, one block per function (through
/// [`super::format::for_people`]: a disassembled instruction or a source line is foreign
/// text too).
pub fn write_text(annotations: &[Annotation], out: &mut impl Write) -> io::Result<()> {
    super::format::for_people(out, |w| write_blocks(annotations, w))
}

fn write_blocks(annotations: &[Annotation], out: &mut dyn Write) -> io::Result<()> {
    for a in annotations {
        writeln!(out)?;
        writeln!(
            out,
            "Annotation of {} ({})",
            escaped(&a.function),
            if a.same_build {
                "one build: instructions matched by offset"
            } else {
                "two builds: lines matched by source line"
            }
        )?;
        for m in &a.missing {
            writeln!(out, "  missing: {}", escaped(m))?;
        }
        for n in &a.notes {
            writeln!(out, "  note: {}", escaped(n))?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "{:<28} {:>8} {:>8} {:>9} {:>9} {:>9} {:>7}  {:<13} {:>8}  Line",
            "Source line (run 1/run 2)",
            "Samples1",
            "Samples2",
            "Run 1 s",
            "Run 2 s",
            "Delta s",
            "%delta",
            "Verdict",
            "q"
        )?;
        for r in &a.lines {
            let share = r
                .share_of_delta
                .map_or_else(|| "-".into(), |s| format!("{:.1}", 100.0 * s));
            let q = r.q_value.map_or_else(|| "-".into(), |q| format!("{q:.2e}"));
            let whose = match &r.inlined_into {
                Some(into) => format!("{}, inlined into {}", escaped(&r.function), escaped(into)),
                None => escaped(&r.function).into_owned(),
            };
            writeln!(
                out,
                "{:<28} {:>8} {:>8} {:>9.3} {:>9.3} {:>+9.3} {:>7}  {:<13} {:>8}  [{}] {}",
                where_of(r),
                r.samples[0],
                r.samples[1],
                r.seconds[0],
                r.seconds[1],
                r.delta,
                share,
                r.verdict.verdict.word(),
                q,
                whose,
                escaped(r.text.as_deref().unwrap_or("").trim())
            )?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "{:<5} {:>7} {:>8} {:>8} {:>9}  {:<20} Instruction",
            "Run", "Offset", "Samples1", "Samples2", "Delta s", "Line"
        )?;
        for i in &a.instructions {
            let side = if a.same_build {
                "1,2".to_string()
            } else {
                (i.side + 1).to_string()
            };
            let line = i.line.as_ref().map_or_else(String::new, |(f, l)| {
                format!("{}:{l}", escaped(f.rsplit('/').next().unwrap_or(f)))
            });
            let delta = i.delta.map_or_else(|| "-".into(), |d| format!("{d:+.3}"));
            writeln!(
                out,
                "{:<5} {:>#7x} {:>8} {:>8} {:>9}  {:<20} {}",
                side, i.offset, i.samples[0], i.samples[1], delta, line, i.text
            )?;
        }
    }
    Ok(())
}

/// A CSV field, quoted when it must be.
fn field(out: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
    out.push(',');
}

/// One CSV row per line and per instruction of each annotation, after [`CSV_HEADER`].
pub fn write_csv(annotations: &[Annotation], out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    let opt = |x: Option<String>| x.unwrap_or_default();
    for a in annotations {
        for r in &a.lines {
            let mut l = String::new();
            field(&mut l, &a.function);
            field(&mut l, "line");
            field(&mut l, "");
            field(&mut l, &r.file);
            field(&mut l, &opt(r.lines[0].map(|x| x.to_string())));
            field(&mut l, &opt(r.lines[1].map(|x| x.to_string())));
            field(&mut l, "");
            field(&mut l, &r.function);
            field(&mut l, r.inlined_into.as_deref().unwrap_or(""));
            field(&mut l, &r.samples[0].to_string());
            field(&mut l, &r.samples[1].to_string());
            field(&mut l, &r.seconds[0].to_string());
            field(&mut l, &r.seconds[1].to_string());
            field(&mut l, &r.delta.to_string());
            field(&mut l, &opt(r.share_of_delta.map(|x| x.to_string())));
            field(&mut l, r.verdict.verdict.word());
            field(&mut l, &opt(r.verdict.p_value.map(|x| x.to_string())));
            field(&mut l, &opt(r.q_value.map(|x| x.to_string())));
            field(
                &mut l,
                &opt(r
                    .verdict
                    .test
                    .and_then(|t| serde_json::to_value(t).ok()?.as_str().map(str::to_string))),
            );
            field(&mut l, r.text.as_deref().unwrap_or(""));
            l.pop();
            writeln!(out, "{l}")?;
        }
        for i in &a.instructions {
            let mut l = String::new();
            field(&mut l, &a.function);
            field(&mut l, "instruction");
            field(&mut l, &(i.side + 1).to_string());
            let (file, line) = i.line.clone().unwrap_or_default();
            field(&mut l, &file);
            field(&mut l, &if i.side == 0 { line.to_string() } else { String::new() });
            field(&mut l, &if i.side == 1 { line.to_string() } else { String::new() });
            field(&mut l, &format!("{:#x}", i.offset));
            for _ in 0..2 {
                field(&mut l, "");
            }
            field(&mut l, &i.samples[0].to_string());
            field(&mut l, &i.samples[1].to_string());
            field(&mut l, &i.seconds[0].to_string());
            field(&mut l, &i.seconds[1].to_string());
            field(&mut l, &opt(i.delta.map(|x| x.to_string())));
            for _ in 0..5 {
                field(&mut l, "");
            }
            field(&mut l, &i.text);
            l.pop();
            writeln!(out, "{l}")?;
        }
    }
    Ok(())
}

/// The annotations as JSON: `{"annotate": [...]}`.
pub fn write_json(annotations: &[Annotation], out: &mut impl Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &serde_json::json!({ "annotate": annotations }))?;
    writeln!(out)
}
