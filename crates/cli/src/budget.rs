//! `--budget`: the wall time a simulation may take. Checked before anything runs, from the pace
//! the simulator keeps on each workload's first steps ([`rondpoint_sim::machine::Pace`]), so
//! that a command that would run for hours or days is refused at once with its estimate; and
//! while it runs, since a policy adds its own time to the simulator's (Carrefour's sampling
//! several times the simulator's on large machines): a run still going when the budget is
//! spent stops there with an error.

use rondpoint_engine::{OnStop, StopSignal};
use rondpoint_sim::machine::Pace;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The wall time a command may take; `None`: no limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget(pub Option<Duration>);

/// Parses `90s`, `20m`, `2h`, `1.5h`, `3d`, a bare number of seconds, or `none`.
pub fn parse(s: &str) -> Result<Budget, String> {
    if s == "none" {
        return Ok(Budget(None));
    }
    let (number, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let scale = match unit {
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => {
            return Err(
                "a duration is a number with s, m, h or d (90s, 20m, 2h), or 'none'".into(),
            );
        }
    };
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v * scale <= 366.0 * 86_400.0 => {
            Ok(Budget(Some(Duration::from_secs_f64(v * scale))))
        }
        _ => Err("a duration is a number above 0 and at most a year (366d), or 'none'".into()),
    }
}

/// A wall time for people: "35 s", "14 min", "2.3 h", "4.1 days".
pub fn human(secs: f64) -> String {
    if secs < 90.0 {
        format!("{secs:.0} s")
    } else if secs < 3600.0 {
        format!("{:.0} min", secs / 60.0)
    } else if secs < 2.0 * 86_400.0 {
        format!("{:.1} h", secs / 3600.0)
    } else {
        format!("{:.1} days", secs / 86_400.0)
    }
}

/// What a command plans to run: each workload's pace and how many runs it has.
#[derive(Debug, Default)]
pub struct Estimate {
    /// Wall seconds the whole command should take, the simulator alone.
    pub wall_s: f64,
    /// The workload that weighs most: its name and machine's, its pace and runs.
    heaviest: Option<(String, Pace, usize)>,
}

impl Estimate {
    /// Adds `runs` runs of `workload` on `machine` at `pace`.
    pub fn add(&mut self, machine: &str, workload: &str, pace: Pace, runs: usize) {
        let wall = pace.wall_s() * runs as f64;
        self.wall_s += wall;
        let heavier = self
            .heaviest
            .as_ref()
            .is_none_or(|(_, p, n)| p.wall_s() * (*n as f64) < wall);
        if heavier {
            self.heaviest = Some((format!("{workload} on {machine}"), pace, runs));
        }
    }
}

impl Budget {
    /// Refuses `estimate` when it exceeds the budget, saying what weighs and what to do.
    pub fn check(&self, estimate: &Estimate) -> anyhow::Result<()> {
        let Some(limit) = self.0 else {
            return Ok(());
        };
        if estimate.wall_s <= limit.as_secs_f64() {
            return Ok(());
        }
        let why = match &estimate.heaviest {
            Some((workload, pace, runs)) => format!(
                "{workload} should last about {:.0} simulated s{}, which the \
                 simulator alone runs at {:.2} s of wall time per simulated second, in {runs} \
                 run{}",
                pace.simulated_s,
                if pace.simulated_s >= rondpoint_sim::experiment::TIME_LIMIT_S {
                    " (the time limit)"
                } else {
                    ""
                },
                pace.wall_per_simulated_s,
                if *runs == 1 { "" } else { "s" },
            ),
            None => String::new(),
        };
        bad_input!(
            "this command would take about {} of wall time, more than --budget ({}): {why}; \
             policies add their own time to that. Run less (fewer policies, seeds or \
             workloads, a smaller machine or workload) or raise --budget (e.g. --budget {}, \
             or --budget none)",
            human(estimate.wall_s),
            human(limit.as_secs_f64()),
            suggest(estimate.wall_s)
        )
    }

