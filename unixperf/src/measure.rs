//! Calibration and timed passes, x11perf style.

use crate::report::{rep_line, time_line};
use crate::sys::{now_ns, Result};
use crate::workload::Workload;

/// A pass shorter than this is too short to scale from.
const CALIBRATION_NS: u64 = 100_000_000;

/// How many operations, how many times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Operations per pass; `None` calibrates to `seconds`.
    pub count: Option<u64>,
    /// Passes.
    pub repeat: u32,
    /// Seconds a calibrated pass should take.
    pub seconds: f64,
}

/// What the passes of one test measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// Operations per pass.
    pub count: u64,
    /// Operations over all passes.
    pub ops: u64,
    /// Nanoseconds over all passes (timed parts only).
    pub nanos: u64,
    /// The workload's own seconds per operation (hackbench's `Time:`).
    pub own_seconds: Option<f64>,
}

impl Outcome {
    /// Operations per second over all passes.
    pub fn rate(&self) -> f64 {
        self.ops as f64 * 1e9 / self.nanos.max(1) as f64
    }
}

/// Doubles the count from 1 until a pass takes at least 0.1 s, then scales it to `seconds`.
/// The calibration passes also warm caches and the workload up.
pub fn calibrate(w: &mut dyn Workload, seconds: f64) -> Result<u64> {
    let mut n: u64 = 1;
    loop {
        let start = now_ns();
        w.run(n)?;
        let took = (now_ns() - start).max(1);
        if took >= CALIBRATION_NS || n >= 1 << 40 {
            let scaled = n as f64 * seconds * 1e9 / took as f64;
            return Ok(scaled.round().max(1.0) as u64);
        }
        n *= 2;
    }
}

/// Times one pass of `n` operations; returns (start, end) in CLOCK_MONOTONIC nanoseconds.
/// Only the workload runs between the two clock reads (vDSO calls, no system call).
pub fn timed_pass(w: &mut dyn Workload, n: u64) -> Result<(u64, u64)> {
    let start = now_ns();
    w.run(n)?;
    let end = now_ns();
    Ok((start, end.max(start + 1)))
}

/// Runs the passes of `plan`, handing each output line to `emit` as it is ready: a `reps`
/// line per pass, then the `trep` line, then `Time:` for workloads that time themselves.
pub fn measure(
    w: &mut dyn Workload,
    plan: &Plan,
    description: &str,
    emit: &mut dyn FnMut(&str) -> Result<()>,
) -> Result<Outcome> {
    let count = match plan.count {
        Some(n) => n,
        None => calibrate(w, plan.seconds)?,
    };
    let (mut ops, mut nanos) = (0u64, 0u64);
    for _ in 0..plan.repeat {
        let (start, end) = timed_pass(w, count)?;
        emit(&rep_line(count, end - start, description, false))?;
        ops += count;
        nanos += end - start;
    }
    w.finish()?;
    emit(&rep_line(ops, nanos, description, true))?;
    let own_seconds = w.own_seconds();
    if let Some(s) = own_seconds {
        emit(&time_line(s, None))?;
    }
    Ok(Outcome {
        count,
        ops,
        nanos,
        own_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::memory::EmptyLoop;
    use crate::bench::procs::ForkWait;

    /// Counts operations and the calls that asked for them.
    #[derive(Default)]
    struct Counter {
        ops: u64,
        calls: u64,
        finished: bool,
    }

    impl Workload for Counter {
        fn run(&mut self, n: u64) -> Result<()> {
            self.ops += n;
            self.calls += 1;
            Ok(())
        }
        fn finish(&mut self) -> Result<()> {
            self.finished = true;
            Ok(())
        }
    }

    #[test]
    fn loop_runs_exactly_n_operations_per_pass() {
        let mut w = Counter::default();
        let mut lines = Vec::new();
        let plan = Plan {
            count: Some(1000),
            repeat: 3,
            seconds: 5.0,
        };
        let out = measure(&mut w, &plan, "counting", &mut |l: &str| {
            lines.push(l.to_string());
            Ok(())
        })
        .unwrap();
        assert_eq!((w.ops, w.calls, w.finished), (3000, 3, true));
        assert_eq!((out.count, out.ops), (1000, 3000));
        assert_eq!(lines.len(), 4);
        assert!(lines[..3]
            .iter()
            .all(|l| l.starts_with("   1000 reps @ ") && l.ends_with("/sec): counting\n")));
        assert!(lines[3].starts_with("   3000 trep @ "), "{}", lines[3]);
    }

    #[test]
    fn calibration_aims_at_the_time_asked() {
        let mut w = EmptyLoop::default();
        let n = calibrate(&mut w, 0.05).unwrap();
        // Doubling went on until at least 0.1 s of iterations, then scaled down to 0.05 s.
        assert!(n > 1000, "{n}");
        let (start, end) = timed_pass(&mut w, n).unwrap();
        let secs = (end - start) as f64 / 1e9;
        assert!(secs > 0.005 && secs < 1.0, "{secs}");
        // Expensive operations calibrate to few.
        let mut forks = ForkWait::default();
        let few = calibrate(&mut forks, 0.01).unwrap();
        assert!(few < 100_000, "{few}");
    }

    #[test]
    fn a_failing_workload_stops_the_test() {
        struct Broken;
        impl Workload for Broken {
            fn run(&mut self, _: u64) -> Result<()> {
                Err(crate::sys::check_failed("broken"))
            }
        }
        let plan = Plan {
            count: Some(1),
            repeat: 2,
            seconds: 1.0,
        };
        let e = measure(&mut Broken, &plan, "x", &mut |_| Ok(())).unwrap_err();
        assert_eq!(e.message(), "broken");
    }
}
