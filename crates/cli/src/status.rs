//! rondpoint's exit statuses (docs/reliability.md): 0 done, 1 the job failed, 2 what was asked
//! is wrong (a flag, a file, a selection, a policy this machine cannot run; nothing was started
//! or changed), 141 standard output closed ([`crate::output`]); `run` exits with its program's.
//!
//! Which errors are the user's is decided here, in one place: the error types of the input
//! readers and checkers anywhere in an error's chain, and [`BadInput`] for what the commands
//! check themselves.

use rondpoint_engine::EngineError;
use rondpoint_sim::experiment::ExperimentError;
use std::fmt;
use std::process::ExitCode;

/// An error in what the user gave that no library error type says (a selection, a flag's
/// value); see [`Input::input`].
#[derive(Debug)]
pub struct BadInput(pub anyhow::Error);

impl BadInput {
    /// The user's error with this message.
    pub fn msg(message: String) -> Self {
        Self(anyhow::Error::msg(message))
    }
}

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for BadInput {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Marks an error as the user's.
pub trait Input<T> {
    fn input(self) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> Input<T> for Result<T, E> {
    fn input(self) -> anyhow::Result<T> {
        self.map_err(|e| anyhow::Error::new(BadInput(e.into())))
    }
}

/// `bail!` for the user's errors.
macro_rules! bad_input {
    ($($arg:tt)*) => {
        return Err(anyhow::Error::new($crate::status::BadInput(anyhow::anyhow!($($arg)*))))
    };
}

/// Whether one error of a chain says the input was wrong.
fn is_input(e: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(e) = e.downcast_ref::<ExperimentError>() {
        return match e {
            ExperimentError::TimeLimit { .. } => false,
            ExperimentError::Engine(e) => engine_input(e),
            ExperimentError::Sim(_) | ExperimentError::Policy(_) => true,
        };
    }
    if let Some(e) = e.downcast_ref::<EngineError>() {
        return engine_input(e);
    }
    e.is::<BadInput>()
        || e.is::<rondpoint_safeio::SafeIoError>()
        || e.is::<rondpoint_policy_api::PolicyError>()
        || e.is::<rondpoint_sim::presets::PresetError>()
        || e.is::<rondpoint_sim::spec::SpecError>()
        || e.is::<rondpoint_sim::SimError>()
        || e.is::<rondpoint_engine::record::RecordError>()
}

/// A policy this machine cannot run, or a bad epoch: the user's choice; a machine that failed
/// while running: not.
fn engine_input(e: &EngineError) -> bool {
    !matches!(e, EngineError::Machine(_))
}

/// A program `run` could not start: 127 when it was not found, 126 when it was found but could
/// not be executed, as a shell says.
#[derive(Debug, thiserror::Error)]
#[error("cannot start {program}: {errno}")]
pub struct NotStarted {
    pub program: String,
    pub errno: rondpoint_linux::sys::Errno,
}

fn not_started(e: &(dyn std::error::Error + 'static)) -> Option<u8> {
    use rondpoint_linux::machine::LiveError;
    use rondpoint_linux::sys::Errno;
    let errno = match (
        e.downcast_ref::<NotStarted>(),
        e.downcast_ref::<LiveError>(),
    ) {
        (Some(n), _) => n.errno,
        (None, Some(LiveError::Spawn { errno, .. })) => *errno,
        _ => return None,
    };
    Some(if errno == Errno::ENOENT { 127 } else { 126 })
}

/// The status for an error: 127 or 126 for a program that could not be started, 2 when it is
/// the user's, else 1.
pub fn of(err: &anyhow::Error) -> ExitCode {
    ExitCode::from(code(err))
}

/// [`of`] as a number.
pub fn code(err: &anyhow::Error) -> u8 {
    if let Some(code) = err.chain().find_map(not_started) {
        return code;
    }
    if err.chain().any(is_input) { 2 } else { 1 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn the_user_s_errors_give_2_wherever_they_are_in_the_chain() {
        let e: anyhow::Result<()> = Err(anyhow::anyhow!("no such process")).input();
        let e = e.context("selecting").unwrap_err();
        assert_eq!(of(&e), ExitCode::from(2));
        assert_eq!(e.to_string(), "selecting");
        assert_eq!(
            e.chain().nth(1).map(|c| c.to_string()).as_deref(),
            Some("no such process")
        );
        let e = anyhow::anyhow!("move_pages failed");
        assert_eq!(of(&e), ExitCode::FAILURE);
        let e = anyhow::Error::new(ExperimentError::TimeLimit {
            workload: "w".into(),
            policy: "p".into(),
            limit_s: 1.0,
        });
        assert_eq!(of(&e), ExitCode::FAILURE);
        let e = anyhow::Error::new(EngineError::Refused {
            policy: "n-mass".into(),
            why: "no counters".into(),
        })
        .context("running");
        assert_eq!(of(&e), ExitCode::from(2));
    }
}
