//! The daemon's log: leveled lines on standard error through `tracing`, in the journal's own
//! form under systemd.
//!
//! Under systemd (standard error is the stream `JOURNAL_STREAM` names), each line starts with
//! its syslog priority (`<4>` a warning, `<6>` information: sd-daemon(3)), which the journal
//! stores as the entry's priority, and carries no time of its own (the journal adds it).
//! Elsewhere, a line has the time and level, in colour on a terminal.

use clap::ValueEnum;
use std::fmt;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::registry::LookupSpan;

/// `--log-level`: the least severe lines written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    /// Nothing.
    Off,
    /// Only what stopped a part of the work.
    Error,
    /// Also what the operator should look at (a selection that matches nothing, samples
    /// lost).
    Warn,
    /// Also the start, each epoch that did something or lost samples, and the end.
    Info,
    /// Also every epoch.
    Debug,
}

impl LogLevel {
    fn filter(self) -> LevelFilter {
        match self {
            LogLevel::Off => LevelFilter::OFF,
            LogLevel::Error => LevelFilter::ERROR,
            LogLevel::Warn => LevelFilter::WARN,
            LogLevel::Info => LevelFilter::INFO,
            LogLevel::Debug => LevelFilter::DEBUG,
        }
    }
}

/// Sends the process's log to standard error from now on, at `level`. A second call (tests
/// that run two daemons in one process) keeps the first.
pub fn init(level: LogLevel) {
    let builder = tracing_subscriber::fmt()
        .with_max_level(level.filter())
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = if to_journal() {
        builder.event_format(Journal).try_init()
    } else {
        use std::io::IsTerminal;
        builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init()
    };
}

/// Whether standard error is the journal's stream: `JOURNAL_STREAM` holds its device and inode
/// (systemd.exec(5)).
fn to_journal() -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(want) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let Ok(meta) = std::fs::metadata("/proc/self/fd/2") else {
        return false;
    };
    want.to_string_lossy() == format!("{}:{}", meta.dev(), meta.ino())
}

/// The syslog priority of a level (sd-daemon(3): 3 error, 4 warning, 6 info, 7 debug).
fn priority(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        _ => 7,
    }
}

/// A line as the journal reads it: `<priority>message`.
struct Journal;

impl<S, N> FormatEvent<S, N> for Journal
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write!(writer, "<{}>", priority(event.metadata().level()))?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_map_to_syslog_priorities() {
        assert_eq!(priority(&Level::ERROR), 3);
        assert_eq!(priority(&Level::WARN), 4);
        assert_eq!(priority(&Level::INFO), 6);
        assert_eq!(priority(&Level::DEBUG), 7);
        assert_eq!(LogLevel::Off.filter(), LevelFilter::OFF);
        assert_eq!(LogLevel::Info.filter(), LevelFilter::INFO);
    }
}
