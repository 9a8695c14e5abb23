//! The parameters of the \[Gaud10\] policies: each one named, with its unit, default and
//! source (the paper's, or ours and why).

use rondpoint_policy_api::FileParam;
use rondpoint_policy_api::bounds::{Bounds, FRACTION, PERIOD_MS, ParamBounds, SEED};
use serde::{Deserialize, Serialize};

/// Where OAAS puts the applications before its first decision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InitialPlacement {
    /// One application per node, drawn at random from `seed`: the paper's setup, "applications
    /// are initially placed randomly on processors" [Gaud10 §5.3].
    #[default]
    Random,
    /// Application i on the i-th CPU node (by node number), for repeatable runs.
    InOrder,
    /// Where they already are (a daemon taking over running programs): each application's
    /// node is the one most of its threads ran on.
    None,
}

/// `[oaas]` and `[oaas-nopm]` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OaasConfig {
    /// Time between two decisions (ms). Default 300 [Gaud10 §5.2]: "every 300 milliseconds,
    /// OAAS checks the MAPI of all applications' threads". The policy decides at the first
    /// epoch end at least this long after its previous decision, over the counters of the
    /// whole interval, so the engine's epoch (`--epoch-ms`) must be at most this for the
    /// paper's period; longer epochs make it decide every epoch (and it says so).
    pub period_ms: u64,
    /// Least predicted gain for a swap (percentage points): A on a fast node and B on a slow
    /// one swap only when P_B - P_A exceeds it, P being the fast/slow gap (percent) the
    /// machine's MAPI-to-gap curve predicts from the application's MAPI. Default 5 [Gaud10
    /// §5.2]: "a predefined threshold (5%)", found experimentally. Our reading: percentage
    /// points of the predicted gaps (the paper does not say whether 5% is absolute or
    /// relative; P_diff is a difference of percentages, §5.1).
    pub min_gain_points: f64,
    /// How long each application runs alone on a fast node (s): a move's expected gain is
    /// counted over what is left of it, this less the work it has done (its time so far, a
    /// period on a slow node counting as the period over 1 + P/100, P its predicted gap).
    /// Default 10 [Gaud10 §3.2]: every input was sized "to complete their work in 10 seconds
    /// when scheduled on a fast processor". The paper states the aim, "the scheduler tries to
    /// make sure that all migrations costs will be amortized over time" (§5.1), not the
    /// horizon; for programs of other lengths (a daemon), set their expected run time.
    pub run_s: f64,
    /// CPU time one page's migration costs (µs per 4 KiB page moved): a move is made only
    /// when its expected gain over the applications' remaining time (seconds saved) exceeds
    /// its cost, each moved application's pages not on its new node times this, shared by its
    /// threads (ours: each thread is delayed by its share, as the simulator charges it).
    /// Default 5: the order of magnitude of Linux's per-page migration cost (move_pages and
    /// migrate_pages move about 200k pages/s on one core), the simulator's default
    /// `costs.migrate_page_us`. [Gaud10 §5.3] gives no per-page cost. 0 counts moves as free,
    /// with nothing to amortise: any move whose predicted gain passes `min_gain_points` is
    /// made (the rule before the amortisation test, and `oaas-nopm`'s, which moves no pages).
    pub migrate_page_us: f64,
    /// Most an application may lose by a move to a slow node (percentage points of its
    /// predicted fast/slow gap): a swap that would send an application whose predicted gap
    /// exceeds this to a slow node is not made. Unset by default: the paper's OAAS swaps
    /// whenever the gain passes `min_gain_points`, giving the sensitive application priority
    /// [Gaud10 §5.1]. `auto` sets it to its do-no-harm bound (`trial.max_loss`, 4 points):
    /// there a swap must not make an application more than 4% slower ([Dashti13 §1]'s
    /// "never hurts performance by more than 4%", ours for thread placement).
    pub max_loss_points: Option<f64>,
    /// The MAPI-to-gap curve: `"builtin"` for the curve rondpoint ships for a machine of this
    /// shape (node count, fast and slow nodes; `rondpoint calibrate` made them on the
    /// simulator's presets), or the path of a file `rondpoint calibrate -o FILE` wrote (read
    /// by the program before the policy is built). [Gaud10 §5.2] generates it "by running
    /// the microbenchmark at system startup". Default `"builtin"`; the simulator's commands
    /// measure the simulated machine's curve at start instead, unless one is given.
    pub curve: Curve,
    /// `random` (default: the paper's evaluation setup, [Gaud10 §5.3]), `in-order` or `none`;
    /// see [`InitialPlacement`].
    pub initial_placement: InitialPlacement,
    /// Seed of the random initial placement. Default 1; `rondpoint sim --seed/--seeds` sets
    /// it to each run's seed unless given.
    pub seed: u64,
}

