//! Flame graphs with inferno: one test's stacks (`flame.svg`), and the differential graph
//! of two runs coloured by the change of each frame's inclusive time.

use crate::compare::stacks::{Shape, StackDiff};
use crate::compare::Mark;
use crate::model::shown::{escaped, Shown};
use crate::model::stacks::{FrameKind, StackProfile};
use inferno::flamegraph::color::{Color, PaletteMap};
use inferno::flamegraph::{self, Options, TextTruncateDirection};
use std::borrow::Cow;
use std::io::{self, Write};

/// Fill of a frame whose change is within the noise, or not tested (inferno's colour for
/// no change).
pub const NEUTRAL: Color = Color { r: 250, g: 250, b: 250 };

fn hash(name: &str) -> u32 {
    // FNV-1a: a stable colour per name from run to run.
    name.bytes()
        .fold(0x811c9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x01000193))
}

/// A frame's colour in `flame.svg`: kernel frames in warm orange, user space in blue,
/// the rest grey; the shade varies by name so neighbours stay apart.
pub fn kind_color(name: &str) -> Color {
    let v = hash(name);
    let (a, b) = ((v % 55) as u8, ((v >> 8) % 55) as u8);
    match FrameKind::of(name) {
        FrameKind::Kernel => Color {
            r: 200 + a,
            g: 110 + b,
            b: 40,
        },
        FrameKind::User => Color {
            r: 70 + a,
            g: 130 + b,
            b: 230,
        },
        FrameKind::Other => Color {
            r: 160 + a / 2,
            g: 160 + a / 2,
            b: 160 + a / 2,
        },
    }
}

/// A command's colour at the root of a stack: grey, its shade by name.
fn command_color(name: &str) -> Color {
    let a = (hash(name) % 40) as u8;
    Color {
        r: 185 + a,
        g: 185 + a,
        b: 185 + a,
    }
}

/// What a `;` in a frame name is drawn as while inferno lays out the graph: inferno splits
/// folded lines at every `;`, so a name holding one (every JVM perf-map name,
/// `Lfoo;.bar()V`) would become two frames. A Unicode noncharacter, which no symbol holds;
/// the finished SVG gets its `;` back.
const SEMICOLON_STANDIN: char = '\u{FDD0}';

/// Whether inferno would misread `name` in a folded line: a `;` splits it, a control
/// character (a newline) splits the line or cannot stand in an SVG, and a name ending in a
/// space and digits (a process named `w 1`) passes for a second count column.
fn needs_standin(name: &str) -> bool {
    let tail = name.len() - name.trim_end_matches(|c: char| c == ' ' || c.is_ascii_digit()).len();
    name.contains(';') || name.contains(char::is_control) || name[name.len() - tail..].contains(' ')
}

/// `name` as inferno is given it: its `;` replaced by [`SEMICOLON_STANDIN`], its control
/// characters escaped as every report shows them (`\x1b`), and the spaces of an end made
/// of spaces and digits made no-break spaces (drawn the same).
fn standin(name: &str) -> String {
    let name = escaped(name).replace(';', &SEMICOLON_STANDIN.to_string());
    let keep = name.trim_end_matches(|c: char| c == ' ' || c.is_ascii_digit()).len();
    let (head, tail) = name.split_at(keep);
    format!("{head}{}", tail.replace(' ', "\u{a0}"))
}

/// The finished SVG of a graph whose names held `;`: written back.
fn write_back(svg: &[u8], mut w: impl Write) -> io::Result<()> {
    let svg = String::from_utf8_lossy(svg);
    w.write_all(svg.replace(SEMICOLON_STANDIN, ";").as_bytes())
}

/// `p` with every `;` in its frame names stood in for ([`SEMICOLON_STANDIN`]).
fn without_semicolons(p: &StackProfile) -> StackProfile {
    let mut q = StackProfile::default();
    let mut frames = Vec::new();
    for (s, t) in p.tallies() {
        frames.clear();
        frames.extend(s.iter().map(|&f| q.intern(&standin(p.name(f)))));
        q.add_weighted(&frames, t.count, t.weight);
    }
    (q.samples, q.truncated, q.lost) = (p.samples, p.truncated, p.lost);
    q
}

