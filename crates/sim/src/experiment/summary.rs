//! Runs of the same machine, workload and policy over several seeds, summarised: the mean and
//! the spread of each application's completion time (`rondpoint sim --seeds N`).
//!
//! The spread is the sample standard deviation (n - 1 in the denominator): [Gaud10 §4.2]
//! reports standard deviations over ten runs, and its §5.3 "variation" is taken the same way.

use super::result::RunResult;
use serde::Serialize;

/// Mean, sample standard deviation, least and greatest of some completion times (seconds).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub mean_s: f64,
    /// Sample standard deviation (0 for a single run).
    pub std_s: f64,
    pub min_s: f64,
    pub max_s: f64,
}

impl Spread {
    /// Of these values (all 0 for none).
    pub fn of(values: &[f64]) -> Self {
        let n = values.len();
        if n == 0 {
            return Self {
                mean_s: 0.0,
                std_s: 0.0,
                min_s: 0.0,
                max_s: 0.0,
            };
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Self {
            mean_s: mean,
            std_s: var.sqrt(),
            min_s: values.iter().copied().fold(f64::INFINITY, f64::min),
            max_s: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }

    /// The standard deviation as a percentage of the mean (0 when the mean is 0).
    pub fn std_pct(&self) -> f64 {
        if self.mean_s > 0.0 {
            100.0 * self.std_s / self.mean_s
        } else {
            0.0
        }
    }
}

/// One application's completion time over the seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AppSpread {
    pub name: String,
    #[serde(flatten)]
    pub spread: Spread,
}

/// The runs of one machine, workload and policy over several seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub machine: String,
    pub workload: String,
    pub policy: String,
    pub seeds: Vec<u64>,
    /// Time until the last application finished.
    pub completion: Spread,
    /// Each application, in scenario order.
    pub apps: Vec<AppSpread>,
}

/// Groups runs by machine, workload and policy (in the order they first appear) and
/// summarises each group.
pub fn summarize(runs: &[RunResult]) -> Vec<Summary> {
    let mut keys: Vec<(&str, &str, &str)> = Vec::new();
    for r in runs {
        let k = (r.machine.as_str(), r.workload.as_str(), r.policy.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(machine, workload, policy)| {
            let group: Vec<&RunResult> = runs
                .iter()
                .filter(|r| r.machine == machine && r.workload == workload && r.policy == policy)
                .collect();
            let names: Vec<&str> = group
                .first()
                .map(|r| r.apps.iter().map(|a| a.name.as_str()).collect())
                .unwrap_or_default();
            let apps = names
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    let times: Vec<f64> = group
                        .iter()
                        .filter_map(|r| r.apps.get(i).map(|a| a.completion_s))
                        .collect();
                    AppSpread {
                        name: (*name).to_string(),
                        spread: Spread::of(&times),
                    }
                })
                .collect();
            let completion: Vec<f64> = group.iter().map(|r| r.completion_s).collect();
            Summary {
                machine: machine.to_string(),
                workload: workload.to_string(),
                policy: policy.to_string(),
                seeds: group.iter().map(|r| r.seed).collect(),
                completion: Spread::of(&completion),
                apps,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_standard_deviation_and_extremes() {
        let s = Spread::of(&[10.0, 12.0, 14.0]);
        assert!((s.mean_s - 12.0).abs() < 1e-12);
        assert!((s.std_s - 2.0).abs() < 1e-12, "n - 1: sqrt(8 / 2)");
        assert_eq!((s.min_s, s.max_s), (10.0, 14.0));
        assert!((s.std_pct() - 100.0 / 6.0).abs() < 1e-9);
        assert_eq!(Spread::of(&[5.0]).std_s, 0.0);
        assert_eq!(Spread::of(&[]).mean_s, 0.0);
    }
}
