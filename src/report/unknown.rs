//! What an `[unknown]` row is, in words, from what its name tells: perf's and the
//! model's names for code no symbol covers (`[unknown]`, `[unknown] [DSO]`,
//! `[unknown mode]`). The page shows it as the row's tooltip, the text report as a note.

use crate::model::profile::{UNKNOWN_FUNCTION, UNKNOWN_MODE_FUNCTION};

/// The hint for the row named `name`, or None when the name is a symbol's.
pub fn unknown_hint(name: &str) -> Option<String> {
    if name == UNKNOWN_MODE_FUNCTION {
        return Some("samples whose record does not say whether the CPU ran kernel or user code".into());
    }
    if name == UNKNOWN_FUNCTION {
        return Some(
            "addresses no symbol covers: JIT or BPF code without symbols (BPF programs are named only \
             with net.core.bpf_jit_kallsyms=1), a module loaded after the symbols were read, or a \
             stripped file"
                .into(),
        );
    }
    let dso = name
        .strip_prefix(UNKNOWN_FUNCTION)?
        .strip_prefix(" [")?
        .strip_suffix(']')?;
    Some(match dso {
        "unknown" => "user samples outside every recorded mapping (code mapped after the recording began, \
                      or JIT code)"
            .into(),
        _ => format!(
            "addresses in {} that its symbols do not cover: a stripped build, or JIT code in \
             its mapping",
            crate::model::shown::Shown(dso)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_name_what_is_known() {
        assert!(unknown_hint("[unknown]")
            .unwrap()
            .contains("JIT or BPF code without symbols"));
        assert!(unknown_hint("[unknown] [libjvm.so]").unwrap().contains("in libjvm.so"));
        assert!(unknown_hint("[unknown] [unknown]")
            .unwrap()
            .contains("outside every recorded mapping"));
        assert!(unknown_hint("[unknown mode]").unwrap().contains("kernel or user"));
        assert_eq!(unknown_hint("do_syscall_64"), None);
        assert_eq!(unknown_hint("[unknown]x"), None);
    }
}
