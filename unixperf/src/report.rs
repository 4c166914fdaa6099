//! The x11perf-style result lines, formatted exactly as the original unixperf printed them:
//!
//! ```text
//! 1410840 reps @   0.0035 msec (282000.0/sec): 4 by 4 double matrix multiply
//! 7054200 trep @   0.0035 msec (282000.0/sec): 4 by 4 double matrix multiply
//!      25 trep @ 1187.2743 msec (    0.84/sec): use regexec with long .* pattern ...
//! ```
//!
//! and the single-write output that keeps lines whole when copies share one file.

use std::os::fd::RawFd;

use crate::sys;

/// Rounds a rate to 3 significant digits, as x11perf does: nobody can use "193658.4/sec".
pub fn round3(rate: f64) -> f64 {
    if !rate.is_finite() || rate <= 0.0 {
        return rate;
    }
    let digits = rate.log10().floor() as i32;
    let rounded = round_at(rate, digits);
    // Rounding up can add a digit (999.6 -> 1000): round again at the new magnitude.
    if rounded.log10().floor() as i32 > digits {
        round_at(rate, digits + 1)
    } else {
        rounded
    }
}

/// Keeps the 3 digits below 10^(`digits`+1); multiplying back by a power of ten that is
/// an integer keeps large rates exact (282000.0, not 282000.00000000006).
fn round_at(rate: f64, digits: i32) -> f64 {
    let e = digits - 2;
    if e >= 0 {
        let p = 10f64.powi(e);
        (rate / p).round() * p
    } else {
        let p = 10f64.powi(-e);
        (rate * p).round() / p
    }
}

/// The rate field, `%8.1f` of the rounded rate, or `%8.2f` below 10/sec.
pub fn format_rate(rate: f64) -> String {
    let r = round3(rate);
    if r < 10.0 {
        format!("{r:8.2}")
    } else {
        format!("{r:8.1}")
    }
}

/// One result line: `reps` for a pass, `trep` for the total over passes.
pub fn rep_line(count: u64, nanos: u64, description: &str, total: bool) -> String {
    let nanos = nanos.max(1) as f64;
    let msec = nanos / 1e6 / count.max(1) as f64;
    let rate = count as f64 * 1e9 / nanos;
    let kind = if total { "trep" } else { "reps" };
    format!(
        "{count:7} {kind} @ {msec:8.4} msec ({}/sec): {description}\n",
        format_rate(rate)
    )
}

/// The line `-mp` adds after its copies' trep lines: the copies' operations added up, at the
/// sum of their rates, with the milliseconds of the whole system per operation.
pub fn aggregate_line(count: u64, rate: f64, description: &str, copies: u32) -> String {
    let msec = if rate > 0.0 { 1000.0 / rate } else { 0.0 };
    format!(
        "{count:7} trep @ {msec:8.4} msec ({}/sec): {description} [aggregate of {copies} copies]\n",
        format_rate(rate)
    )
}

/// hackbench's result line.
pub fn time_line(seconds: f64, copies: Option<u32>) -> String {
    match copies {
        Some(n) => format!("Time: {seconds:.3} [aggregate of {n} copies]\n"),
        None => format!("Time: {seconds:.3}\n"),
    }
}

/// The exit code of a worker whose standard output's reader went away, so that the
/// supervisor exits quietly, as a pipeline member should.
pub const EXIT_BROKEN_PIPE: i32 = 141;

/// Writes a whole line to standard output with one write(2), so that copies writing to one
/// file never interleave inside a line. When the reader has gone away, the error's
/// [`kind`](sys::Error::kind) is `BrokenPipe` (SIGPIPE is ignored, as in every Rust program).
pub fn emit(line: &str) -> sys::Result<()> {
    write_line(1, line)
}

/// [`emit`] to any descriptor.
fn write_line(fd: RawFd, line: &str) -> sys::Result<()> {
    let buf = line.as_bytes();
    loop {
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n >= 0 {
            if n as usize == buf.len() {
                return Ok(());
            }
            // Only a full disk or a signal makes a regular write short; finish it.
            return sys::write_all(fd, &buf[n as usize..]);
        }
        if sys::errno() != libc::EINTR {
            return Err(sys::os_error("write to standard output"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_round_to_three_digits_like_the_original() {
        // Values as they appear in testdata/unixperf/*.
        assert_eq!(format_rate(282_013.0), "282000.0");
        assert_eq!(format_rate(842_449.9), "842000.0");
        assert_eq!(format_rate(54_849.0), " 54800.0");
        assert_eq!(format_rate(425.04), "   425.0");
        assert_eq!(format_rate(935.6), "   936.0");
        assert_eq!(format_rate(14.46), "    14.5");
        assert_eq!(format_rate(0.8421), "    0.84");
        assert_eq!(format_rate(6.7), "    6.70");
        assert_eq!(format_rate(999.7), "  1000.0");
        assert_eq!(format_rate(1_294_000.0), "1290000.0");
    }

    #[test]
    fn a_closed_reader_is_a_broken_pipe_by_kind() {
        let (reader, writer) = sys::pipe().unwrap();
        write_line(writer.raw(), "open\n").unwrap();
        drop(reader);
        let e = write_line(writer.raw(), "closed\n").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        // Any other failure is not: a descriptor that is not open.
        let e = write_line(-1, "x\n").unwrap_err();
        assert_ne!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }

    #[test]
    fn lines_have_the_shape_of_the_reports() {
        // 1410840 reps @   0.0035 msec (282000.0/sec): 4 by 4 double matrix multiply
        let nanos = (1_410_840.0 / 282_000.0 * 1e9) as u64;
        assert_eq!(
            rep_line(1_410_840, nanos, "4 by 4 double matrix multiply", false),
            "1410840 reps @   0.0035 msec (282000.0/sec): 4 by 4 double matrix multiply\n"
        );
        //      25 trep @ 1187.2743 msec (    0.84/sec): ...
        assert_eq!(
            rep_line(25, 29_681_857_500, "x", true),
            "     25 trep @ 1187.2743 msec (    0.84/sec): x\n"
        );
        assert_eq!(
            aggregate_line(2000, 180_000.0, "getpid system call", 2),
            "   2000 trep @   0.0056 msec (180000.0/sec): getpid system call [aggregate of 2 copies]\n"
        );
        assert_eq!(time_line(2.8391, None), "Time: 2.839\n");
    }
}
