//! The naming rules: which symbol names are one function across builds.
//!
//! Between two builds the compiler renames the same function: GCC's interprocedural
//! clones (`.isra.N`, `.constprop.N`, `.part.N`, `.cold`, `.lto_priv.N`, ...), Clang
//! LTO's `.llvm.<hash>`, and the `[clone .isra.0]` form of demangled C++ names. A
//! comparison folds such names into their base name, so a function renamed between two
//! kernels is one row, not a "gone" row and a "new" one. Only these compiler suffixes
//! are folded (docs/symbols.md, "Clones"): names that differ in anything else stay
//! apart, and so do the same name in two modules (`name [module]` keeps its module).

use std::borrow::Cow;

/// GCC suffixes followed by a number: `name.isra.0`, `name.constprop.3`, ...
const NUMBERED: &[&str] = &["isra", "constprop", "part", "lto_priv", "clone", "cold", "specialized"];

/// GCC suffixes without a number.
const BARE: &[&str] = &["cold", "localalias"];

/// Whether `s` is a non-empty run of ASCII digits.
fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `name` without its last compiler suffix, if it has one.
fn strip_one(name: &str) -> Option<&str> {
    // C++ as demangled: `f(int) [clone .isra.0]`.
    if let Some(head) = name.strip_suffix(']') {
        if let Some(at) = head.rfind(" [clone .") {
            let inner = &head[at + " [clone ".len()..];
            if !inner.contains(['[', ']']) {
                return Some(&name[..at]);
            }
        }
        return None;
    }
    let (head, last) = name.rsplit_once('.')?;
    // `.llvm.<hash>`: Clang's LTO promotes a local symbol with a hash of its module.
    if let Some(base) = head.strip_suffix(".llvm") {
        return (digits(last) || last.bytes().all(|b| b.is_ascii_hexdigit()) && !last.is_empty()).then_some(base);
    }
    if BARE.contains(&last) {
        return Some(head);
    }
    if digits(last) {
        let (base, kind) = head.rsplit_once('.')?;
        if NUMBERED.contains(&kind) {
            return Some(base);
        }
    }
    None
}

/// The base name of a function: `name` without any compiler clone suffix
/// (`finish_task_switch.isra.0` is `finish_task_switch`; `f.constprop.0.isra.0` is `f`).
/// A name that would be left empty, or start with a dot, is its own base.
pub fn base_name(name: &str) -> &str {
    let mut base = name;
    while let Some(b) = strip_one(base) {
        if b.is_empty() || b.starts_with('.') || b.ends_with(' ') {
            break;
        }
        base = b;
    }
    base
}

/// A frame's or a row's display name (`name` or `name [module]`) with its function's
/// clone suffixes folded and its module kept.
pub fn fold_display_name(display: &str) -> Cow<'_, str> {
    let (name, module) = split_module(display);
    let base = base_name(name);
    if base.len() == name.len() {
        Cow::Borrowed(display)
    } else if module.is_empty() {
        Cow::Borrowed(base)
    } else {
        Cow::Owned(format!("{base}{module}"))
    }
}

/// A display name split into the function and its ` [module]` (empty when it has none);
/// a C++ ` [clone ...]` is part of the function.
pub fn split_module(display: &str) -> (&str, &str) {
    if display.ends_with(']') {
        if let Some(at) = display.rfind(" [") {
            if !display[at..].starts_with(" [clone .") && !display[at + 2..display.len() - 1].contains(['[', ']']) {
                return display.split_at(at);
            }
        }
    }
    (display, "")
}

/// The module of a display name, without brackets: `None` for the core kernel or user
/// space as one module.
pub fn module_of(display: &str) -> Option<&str> {
    let (_, m) = split_module(display);
    m.strip_prefix(" [").and_then(|m| m.strip_suffix(']'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcc_and_clang_suffixes_fold() {
        for (name, base) in [
            ("finish_task_switch.isra.0", "finish_task_switch"),
            ("finish_task_switch.constprop.0", "finish_task_switch"),
            ("finish_task_switch", "finish_task_switch"),
            ("tcp_ack.part.0", "tcp_ack"),
            ("do_syscall_64.cold", "do_syscall_64"),
            ("do_syscall_64.cold.12", "do_syscall_64"),
            ("f.constprop.0.isra.0", "f"),
            ("g.lto_priv.3", "g"),
            ("h.llvm.4237468153851209011", "h"),
            ("k.localalias", "k"),
            ("f(int) [clone .isra.0]", "f(int)"),
            ("f(int) [clone .constprop.1] [clone .cold]", "f(int)"),
        ] {
            assert_eq!(base_name(name), base, "{name}");
        }
    }

    #[test]
    fn other_dots_and_numbers_stay() {
        for name in [
            "foo.bar",
            "foo.2",
            "__func__.12",
            "x.isra",
            "x.constprop",
            "x.part",
            ".isra.0",
            "x.llvm.",
            "x.ISRA.0",
            "user:a.out",
            "foo_isra_0",
        ] {
            assert_eq!(base_name(name), name, "{name}");
        }
    }

    #[test]
    fn modules_are_kept_apart() {
        assert_eq!(fold_display_name("ext4_map.isra.0 [ext4]"), "ext4_map [ext4]");
        assert_eq!(fold_display_name("ext4_map [ext4]"), "ext4_map [ext4]");
        assert_eq!(fold_display_name("f(int) [clone .isra.0]"), "f(int)");
        assert_eq!(
            fold_display_name("f(int) [clone .isra.0] [libx.so]"),
            "f(int) [libx.so]"
        );
        assert_eq!(module_of("a [ext4]"), Some("ext4"));
        assert_eq!(module_of("a"), None);
        assert_eq!(module_of("f [clone .cold]"), None);
    }
}
