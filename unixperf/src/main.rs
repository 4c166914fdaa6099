//! unixperf: see `unixperf -help` and docs/unixperf.md.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(unixperf::cli::main(&args));
}
