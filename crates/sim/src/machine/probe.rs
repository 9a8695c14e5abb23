//! How long a run will take, measured before it starts: a copy of the machine runs a few
//! steps with no policy, and the pace it keeps (wall time per simulated second, instructions
//! per simulated second of each thread) is carried over the whole run. A run's wall time grows
//! with threads, nodes and links (every thread's misses cross the network each step) and with
//! the simulated time its work needs, which the inputs alone do not tell (a memory-bound
//! program on one controller runs a hundred times longer than its instruction count says).

use super::SimMachine;
use std::time::Instant;

/// Wall time the probe may spend stepping (seconds), allocation excluded.
const PROBE_WALL_S: f64 = 0.25;
/// Steps the probe takes at most.
const PROBE_STEPS: u32 = 50;

/// A run's length at the pace of its first steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pace {
    /// Simulated seconds the run should last: each thread's instructions at the rate it kept
    /// in the probe (an application not started yet: from its start, at the slowest rate
    /// seen), at most `limit_s`.
    pub simulated_s: f64,
    /// Wall seconds per simulated second, the simulator alone (a policy adds its own time:
    /// Carrefour's sampling several times the simulator's on large machines).
    pub wall_per_simulated_s: f64,
    /// Wall seconds the allocation of the applications' memory took (once per run).
    pub setup_wall_s: f64,
}

impl Pace {
    /// Wall seconds the run should take, the simulator alone.
    pub fn wall_s(&self) -> f64 {
        self.setup_wall_s + self.simulated_s * self.wall_per_simulated_s
    }
}

impl SimMachine {
    /// Measures the pace of a run of this machine (not started yet) on a copy of it; the
    /// machine itself is left as it was. `limit_s`: the longest a run may last.
    pub fn probe(&self, limit_s: f64) -> Pace {
        let mut m = self.clone();
        let dt = self.config.step_ns as f64;
        let started = Instant::now();
        m.step(dt);
        let setup_wall_s = started.elapsed().as_secs_f64();
        let (t0, sim0) = (Instant::now(), m.now_ns);
        let mut steps = 0;
        while steps < PROBE_STEPS
            && t0.elapsed().as_secs_f64() < PROBE_WALL_S
            && !rondpoint_engine::Machine::finished(&m)
        {
            m.step(dt);
            steps += 1;
        }
        let simulated_ns = (m.now_ns - sim0).max(dt);
        let wall_per_simulated_s = t0.elapsed().as_secs_f64() / (simulated_ns / 1e9);
        Pace {
            simulated_s: m.projected_end_ns(limit_s * 1e9) / 1e9,
            wall_per_simulated_s,
            setup_wall_s,
        }
    }

    /// When the last application should end, at the rates its threads kept so far (at most
    /// `limit_ns`).
    fn projected_end_ns(&self, limit_ns: f64) -> f64 {
        let elapsed = self.now_ns;
        let rate = |t: &super::Thread| {
            let done = self.apps[t.app].instructions - t.remaining;
            let since = (elapsed - self.apps[t.app].start_ns).max(0.0);
            if since > 0.0 { done / since } else { 0.0 }
        };
        let slowest = self
            .threads
            .iter()
            .filter(|t| self.apps[t.app].allocated && t.done_ns.is_none())
            .map(rate)
            .filter(|&r| r > 0.0)
            .fold(f64::INFINITY, f64::min);
        let mut end: f64 = 0.0;
        for t in &self.threads {
            let app = &self.apps[t.app];
            let at = match t.done_ns {
                Some(done) => done,
                None if app.allocated && rate(t) > 0.0 => elapsed + t.remaining / rate(t),
                // Nothing retired yet: at the slowest pace seen.
                None if app.allocated && slowest.is_finite() => elapsed + t.remaining / slowest,
                None if slowest.is_finite() => app.start_ns + app.instructions / slowest,
                None => limit_ns,
            };
            end = end.max(at);
        }
        end.min(limit_ns)
    }
}
