//! Issue 32: a function's instructions and source lines, inlined helpers as the debug
//! information says, in ELF files the tests build (gcc -O2 -g).

use crate::util::{run_in, stderr, tempdir};
use std::path::Path;
use upcmp::symbols::lines::{debug_file_for, function_code, read_source, USER_DEBUG_PACKAGES};

// The added work sits on line 9 of `helper`, a static inline function inlined into `work`.
const PROGRAM: &str = "#include <stdint.h>
volatile uint64_t sink;
static inline uint64_t helper(uint64_t x)
{
\tuint64_t y = x * 2654435761u;
\tfor (int i = 0; i < 8; i++)
\t\ty ^= y >> 7;
\tfor (int i = 0; i < 64; i++)
\t\ty += (y << 3) ^ (uint64_t)i;
\treturn y;
}
__attribute__((noinline)) uint64_t work(uint64_t n)
{
\tuint64_t s = 0;
\tfor (uint64_t k = 0; k < n; k++)
\t\ts += helper(k);
\treturn s;
}
int main(int argc, char **argv)
{
\t(void)argv;
\tsink = work(1000u * (uint64_t)argc);
\treturn 0;
}
";

fn build(dir: &Path, extra: &[&str]) -> std::path::PathBuf {
    std::fs::write(dir.join("prog.c"), PROGRAM).unwrap();
    let mut args = vec!["-O2", "-g", "-o", "prog", "prog.c"];
    args.extend_from_slice(extra);
    let o = run_in(dir, "gcc", &args);
    assert!(o.status.success(), "gcc: {}", stderr(&o));
    dir.join("prog")
}

#[test]
fn a_static_inline_helpers_line_is_found_inlined_into_its_caller_issue_32() {
    let dir = tempdir();
    let prog = build(dir.path(), &[]);
    assert_eq!(debug_file_for(&prog).as_deref(), Some(prog.as_path()));
    let code = function_code(&prog, None, "work", &[], USER_DEBUG_PACKAGES).unwrap();
    assert!(code.missing.is_empty(), "{:?}", code.missing);
    assert!(code.instructions.len() > 5, "{:?}", code.instructions);
    // Every instruction has a place; the helper's loop lines are there, inlined into work.
    let places: Vec<_> = code.places.values().flatten().collect();
    assert_eq!(places.len(), code.instructions.len());
    let helper: Vec<_> = places.iter().filter(|p| p.function == "helper").collect();
    assert!(!helper.is_empty(), "no line of helper in {places:?}");
    assert!(helper.iter().all(|p| p.inlined_into.as_deref() == Some("work")));
    assert!(helper.iter().any(|p| p.line == 9), "{helper:?}");
    assert!(helper.iter().all(|p| p.file.ends_with("prog.c")));
    // The work's own lines are work's, not inlined.
    assert!(places.iter().any(|p| p.function == "work" && p.inlined_into.is_none()));
    // The disassembly is AT&T syntax, as objdump prints it.
    assert!(
        code.instructions.iter().any(|i| i.text.contains('%')),
        "{:?}",
        code.instructions
    );
    let last = code.instructions.last().unwrap();
    assert_eq!(last.offset + last.len, code.size);
    // The source text is found where DWARF says it is.
    let lines = read_source(&helper[0].file, &[]).expect("the source beside its DWARF path");
    assert_eq!(lines[8].trim(), "y += (y << 3) ^ (uint64_t)i;");
}

#[test]
fn an_elf_linked_at_kernel_addresses_gives_the_exact_lines_issue_32() {
    let dir = tempdir();
    let prog = build(
        dir.path(),
        &[
            "-static",
            "-nostartfiles",
            "-Wl,-e,main",
            "-Wl,-Ttext=0xffffffff81000000",
            "-no-pie",
        ],
    );
    let code = function_code(&prog, None, "work", &[], USER_DEBUG_PACKAGES).unwrap();
    assert!(code.start >= 0xffffffff81000000, "{:#x}", code.start);
    // objdump's own line table for the same addresses agrees with ours, line for line.
    let o = run_in(dir.path(), "objdump", &["-d", "-l", "--no-show-raw-insn", "prog"]);
    assert!(o.status.success(), "objdump: {}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut line = 0u32;
    let mut checked = 0;
    let mut in_work = false;
    for l in text.lines() {
        if l.ends_with(">:") {
            in_work = l.ends_with("<work>:");
            continue;
        }
        if !in_work {
            continue;
        }
        if let Some(n) = l
            .rsplit_once("prog.c:")
            .and_then(|(_, n)| n.split(' ').next()?.parse().ok())
        {
            line = n;
            continue;
        }
        let Some((addr, _)) = l.trim().split_once(':') else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        let place = code.place_at(addr - code.start).expect("a line for every instruction");
        assert_eq!(place.line, line, "at {addr:#x}: {place:?}");
        checked += 1;
    }
    assert_eq!(checked, code.instructions.len());
}