/// What inferno is told a graph's counts are when they are summed periods: a
/// noncharacter no name holds, found in each title once drawn and replaced by the count
/// in samples ([`counts_in_samples`]).
const WEIGHT_UNIT: &str = "\u{FDD1}";

/// What the subtitle of a graph drawn from summed periods says of its widths.
pub const WEIGHT_NOTE: &str = "widths weigh each sample's period";

/// `svg` whose titles count [`WEIGHT_UNIT`]s (summed periods), each count given instead
/// in samples of the mean period (`per_weight` samples a unit), to one decimal: the
/// percentages inferno wrote beside them are of the exact weights.
fn counts_in_samples(svg: &str, per_weight: f64) -> String {
    let marker = format!(" {WEIGHT_UNIT},");
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(at) = rest.find(&marker) {
        let head = &rest[..at];
        let number = head.trim_end_matches(|c: char| c.is_ascii_digit() || c == ',');
        let units: u64 = head[number.len()..].replace(',', "").parse().unwrap_or(0);
        out.push_str(number);
        out.push_str(&thousands(units as f64 * per_weight));
        out.push_str(" samples,");
        rest = &rest[at + marker.len()..];
    }
    out.push_str(rest);
    out
}

/// `x` to one decimal, its whole part in groups of three (as inferno writes counts).
fn thousands(x: f64) -> String {
    let text = format!("{x:.1}");
    let (whole, tenths) = text.split_at(text.find('.').unwrap_or(text.len()));
    let mut out = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out + tenths
}

/// Writes the flame graph of `p`; `subtitle` carries notes such as truncated stacks. With
/// `command_roots`, each stack's root is its command (upsrun's since format 3): drawn grey,
/// neither kernel nor user code. Where the samples' periods vary, widths are their summed
/// periods ([`StackProfile::flame_lines`]), so that each frame's share is the flat
/// profile's, and the subtitle says so.
pub fn render(
    p: &StackProfile,
    title: &str,
    subtitle: Option<String>,
    command_roots: bool,
    mut w: impl Write,
) -> io::Result<()> {
    let mut svg = Vec::new();
    let by_weight = p.periods_vary();
    let subtitle = match (subtitle, by_weight) {
        (Some(s), true) => Some(format!("{s}; {WEIGHT_NOTE}")),
        (None, true) => Some(WEIGHT_NOTE.to_string()),
        (s, false) => s,
    };
    let semicolons = p.names().iter().any(|n| needs_standin(n));
    match semicolons {
        true => render_lines(&without_semicolons(p), title, subtitle, command_roots, &mut svg)?,
        false => render_lines(p, title, subtitle, command_roots, &mut svg)?,
    }
    let mut svg = patched_script(&svg)?;
    if by_weight {
        svg = counts_in_samples(&svg, p.samples_per_weight());
    }
    match semicolons {
        true => write_back(svg.as_bytes(), w),
        false => w.write_all(svg.as_bytes()),
    }
}

/// inferno's script, where a monospace font lets it count characters, labels a box with
/// room for two or three characters `..`, which names nothing: such a box is left blank,
/// as in its other (measuring) path.
const NARROW_LABEL: (&str, &str) = ("if (w < 2 * known_font_width) {", "if (w < 3 * known_font_width) {");

/// The SVG `svg` with [`NARROW_LABEL`] applied to its script.
fn patched_script(svg: &[u8]) -> io::Result<String> {
    let svg = std::str::from_utf8(svg).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    if !svg.contains(NARROW_LABEL.0) {
        let what = "inferno's SVG: its script no longer has the test of a narrow label";
        return Err(io::Error::new(io::ErrorKind::InvalidData, what));
    }
    Ok(svg.replacen(NARROW_LABEL.0, NARROW_LABEL.1, 1))
}