impl Default for OaasConfig {
    fn default() -> Self {
        Self {
            period_ms: 300,
            min_gain_points: 5.0,
            run_s: 10.0,
            migrate_page_us: 5.0,
            max_loss_points: None,
            curve: Curve::Name("builtin".into()),
            initial_placement: InitialPlacement::Random,
            seed: 1,
        }
    }
}

/// The file parameter of oaas and oaas-nopm: `curve`, unless `"builtin"`.
pub const CURVE_FILE: &[FileParam] = &[FileParam {
    key: "curve",
    keywords: &["builtin"],
}];

/// `oaas.curve`: a name (`"builtin"`, or a file's path not read yet), or a file's path and
/// the text the program read from it (`rondpoint_policy_api::Registry::resolve_files`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Curve {
    Name(String),
    File { path: String, text: String },
}

/// `[static]` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StaticConfig {
    /// The mapping: `M0` to `M5` of [Gaud10 Table 4] (M0 = FFSS, M1 = FSFS, M2 = FSSF,
    /// M3 = SFFS, M4 = SFSF, M5 = SSFF for applications 1 to 4, in the order the machine
    /// lists them: a scenario's order), or one letter per application, `F` for a fast node
    /// and `S` for a slow one (ours: for other group sizes). Each application gets a node of
    /// its own, the fast and the slow ones taken by increasing node number. Default `M0`
    /// (the first of Table 4).
    pub mapping: String,
    /// Move each application's pages with it (ours). Default false: the paper's static
    /// mappings place applications before they start, when there are no pages to move; for
    /// programs already running (`rondpoint daemon`), true moves them as OAAS does.
    pub with_memory: bool,
}

impl Default for StaticConfig {
    fn default() -> Self {
        Self {
            mapping: "M0".into(),
            with_memory: false,
        }
    }
}

/// `[random]` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RandomConfig {
    /// Seed of the draw. Default 1; `rondpoint sim --seed/--seeds` sets it to each run's seed
    /// unless given. [Gaud10 §4.2]: "randomly choosing the processor assignment of an
    /// application", one node per application.
    pub seed: u64,
}

impl Default for RandomConfig {
    fn default() -> Self {
        Self { seed: 1 }
    }
}

/// `[linux]` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinuxSpreadConfig {
    /// Chance that the load balancer has exchanged a given thread with a thread of another
    /// application on another node by the time the programs settle (0 to 1). Default 0.25:
    /// chosen. [Gaud10 §4.1] says Linux "usually" spreads an application's threads one per
    /// processor and §4.2 that its results vary widely from run to run because of its load
    /// balancing (10% standard deviation); neither gives a rate.
    pub exchange_probability: f64,
    /// Mean rate at which the load balancer exchanges a running thread with a thread of
    /// another application on another node during the run (per second and thread). Default
    /// 0.02 (about one exchange per thread in 50 s): chosen. [Gaud10 §4.2] attributes Linux's
    /// run-to-run variation to its load balancing and gives no rate; 0 keeps every thread
    /// where the start left it.
    pub exchanges_per_s: f64,
    /// Seed of the draws. Default 1; `rondpoint sim --seed/--seeds` sets it to each run's
    /// seed unless given.
    pub seed: u64,
}

impl Default for LinuxSpreadConfig {
    fn default() -> Self {
        Self {
            exchange_probability: 0.25,
            exchanges_per_s: 0.02,
            seed: 1,
        }
    }
}

/// The range of each parameter of oaas and oaas-nopm ([`OaasConfig`]).
pub const OAAS_BOUNDS: &[ParamBounds] = &[
    ("period_ms", PERIOD_MS),
    ("min_gain_points", Bounds::new(0.0, 1000.0, "points")),
    ("run_s", Bounds::new(0.0, 1e7, "s")),
    ("migrate_page_us", Bounds::new(0.0, 1e6, "µs")),
    ("max_loss_points", Bounds::new(0.0, 1000.0, "points")),
    ("seed", SEED),
];

/// The range of random's parameter ([`RandomConfig`]).
pub const RANDOM_BOUNDS: &[ParamBounds] = &[("seed", SEED)];

/// The range of each parameter of linux-spread ([`LinuxSpreadConfig`]).
pub const SPREAD_BOUNDS: &[ParamBounds] = &[
    ("exchange_probability", FRACTION),
    ("exchanges_per_s", Bounds::new(0.0, 1000.0, "/s")),
    ("seed", SEED),
];
