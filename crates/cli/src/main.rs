//! The `rondpoint` binary: argument parsing, dispatch, and error reporting.

#![forbid(unsafe_code)]

#[macro_use]
mod output;
#[macro_use]
mod status;

mod budget;
mod commands;
mod format;
mod live;
mod logging;
mod options;
mod plot;
mod policies;
mod signals;
mod top;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

/// rondpoint: a NUMA traffic manager for Linux.
///
/// rondpoint measures where memory traffic goes on a NUMA machine (per-node controller load,
/// interconnect load, local access ratio, sampled page accesses) and fixes placement while
/// programs run. `rondpoint list policies` shows the policies it has and what each needs of a
/// machine; a built-in simulator runs the same policies on machines you do not have.
#[derive(Debug, Parser)]
#[command(
    name = "rondpoint",
    version,
    about,
    long_about,
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show the machine's NUMA topology: nodes, CPUs, memory, distances, links, fast/slow classes.
    ///
    /// Reads sysfs (or a copy of it given with --sysfs-root). Links and routes between nodes are
    /// inferred from the SLIT distances unless --interconnect gives them. A node is "slow" when
    /// its worst-case distance to the other CPU nodes exceeds the machine's best (the asymmetric
    /// Opteron of Gaud et al.), "memory-only" when it has no CPUs (CXL, persistent memory).
    Topo(commands::topo::TopoArgs),
    /// Run placement policies on a simulated NUMA machine and compare them.
    ///
    /// Each workload runs once per policy on the same machine, with the same seed; the table shows
    /// completion time, speedup over first-touch, average memory latency, local access ratio
    /// (LAR), memory-controller and interconnect imbalance, IPC, pages moved, and overhead, as
    /// in the Carrefour paper's tables. Machines and workloads are presets (see --list) or TOML
    /// files (docs/scenario-format.md).
    Sim(commands::sim::SimArgs),
    /// Run every policy on every workload and machine in the simulator, and check that none is
    /// much slower than first-touch.
    ///
    /// The policies' regression suite: each run's speedup over the baseline (first-touch), each
    /// policy's geometric mean and worst case per machine, and the runs more than
    /// --max-slowdown percent slower than the baseline (the do-no-harm bound). With --check,
    /// exits with status 1 when a named policy breaks it. Runs go on --jobs threads.
    Matrix(commands::matrix::MatrixArgs),
    /// Run a workload in the simulator under a policy and save every epoch's observations (and
    /// the policy's actions) to a file, for `rondpoint replay`.
    Record(commands::record::RecordArgs),
    /// Run a policy over recorded observations offline and print its decisions: regression
    /// tests, parameter tuning, and bug reports from other machines.
    Replay(commands::record::ReplayArgs),
    /// Print a recording's explanation trail: for every action, who decided it (the policy,
    /// or the lane of `auto`), on what evidence, and what it expected to gain.
    ///
    /// With --policy, replays that policy over the recorded observations and explains its
    /// decisions instead.
    Explain(commands::explain::ExplainArgs),
    /// Summarise a recording over time: the managed programs' memory on each node, the local
    /// access ratio and the memory-controller imbalance, the actions and pages placed; --plot
    /// draws every epoch (.svg or .png), --json lists them.
    Report(commands::report::ReportArgs),
    /// Launch a program and manage its memory placement while it runs; report at the end.
    ///
    /// The program's threads and children are managed; its exit status becomes rondpoint's.
    /// With `--policy interleave` its memory is interleaved from the start (set_mempolicy
    /// before exec). On a one-node machine the program runs unchanged, and a note names what
    /// the policy would lack on this machine, if anything. Placement changes need the rights
    /// to move another process's pages (the same user, or CAP_SYS_NICE) and to sample it
    /// (kernel.perf_event_paranoid <= 1, or CAP_PERFMON).
    Run(commands::run::RunArgs),
    /// Manage running processes (by pid, command name or cgroup) until SIGINT or SIGTERM.
    ///
    /// Selections by name or cgroup are rescanned every epoch. The state is published in a
    /// file for a live view (--state-file); a report is printed at the end. SIGHUP reads the
    /// --config file again: a configuration that fails is logged and the previous one kept.
    Daemon(commands::daemon::DaemonArgs),
    /// A live terminal view of a daemon: per-node memory-controller load and memory, link
    /// load, local access ratio, imbalance, sampling, and each process's pages and actions.
    ///
    /// Reads the state file the daemon rewrites every epoch (`rondpoint daemon --state-file`,
    /// by default /run/rondpoint/state.json) and redraws when it changes. Keys: q quit, p or
    /// space pause, s sort, / or f filter (n2 for a node, a pid or a command name), h or ?
    /// help, arrows scroll. Figures marked ~ were estimated, not counted. To watch a
    /// simulation instead: `rondpoint sim -m MACHINE -w WORKLOAD -p POLICY --top`
    /// (docs/top.md).
    Top(top::TopArgs),
    /// List the policies (what each needs of a machine, its parameters), the simulator's
    /// presets, or what this machine offers the policies.
    List(commands::list::ListArgs),
    /// Say what rondpoint sees on this machine: its PMUs, the signals they give and which
    /// rondpoint uses today, the permissions perf events need, and what each policy can do.
    ///
    /// Lists /sys/bus/event_source/devices (core PMU, AMD IBS, Intel PEBS and uncore memory
    /// controllers and UPI links, AMD Data Fabric and UMC, Arm SPE) and says, for each signal
    /// the policies use, where it comes from here: used (core counters, page-fault samples,
    /// IBS op, PEBS and SPE samples, memory-controller counters where their events are
    /// catalogued, UPI and xGMI links between sockets), or missing and why (no PMU at all, as
    /// in a virtual machine without a virtual PMU; kernel.perf_event_paranoid too high without
    /// CAP_PERFMON). Then the capabilities `rondpoint run` has here and each policy's
    /// verdict. --sysfs-root and --proc-root read another machine's trees instead.
    Doctor(commands::doctor::DoctorArgs),
    /// Measure a machine's MAPI-to-gap curve for `oaas` (the microbenchmark of Gaud et al.).
    Calibrate(commands::calibrate::CalibrateArgs),
    /// Move a running process's pages to a node (numactl's migratepages call, or paced
    /// batches under a rate cap), verified by a placement query, and say what moved.
    Migrate(commands::migrate::MigrateArgs),
    /// Print the completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions(commands::shell::CompletionsArgs),
    /// Print rondpoint's manual page, or write a page per command into a directory.
    Man(commands::shell::ManArgs),
}