/// [`render`] of a profile whose frame names hold no `;`.
fn render_lines(
    p: &StackProfile,
    title: &str,
    subtitle: Option<String>,
    command_roots: bool,
    w: impl Write,
) -> io::Result<()> {
    // Frames narrower than inferno draws are cut before the lines are made.
    let (lines, by_weight) = p.flame_lines(Options::default().min_width);
    let mut palette = PaletteMap::default();
    if command_roots {
        // Colours go by name: the commands first, so that they keep theirs.
        for (s, _) in p.stacks() {
            let name = p.name(s[0]);
            if palette.get(name).is_none() {
                palette.insert(name, command_color(name));
            }
        }
    }
    for (s, _) in p.stacks() {
        for &f in s {
            let name = p.name(f);
            if palette.get(name).is_none() {
                palette.insert(name, kind_color(name));
            }
        }
    }
    let mut opts = options(title, subtitle);
    if by_weight {
        opts.count_name = WEIGHT_UNIT.into();
    }
    opts.palette_map = Some(&mut palette);
    flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), w)
}

/// inferno's options for both graphs. Labels keep the start of a name (`__seccomp_fil..`):
/// a name's tail is what kernel names share (`_filter`, `_64`).
fn options<'a>(title: &str, subtitle: Option<String>) -> Options<'a> {
    let mut opts = Options::default();
    opts.title = title.to_string();
    opts.subtitle = subtitle;
    opts.count_name = "samples".into();
    opts.text_truncate_direction = TextTruncateDirection::Right;
    opts
}

/// The fill of a node in the differential graph: red when its inclusive share grew,
/// blue when it shrank, deeper the larger the change relative to `max_delta`; neutral
/// unless the change stands out (after the graph's family adjustment).
pub fn change_color(delta_pct: f64, stands_out: bool, max_delta: f64) -> Color {
    if !stands_out || delta_pct == 0.0 || max_delta <= 0.0 {
        return NEUTRAL;
    }
    // Even the smallest real change stays visibly apart from the neutral fill.
    let c = (210.0 - 110.0 * (delta_pct.abs() / max_delta).min(1.0)) as u8;
    if delta_pct > 0.0 {
        Color { r: 255, g: c, b: c }
    } else {
        Color { r: c, g: c, b: 255 }
    }
}

/// A graph's subtitle: a short line that fits the graph's width, and the long explanation
/// shown when the pointer rests on it.
#[derive(Debug, Clone, Default)]
pub struct Subtitle {
    /// The line drawn under the title.
    pub line: String,
    /// Its tooltip.
    pub tooltip: String,
}

/// Writes the differential flame graph of `d`: widths are run 2's samples, colours the
/// change of each frame's inclusive share of CPU time (see `docs/upsrun.md`).
pub fn render_differential(d: &StackDiff, title: &str, subtitle: Option<Subtitle>, w: impl Write) -> io::Result<()> {
    render_shape(d, Shape::Run2, title, subtitle, w)
}

/// [`render_differential`] in `shape`: with [`Shape::Run1`] the widths are run 1's
/// samples, so the frames that vanished in run 2 are drawn; colours are the same.
pub fn render_shape(
    d: &StackDiff,
    shape: Shape,
    title: &str,
    subtitle: Option<Subtitle>,
    w: impl Write,
) -> io::Result<()> {
    render_cut_at(d, shape, drawn_cut(), title, subtitle, w)
}

/// `svg` with `tooltip` as the title of its subtitle.
fn with_subtitle_tooltip(svg: String, tooltip: &str) -> String {
    let Some(at) = svg.find("<text id=\"subtitle\"") else {
        return svg;
    };
    let Some(end) = svg[at..].find('>') else {
        return svg;
    };
    let at = at + end + 1;
    format!("{}<title>{}</title>{}", &svg[..at], escape(tooltip), &svg[at..])
}

