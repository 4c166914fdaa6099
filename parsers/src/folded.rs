//! Folded stacks, one stack per line, root first, as flamegraph.pl and inferno read them.
//!
//! ```text
//! user;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_getpid 412
//! ```
//!
//! Frames may contain spaces (`ext4_file_write_iter [ext4]`): the count is what follows
//! the last space. Blank lines and `# ` comments are skipped.

use crate::ParseError;

// user;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_getpid 412
/// Parses one line into its stack (`frame;frame`) and sample count; `None` for a blank
/// or comment line. `number` is the 1-based line number, for errors.
pub fn parse_line<'a>(line: &'a str, file: &str, number: usize) -> Result<Option<(&'a str, u64)>, ParseError> {
    let trimmed = line.trim_end();
    if trimmed.trim_start().is_empty() || trimmed.starts_with("# ") {
        return Ok(None);
    }
    let expected = "'frame;frame;... COUNT' (a whole number of samples after the last space)";
    let Some(space) = trimmed.rfind(' ') else {
        return Err(ParseError::at(file, number, line, line, expected));
    };
    let (stack, count) = (trimmed[..space].trim_end(), &trimmed[space + 1..]);
    let count: u64 = count
        .parse()
        .map_err(|_| ParseError::at(file, number, line, &line[space + 1..], expected))?;
    if stack.is_empty() || stack.split(';').any(str::is_empty) {
        return Err(ParseError::at(
            file,
            number,
            line,
            line,
            "a stack of non-empty frames separated by ';'",
        ));
    }
    Ok(Some((stack, count)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_errors() {
        assert_eq!(
            parse_line("a;b [ext4];c 12", "f", 1).unwrap(),
            Some(("a;b [ext4];c", 12))
        );
        assert_eq!(parse_line("", "f", 1).unwrap(), None);
        assert_eq!(parse_line("# note", "f", 1).unwrap(), None);
        let e = parse_line("a;b x", "f", 3).unwrap_err();
        assert_eq!((e.line, e.column), (3, 5));
        assert!(parse_line("a;;b 1", "f", 1).is_err());
        assert!(parse_line("nocount", "f", 1).is_err());
    }
}