impl Command {
    /// Whether the command was asked for JSON (`--json`).
    fn json(&self) -> bool {
        match self {
            Command::Topo(a) => a.json,
            Command::Sim(a) => a.json,
            Command::Matrix(a) => a.json,
            Command::Record(_) => false,
            Command::Replay(a) => a.json,
            Command::Explain(a) => a.json,
            Command::Report(a) => a.json,
            Command::Run(a) => a.live.json,
            Command::Daemon(a) => a.live.json,
            Command::Top(a) => a.json,
            Command::List(a) => a.json,
            Command::Calibrate(a) => a.json,
            Command::Migrate(a) => a.json,
            Command::Doctor(a) => a.json,
            Command::Completions(_) | Command::Man(_) => false,
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_error(&e),
    };
    let json = cli.command.json();
    let result = match cli.command {
        Command::Topo(args) => commands::topo::run(&args),
        Command::Sim(args) => commands::sim::run(&args),
        Command::Matrix(args) => commands::matrix::run(&args),
        Command::Record(args) => commands::record::run_record(&args),
        Command::Replay(args) => commands::record::run_replay(&args),
        Command::Explain(args) => commands::explain::run(&args),
        Command::Report(args) => commands::report::run(&args),
        Command::Run(args) => commands::run::run(&args),
        Command::Daemon(args) => commands::daemon::run(&args),
        Command::Top(args) => top::run(&args),
        Command::Migrate(args) => commands::migrate::run(&args),
        Command::Completions(args) => commands::shell::completions(&args, Cli::command()),
        Command::Man(args) => commands::shell::man(&args, Cli::command()),
        Command::List(args) => commands::list::run(&args),
        Command::Doctor(args) => commands::doctor::run(&args),
        Command::Calibrate(args) => commands::calibrate::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(err) if err.is::<output::Closed>() => ExitCode::from(output::CLOSED_STATUS),
        Err(err) => {
            noteln!("rondpoint: error: {err}");
            for cause in err.chain().skip(1) {
                noteln!("  caused by: {cause}");
            }
            if json {
                let causes: Vec<String> = err.chain().skip(1).map(|c| c.to_string()).collect();
                json_error(&err.to_string(), &causes, status::code(&err));
            }
            status::of(&err)
        }
    }
}

/// A `--json` command that fails says so on standard output too, as one JSON document
/// (docs/reliability.md), unless it printed its own document before failing.
fn json_error(message: &str, causes: &[String], status: u8) {
    if output::wrote() {
        return;
    }
    let doc = serde_json::json!({ "error": message, "causes": causes, "status": status });
    // A closed standard output leaves the message on standard error only.
    let _ = output::write(format_args!("{doc:#}\n"));
}

/// Whether the command line asks for JSON: `--json` before any `--` (what follows belongs to
/// `run`'s program).
fn json_asked() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

/// What the argument parser says instead of a command: help and version on standard output
/// (through [`output::write()`], so that `rondpoint --help | head` ends with the SIGPIPE status),
/// a usage error on standard error with status 2.
fn parse_error(e: &clap::Error) -> ExitCode {
    let text = e.render().to_string();
    if e.use_stderr() {
        note!("{text}");
        let status = u8::try_from(e.exit_code()).unwrap_or(2);
        if json_asked() {
            let first = text.lines().next().unwrap_or_default();
            let message = first.strip_prefix("error: ").unwrap_or(first);
            json_error(message, &[], status);
        }
        return ExitCode::from(status);
    }
    match output::write(format_args!("{text}")) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.is::<output::Closed>() => ExitCode::from(output::CLOSED_STATUS),
        Err(_) => ExitCode::FAILURE,
    }
}