/// Where the differential lines are cut: at half of inferno's narrowest frame, so
/// nothing it would draw is cut.
fn drawn_cut() -> f64 {
    Options::default().min_width / 2.0
}

/// [`render_differential`] of the lines of `d` cut at `cut_below_pct`
/// ([`StackDiff::differential_lines`]).
fn render_cut_at(
    d: &StackDiff,
    shape: Shape,
    cut_below_pct: f64,
    title: &str,
    subtitle: Option<Subtitle>,
    mut w: impl Write,
) -> io::Result<()> {
    let semicolons = (1..d.nodes.len()).any(|n| needs_standin(d.node_name(n)));
    // With its names stood in for, each line sorts as inferno sorts it, so the layout
    // follows inferno's merge.
    let lines = match semicolons {
        true => d.shape_lines(shape, cut_below_pct, |n| match needs_standin(n) {
            true => Cow::Owned(standin(n)),
            false => Cow::Borrowed(n),
        }),
        false => d.shape_lines(shape, cut_below_pct, Cow::Borrowed),
    };
    let mut svg = Vec::new();
    let tooltip = subtitle.as_ref().map(|s| s.tooltip.clone()).filter(|t| !t.is_empty());
    let mut opts = options(title, subtitle.map(|s| s.line));
    let per_weight = d.samples_per_weight(shape);
    if per_weight.is_some() {
        opts.count_name = WEIGHT_UNIT.into();
    }
    // inferno draws the lines while the frames' places are found in them.
    let (drawn, layout) = rayon::join(
        || flamegraph::from_lines(&mut opts, lines.iter().map(|l| l.text.as_str()), &mut svg),
        || d.layout(&lines),
    );
    drawn?;
    let mut svg = patched_script(&svg)?;
    if let Some(per_weight) = per_weight {
        svg = counts_in_samples(&svg, per_weight);
    }
    // Only the family's members can stand out.
    let max_delta = d
        .family_changes()
        .filter(|c| c.stands_out())
        .map(|c| c.delta_pct.abs())
        .fold(0.0, f64::max);
    let recoloured = recolour(&svg, |depth, start| {
        let n = *layout.get(&(depth, start))?;
        let c = d.change(n);
        // inferno labels a frame with its title up to the title's last `(`: the
        // statistics are one parenthesis, with none inside it.
        let verdict = match c.noise.verdict {
            Mark::Significant => "",
            Mark::SamplingOnly => ", beyond the sampling error; run-to-run noise not measured",
            Mark::Noise => ", within the noise",
            Mark::NotTested | Mark::BelowCutoff => ", not tested",
        };
        let title = format!(
            "{} (inclusive {:.2}% → {:.2}% of CPU time, {:+.2} ± {:.2} points{verdict})",
            Shown(d.node_name(n)),
            c.pct1,
            c.pct2,
            c.delta_pct,
            c.error_pct,
        );
        Some((change_color(c.delta_pct, c.stands_out(), max_delta), title))
    })?;
    let recoloured = match tooltip {
        Some(t) => with_subtitle_tooltip(recoloured, &t),
        None => recoloured,
    };
    if semicolons {
        return write_back(recoloured.as_bytes(), w);
    }
    w.write_all(recoloured.as_bytes())
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = tag[at..].find('"')? + at;
    Some(&tag[at..end])
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Rewrites the fill and title of every frame inferno drew: `frame(depth, start)` gives
/// them, where depth 0 is `all` and start is the frame's first sample (`fg:x`).
fn recolour(svg: &str, mut frame: impl FnMut(usize, u64) -> Option<(Color, String)>) -> io::Result<String> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("inferno's SVG: {what}"));
    let Some(frames_at) = svg.find("<svg id=\"frames\"") else {
        return Err(bad("no frames container"));
    };
    // Depth from the frame's y: straight graphs draw depth 0 lowest (largest y).
    let mut ys: Vec<f64> = svg[frames_at..]
        .match_indices("<rect ")
        .filter_map(|(i, _)| attr(&svg[frames_at + i..], "y")?.parse().ok())
        .collect();
    ys.sort_by(|a, b| b.total_cmp(a));
    ys.dedup();
    let mut out = String::with_capacity(svg.len());
    out.push_str(&svg[..frames_at]);
    let mut rest = &svg[frames_at..];
    while let Some(g) = rest.find("<g><title>") {
        out.push_str(&rest[..g]);
        let block_end = rest[g..].find("</g>").ok_or_else(|| bad("unclosed <g>"))? + g + 4;
        let block = &rest[g..block_end];
        let rect_at = block.find("<rect ").ok_or_else(|| bad("a frame without <rect>"))?;
        let rect = &block[rect_at..];
        let y: f64 = attr(rect, "y")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad("a rect without y"))?;
        let start: u64 = attr(rect, "fg:x")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad("a rect without fg:x"))?;
        let depth = ys.iter().position(|&v| v == y).unwrap_or(0);
        match frame(depth, start) {
            Some((color, title)) => {
                let t0 = block.find("<title>").expect("found above") + 7;
                let t1 = block.find("</title>").ok_or_else(|| bad("unclosed <title>"))?;
                let fill = attr(rect, "fill").ok_or_else(|| bad("a rect without fill"))?;
                let old_fill = format!(" fill=\"{fill}\"");
                let new_fill = format!(" fill=\"rgb({},{},{})\"", color.r, color.g, color.b);
                out.push_str(&block[..t0]);
                out.push_str(&escape(&title));
                out.push_str(&block[t1..rect_at]);
                out.push_str(&rect.replacen(&old_fill, &new_fill, 1));
            }
            None => out.push_str(block),
        }
        rest = &rest[block_end..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_of_summed_periods_are_given_in_samples() {
        let svg = format!(
            "<title>all (12,345 {WEIGHT_UNIT}, 100%)</title><title>f (a, 1 (x) (7 {WEIGHT_UNIT}, 0.06%)</title>"
        );
        assert_eq!(
            counts_in_samples(&svg, 0.5),
            "<title>all (6,172.5 samples, 100%)</title><title>f (a, 1 (x) (3.5 samples, 0.06%)</title>"
        );
        assert_eq!(thousands(1234567.04), "1,234,567.0");
        assert_eq!(thousands(999.96), "1,000.0");
        assert_eq!(thousands(0.26), "0.3");
    }

    #[test]
    fn colours_by_kind_and_change() {
        assert_eq!(kind_color("do_syscall_64").b, 40);
        assert_eq!(kind_color("user:bash").b, 230);
        assert_eq!(change_color(5.0, false, 5.0), NEUTRAL);
        assert_eq!(change_color(5.0, true, 5.0), Color { r: 255, g: 100, b: 100 });
        assert_eq!(change_color(-1.0, true, 10.0).b, 255);
    }

    #[test]
    fn narrow_subtrees_cut_from_the_lines_draw_the_same_graph() {
        // One wide stack, and narrow ones (under 0.005% each) whose names sort around
        // their siblings' (`f` before `f.cold`, `f;` after it), with and without self
        // samples, some deep, some in one run only.
        let make = |shift: u64| {
            let mut p = StackProfile::default();
            let id = |p: &mut StackProfile, path: &str| path.split(';').map(|f| p.intern(f)).collect::<Vec<u32>>();
            let wide = id(&mut p, "main;work;f");
            p.add_stack(&wide, 400_000 + shift * 1000);
            // Drawn after its narrow sibling `g` only if g's line sorts as `g;`.
            let drawn = id(&mut p, "main;g.cold");
            p.add_stack(&drawn, 50_000);
            for (k, path) in [
                "main;work;f.cold",
                "main;work;f;g",
                "main;work;f2;h;i;j",
                "main;work",
                "main;f.cold;x",
                "main;f;y",
                "main;g;z",
                "other;a;b;c",
            ]
            .iter()
            .enumerate()
            {
                let frames = id(&mut p, path);
                p.add_stack(&frames, 1 + (k as u64 + shift) % 3);
            }
            // Frames n* are drawn, o* are not: cut there.
            for k in 0..2000 {
                let frames = id(&mut p, &format!("main;work;f;n{};o{};m{k}", k % 20, k % 400));
                p.add_stack(&frames, 1 + (k % 2) * shift);
            }
            p
        };
        let d = StackDiff::new(&[make(0)], &[make(1)]);
        let (cut, whole) = (d.differential_lines(drawn_cut()), d.differential_lines(0.0));
        assert!(cut.len() * 4 < whole.len(), "{} lines of {}", cut.len(), whole.len());
        let render = |cut_below_pct: f64| {
            let mut svg = Vec::new();
            render_cut_at(&d, Shape::Run2, cut_below_pct, "t", None, &mut svg).unwrap();
            String::from_utf8(svg).unwrap()
        };
        let svg = render(drawn_cut());
        assert_eq!(svg, render(0.0));
        let drawn = titles(&svg);
        assert!(drawn.iter().any(|t| t.starts_with("n0 (inclusive")));
        assert!(!drawn.iter().any(|t| t.starts_with("o0 (inclusive")));
    }

    /// Two profiles of a JVM's frames, whose names hold `;`: `Lfoo;.bar()V` grew.
    fn jvm_profiles() -> (StackProfile, StackProfile) {
        let make = |bar: u64, baz: u64| {
            let mut p = StackProfile::default();
            let (java, bar_f, baz_f) = (p.intern("java"), p.intern("Lfoo;.bar()V"), p.intern("Lfoo;.baz(I)V"));
            p.add_stack(&[java, bar_f], bar);
            p.add_stack(&[java, bar_f, baz_f], baz);
            p.add_stack(&[java], 1000);
            p
        };
        (make(100, 100), make(400, 100))
    }

    /// The titles of the frames an SVG draws.
    fn titles(svg: &str) -> Vec<&str> {
        svg.match_indices("<g><title>")
            .map(|(at, t)| {
                let rest = &svg[at + t.len()..];
                &rest[..rest.find("</title>").unwrap()]
            })
            .collect()
    }

    #[test]
    fn a_frame_name_with_a_semicolon_stays_one_frame() {
        let (p1, p2) = jvm_profiles();
        let mut svg = Vec::new();
        render_differential(
            &StackDiff::new(std::slice::from_ref(&p1), std::slice::from_ref(&p2)),
            "t",
            None,
            &mut svg,
        )
        .unwrap();
        let svg = String::from_utf8(svg).unwrap();
        let t = titles(&svg);
        // all, java, bar and baz: four frames, each with its own title.
        assert_eq!(t.len(), 4, "{t:?}");
        let bar = t
            .iter()
            .find(|t| t.starts_with("Lfoo;.bar()V (inclusive"))
            .expect("bar's title");
        assert!(bar.contains("inclusive 16.67% → 33.33%"), "{bar}");
        let baz = t
            .iter()
            .find(|t| t.starts_with("Lfoo;.baz(I)V (inclusive"))
            .expect("baz's title");
        assert!(baz.contains("8.33% → 6.67%"), "{baz}");
        assert!(!svg.contains(SEMICOLON_STANDIN));
        // bar grew: red, in the rect under its own title.
        let at = svg.find("<title>Lfoo;.bar()V").unwrap();
        assert!(attr(&svg[at..], "fill").unwrap().starts_with("rgb(255,"), "{svg}");

        let mut svg = Vec::new();
        render(&p2, "t", None, false, &mut svg).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        let t = titles(&svg);
        assert_eq!(t.len(), 4, "{t:?}");
        assert!(t.iter().any(|t| t.starts_with("Lfoo;.bar()V (500 samples")), "{t:?}");
        assert!(!svg.contains(SEMICOLON_STANDIN));
        let fill_of = |svg: &str, name: &str| {
            let at = svg.find(&format!("<title>{name} (")).unwrap();
            attr(&svg[at..], "fill").unwrap().to_string()
        };
        assert_eq!(fill_of(&svg, "java"), svg_rgb(kind_color("java")));

        // Rooted at its command: the root is grey, neither kernel nor user code.
        let mut svg = Vec::new();
        render(&p2, "t", None, true, &mut svg).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        assert_eq!(fill_of(&svg, "java"), svg_rgb(command_color("java")));
        // (Coloured under the name inferno laid it out by.)
        let bar = svg_rgb(kind_color(&standin("Lfoo;.bar()V")));
        assert_eq!(fill_of(&svg, "Lfoo;.bar()V"), bar);
    }

    fn svg_rgb(c: Color) -> String {
        format!("rgb({},{},{})", c.r, c.g, c.b)
    }

    #[test]
    fn run_1s_shape_draws_the_frames_run_2_lacks() {
        let p1 = vec![StackProfile::from_folded("a;b 500\na;gone 300\nz 1000\n", "1").unwrap()];
        let p2 = vec![StackProfile::from_folded("a;b 500\na;new 300\nz 1000\n", "2").unwrap()];
        let d = StackDiff::new(&p1, &p2);
        let draw = |shape| {
            let mut svg = Vec::new();
            render_shape(&d, shape, "t", None, &mut svg).unwrap();
            String::from_utf8(svg).unwrap()
        };
        let (run2, run1) = (draw(Shape::Run2), draw(Shape::Run1));
        let named = |svg: &str, name: &str| titles(svg).iter().any(|t| t.starts_with(&format!("{name} (inclusive")));
        assert!(named(&run1, "gone") && !named(&run1, "new"), "{:?}", titles(&run1));
        assert!(named(&run2, "new") && !named(&run2, "gone"), "{:?}", titles(&run2));
        // The same colours: what vanished is blue in run 1's shape, what came is red in run 2's.
        let fill_of = |svg: &str, name: &str| {
            let at = svg.find(&format!("<title>{name} (inclusive")).unwrap();
            attr(&svg[at..], "fill").unwrap().to_string()
        };
        assert!(fill_of(&run1, "gone").ends_with(",255)"), "{}", fill_of(&run1, "gone"));
        assert!(
            fill_of(&run2, "new").starts_with("rgb(255,"),
            "{}",
            fill_of(&run2, "new")
        );
        assert_eq!(fill_of(&run1, "z"), fill_of(&run2, "z"));
    }

    #[test]
    fn the_differential_graph_colours_inclusive_changes() {
        let p1 = StackProfile::from_folded("a;b 500\na;b;c 500\nz 1000\n", "1").unwrap();
        let p2 = StackProfile::from_folded("a;b 500\na;b;c 1000\nz 500\n", "2").unwrap();
        let mut svg = Vec::new();
        let (p1, p2) = (vec![p1], vec![p2]);
        render_differential(&StackDiff::new(&p1, &p2), "t", None, &mut svg).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        let fill_of = |name: &str| {
            let at = svg
                .find(&format!("<title>{name} (inclusive"))
                .unwrap_or_else(|| panic!("{name}: {svg}"));
            attr(&svg[at..], "fill").unwrap().to_string()
        };
        // b has no self change but grew through c: red, not white.
        assert!(fill_of("b").starts_with("rgb(255,"), "{}", fill_of("b"));
        assert!(fill_of("c").starts_with("rgb(255,"));
        assert!(fill_of("z").ends_with(",255)"), "z shrank: blue");
        let same = StackDiff::new(&p1, &p1);
        let mut svg = Vec::new();
        render_differential(&same, "t", None, &mut svg).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        let frames = &svg[svg.find("<svg id=\"frames\"").unwrap()..];
        let fills: Vec<&str> = frames
            .match_indices("<rect ")
            .map(|(i, _)| attr(&frames[i..], "fill").unwrap())
            .collect();
        assert!(fills.len() >= 4);
        assert!(fills.iter().all(|f| *f == "rgb(250,250,250)"), "{fills:?}");
    }
}