    /// Starts the clock of the command's runs.
    pub fn watch(&self) -> Watch {
        Watch {
            limit: self.0,
            started: Instant::now(),
            stop: StopSignal {
                flag: Arc::new(AtomicBool::new(false)),
                signal: Arc::new(AtomicUsize::new(0)),
                on_stop: OnStop::End,
            },
        }
    }
}

/// A budget suggestion a quarter above `secs`, in the unit `human` shows it in.
fn suggest(secs: f64) -> String {
    let above = secs * 1.25;
    if secs < 3600.0 {
        format!("{}m", (above / 60.0).ceil().max(1.0))
    } else if secs < 2.0 * 86_400.0 {
        format!("{}h", (above / 3600.0).ceil())
    } else {
        format!("{}d", (above / 86_400.0).ceil())
    }
}

/// The wall clock of a command's runs against its budget.
#[derive(Debug)]
pub struct Watch {
    limit: Option<Duration>,
    started: Instant,
    stop: StopSignal,
}

impl Watch {
    /// The signal the engine watches: set once the budget is spent.
    pub fn stop_signal(&self) -> StopSignal {
        self.stop.clone()
    }

    /// Called between epochs: sets the stop signal when the budget is spent.
    pub fn tick(&self) {
        if self.limit.is_some_and(|l| self.started.elapsed() > l) {
            self.stop.flag.store(true, Ordering::Relaxed);
        }
    }

    /// The error of a run stopped because the budget was spent, if it was.
    pub fn spent(&self) -> Option<anyhow::Error> {
        let limit = self.limit?;
        self.stop.flag.load(Ordering::Relaxed).then(|| {
            anyhow::anyhow!(
                "stopped after {} of wall time, the --budget ({}); the estimate made before \
                 the runs did not count the policies' own time. Raise --budget (or --budget \
                 none) to let it finish",
                human(self.started.elapsed().as_secs_f64()),
                human(limit.as_secs_f64())
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_their_unit_and_within_a_year() {
        assert_eq!(parse("90s"), Ok(Budget(Some(Duration::from_secs(90)))));
        assert_eq!(parse("90"), Ok(Budget(Some(Duration::from_secs(90)))));
        assert_eq!(parse("20m"), Ok(Budget(Some(Duration::from_secs(1200)))));
        assert_eq!(parse("1.5h"), Ok(Budget(Some(Duration::from_secs(5400)))));
        assert_eq!(parse("none"), Ok(Budget(None)));
        for bad in ["", "h", "0", "-1h", "NaNh", "infs", "400d", "2w", "1e300"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_estimate_over_the_budget_is_refused_with_the_heaviest_workload() {
        let pace = Pace {
            simulated_s: 3600.0,
            wall_per_simulated_s: 1.0,
            setup_wall_s: 0.0,
        };
        let mut e = Estimate::default();
        e.add(
            "m",
            "small",
            Pace {
                simulated_s: 1.0,
                ..pace
            },
            1,
        );
        e.add("m", "big", pace, 3);
        let hour = Budget(Some(Duration::from_secs(3600)));
        let err = hour.check(&e).unwrap_err().to_string();
        assert!(err.contains("about 3.0 h"), "{err}");
        assert!(err.contains("big on m should last about 3600 simulated s (the time limit)"));
        assert!(err.contains("--budget 4h"), "{err}");
        let day = Budget(Some(Duration::from_secs(86_400)));
        assert!(day.check(&e).is_ok());
        assert!(Budget(None).check(&e).is_ok());
    }

    #[test]
    fn human_times_pick_a_unit() {
        assert_eq!(human(35.0), "35 s");
        assert_eq!(human(840.0), "14 min");
        assert_eq!(human(8280.0), "2.3 h");
        assert_eq!(human(4.0 * 86_400.0), "4.0 days");
    }
}
