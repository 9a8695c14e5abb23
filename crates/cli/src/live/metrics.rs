//! The daemon's Prometheus / OpenMetrics endpoint (`daemon --metrics ADDR`): what each epoch
//! saw and did, as metrics a Prometheus server scrapes from `/metrics`.
//!
//! Names follow Prometheus's conventions (`rondpoint_` prefix, the unit in the name, `_total`
//! for counters); labels are `node`, `technique`, `outcome`, and `pid`/`comm` for at most
//! [`MAX_PROCESSES`] processes (the largest by resident memory), replaced every epoch so
//! that processes that exit leave no series behind. The encoding is prometheus-client's; the
//! HTTP server tiny_http's, one thread, GET /metrics only.

use anyhow::{Context, Result};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use rondpoint_engine::EpochReport;
use rondpoint_linux::machine::SampleTotals;
use rondpoint_linux::sys::{RealSys, Sys};
use rondpoint_model::{OutcomeStatus, Topology, metrics};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// Most processes given their own series (by resident memory): a daemon over a cgroup of
/// thousands of processes must not make thousands of series per node.
pub const MAX_PROCESSES: usize = 100;

type FloatGauge = Gauge<f64, AtomicU64>;
type FloatCounter = Counter<f64, AtomicU64>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodeLabel {
    node: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodeState {
    node: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ActionLabels {
    technique: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TechniqueLabel {
    technique: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProcessNode {
    pid: String,
    comm: String,
    node: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CgroupLabel {
    cgroup: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CgroupNode {
    cgroup: String,
    node: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CgroupTechnique {
    cgroup: String,
    technique: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CounterLabel {
    counter: String,
}

/// The metrics, updated each epoch.
#[derive(Debug)]
pub struct Metrics {
    registry: Arc<Registry>,
    nodes: Vec<String>,
    epochs: Counter,
    managed: Gauge,
    samples: Counter,
    lost: Counter,
    throttled: Counter,
    node_memory: Family<NodeState, Gauge>,
    node_dram: Family<NodeLabel, FloatGauge>,
    imbalance: FloatGauge,
    lar: FloatGauge,
    estimated: Family<CounterLabel, Gauge>,
    actions: Family<ActionLabels, Counter>,
    pages: Family<TechniqueLabel, Counter>,
    process_resident: Family<ProcessNode, Gauge>,
    cgroup_processes: Family<CgroupLabel, Gauge>,
    cgroup_memory: Family<CgroupNode, Gauge>,
    cgroup_samples: Family<CgroupLabel, Counter>,
    cgroup_actions: Family<CgroupTechnique, Counter>,
    cgroup_pages: Family<CgroupLabel, Counter>,
    cpu: FloatCounter,
    peak_rss: Gauge,
    totals: Arc<SampleTotals>,
    seen: (u64, u64, u64),
    cpu_seen_ns: u64,
    sys: RealSys,
}

impl Metrics {
    /// The metrics of a daemon on `topology`, reading the sampler's totals from `totals`.
    pub fn new(topology: &Topology, totals: Arc<SampleTotals>) -> Self {
        let mut r = Registry::with_prefix("rondpoint");
        let m = Self {
            registry: Arc::new(Registry::default()),
            nodes: topology
                .nodes()
                .iter()
                .map(|n| n.id.0.to_string())
                .collect(),
            epochs: Counter::default(),
            managed: Gauge::default(),
            samples: Counter::default(),
            lost: Counter::default(),
            throttled: Counter::default(),
            node_memory: Family::default(),
            node_dram: Family::default(),
            imbalance: FloatGauge::default(),
            lar: FloatGauge::default(),
            estimated: Family::default(),
            actions: Family::default(),
            pages: Family::default(),
            process_resident: Family::default(),
            cgroup_processes: Family::default(),
            cgroup_memory: Family::default(),
            cgroup_samples: Family::default(),
            cgroup_actions: Family::default(),
            cgroup_pages: Family::default(),
            cpu: FloatCounter::default(),
            peak_rss: Gauge::default(),
            totals,
            seen: (0, 0, 0),
            cpu_seen_ns: 0,
            sys: RealSys::new(),
        };
        m.register(&mut r);
        Self {
            registry: Arc::new(r),
            ..m
        }
    }

    /// Registers every metric under its name, help and unit.
    fn register(&self, r: &mut Registry) {
        r.register("epochs", "Epochs completed", self.epochs.clone());
        r.register(
            "managed_processes",
            "Processes managed in the last epoch",
            self.managed.clone(),
        );
        r.register("samples", "Access samples taken", self.samples.clone());
        r.register(
            "samples_lost",
            "Samples lost because the ring buffers were full",
            self.lost.clone(),
        );
        r.register(
            "sampler_throttled",
            "Times the kernel throttled the sampler",
            self.throttled.clone(),
        );
        r.register_with_unit(
            "node_memory",
            "Memory of each node, used and free",
            Unit::Bytes,
            self.node_memory.clone(),
        );
        r.register(
            "node_dram_accesses_per_second",
            "DRAM accesses each node's memory controller served in the last epoch (estimated \
             from samples unless rondpoint_estimated{counter=\"node-dram\"} is absent)",
            self.node_dram.clone(),
        );
        r.register_with_unit(
            "memory_controller_imbalance",
            "Standard deviation of the controllers' load over its mean, over the nodes that \
             carry the traffic, last epoch",
            Unit::Other("ratio".into()),
            self.imbalance.clone(),
        );
        r.register_with_unit(
            "local_access",
            "Share of DRAM accesses served by the accessing CPU's node, last epoch",
            Unit::Other("ratio".into()),
            self.lar.clone(),
        );
        r.register(
            "estimated",
            "1 when a counter group is estimated rather than counted by hardware",
            self.estimated.clone(),
        );
        r.register(
            "actions",
            "Placement actions by technique and outcome",
            self.actions.clone(),
        );
        r.register(
            "pages_placed",
            "4 KiB pages placed by technique (moved, or found where asked)",
            self.pages.clone(),
        );
        r.register_with_unit(
            "process_resident",
            "Resident memory of the largest managed processes on each node",
            Unit::Bytes,
            self.process_resident.clone(),
        );
        self.register_cgroups(r);
        r.register_with_unit(
            "cpu",
            "rondpoint's own CPU time",
            Unit::Seconds,
            self.cpu.clone(),
        );
        r.register_with_unit(
            "peak_resident_memory",
            "rondpoint's own peak resident memory",
            Unit::Bytes,
            self.peak_rss.clone(),
        );
    }

    /// Takes in one epoch.
    pub fn epoch(&mut self, r: &EpochReport<'_>) {
        let obs = r.observation;
        self.epochs.inc();
        self.managed.set(obs.processes.len() as i64);
        let (samples, lost, throttled) = self.totals.get();
        self.samples.inc_by(samples.saturating_sub(self.seen.0));
        self.lost.inc_by(lost.saturating_sub(self.seen.1));
        self.throttled.inc_by(throttled.saturating_sub(self.seen.2));
        self.seen = (samples, lost, throttled);
        for m in &obs.memory {
            let node = m.node.0.to_string();
            let used = m.total_bytes.saturating_sub(m.free_bytes);
            for (state, v) in [("used", used), ("free", m.free_bytes)] {
                let labels = NodeState {
                    node: node.clone(),
                    state: state.into(),
                };
                self.node_memory.get_or_create(&labels).set(gauge(v));
            }
        }
        let global = metrics::global(obs);
        for (node, per_us) in self.nodes.iter().zip(&global.maptu_by_node) {
            let labels = NodeLabel { node: node.clone() };
            self.node_dram.get_or_create(&labels).set(per_us * 1e6);
        }
        self.imbalance.set(global.mc_imbalance_pct / 100.0);
        self.lar.set(global.lar);
        self.estimated.clear();
        for e in &obs.counters.estimated {
            let labels = CounterLabel {
                counter: serde_json::to_value(e.group)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
            };
            self.estimated.get_or_create(&labels).set(1);
        }
        for (a, o) in r.actions.iter().zip(r.outcomes) {
            let labels = ActionLabels {
                technique: a.technique().into(),
                outcome: outcome_name(o.status).into(),
            };
            self.actions.get_or_create(&labels).inc();
            let labels = TechniqueLabel {
                technique: a.technique().into(),
            };
            self.pages.get_or_create(&labels).inc_by(o.pages_done);
        }
        self.processes(obs);
        let cpu_ns = self.sys.own_cpu_time_ns();
        let delta = cpu_ns.saturating_sub(self.cpu_seen_ns);
        self.cpu.inc_by(delta as f64 / 1e9);
        self.cpu_seen_ns = cpu_ns;
        self.peak_rss.set(gauge(self.sys.own_peak_rss_bytes()));
    }

    /// The per-cgroup metrics (`daemon --cgroup`: one label value per cgroup given).
    fn register_cgroups(&self, r: &mut Registry) {
        r.register(
            "cgroup_processes",
            "Managed processes in each --cgroup, last epoch",
            self.cgroup_processes.clone(),
        );
        r.register_with_unit(
            "cgroup_memory",
            "Resident memory of each --cgroup's managed processes on each node",
            Unit::Bytes,
            self.cgroup_memory.clone(),
        );
        r.register(
            "cgroup_samples",
            "Access samples of each --cgroup's processes",
            self.cgroup_samples.clone(),
        );
        r.register(
            "cgroup_actions",
            "Placement actions on each --cgroup's processes by technique",
            self.cgroup_actions.clone(),
        );
        r.register(
            "cgroup_pages_placed",
            "4 KiB pages placed for each --cgroup's processes",
            self.cgroup_pages.clone(),
        );
    }

    /// Takes in the epoch's per-cgroup figures (after [`Self::epoch`]).
    pub fn cgroups(&self, totals: &[crate::commands::daemon::CgroupTotals]) {
        for t in totals {
            let cgroup = CgroupLabel {
                cgroup: t.cgroup.clone(),
            };
            self.cgroup_processes
                .get_or_create(&cgroup)
                .set(gauge(t.processes as u64));
            for (node, bytes) in self.nodes.iter().zip(&t.memory_bytes_by_node) {
                let labels = CgroupNode {
                    cgroup: t.cgroup.clone(),
                    node: node.clone(),
                };
                self.cgroup_memory.get_or_create(&labels).set(gauge(*bytes));
            }
            self.cgroup_samples
                .get_or_create(&cgroup)
                .inc_by(t.samples_last_epoch);
            for (technique, n) in &t.actions_last_epoch {
                let labels = CgroupTechnique {
                    cgroup: t.cgroup.clone(),
                    technique: technique.clone(),
                };
                self.cgroup_actions.get_or_create(&labels).inc_by(*n);
            }
            self.cgroup_pages
                .get_or_create(&cgroup)
                .inc_by(t.pages_last_epoch);
        }
    }

    /// The largest processes' resident memory per node, the series of the others dropped.
    fn processes(&self, obs: &rondpoint_model::Observation) {
        self.process_resident.clear();
        let mut by_size: Vec<&rondpoint_model::ProcessInfo> = obs.processes.iter().collect();
        by_size.sort_by_key(|p| std::cmp::Reverse(p.resident_bytes_by_node.iter().sum::<u64>()));
        for p in by_size.into_iter().take(MAX_PROCESSES) {
            for (node, bytes) in self.nodes.iter().zip(&p.resident_bytes_by_node) {
                let labels = ProcessNode {
                    pid: p.pid.0.to_string(),
                    comm: p.comm.clone(),
                    node: node.clone(),
                };
                self.process_resident
                    .get_or_create(&labels)
                    .set(gauge(*bytes));
            }
        }
    }

    /// Serves `/metrics` on `addr` from a thread of its own; returns the address bound (the
    /// port the kernel chose for port 0).
    pub fn serve(&self, addr: SocketAddr) -> Result<SocketAddr> {
        let server = tiny_http::Server::http(addr)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("serving metrics on {addr}"))?;
        let bound = server
            .server_addr()
            .to_ip()
            .context("the metrics server has no IP address")?;
        let registry = Arc::clone(&self.registry);
        std::thread::Builder::new()
            .name("rondpoint-metrics".into())
            .spawn(move || {
                for request in server.incoming_requests() {
                    let openmetrics = request.headers().iter().any(|h| {
                        h.field.equiv("Accept")
                            && h.value.as_str().contains("application/openmetrics-text")
                    });
                    let reply = response(&registry, request.method(), request.url(), openmetrics);
                    let _ = request.respond(reply);
                }
            })
            .context("starting the metrics server")?;
        Ok(bound)
    }
}

/// The response to one request: the metrics for GET /metrics (OpenMetrics to a client that
/// asks for it, as Prometheus does; the older text format otherwise), else 404 or 405.
fn response(
    registry: &Registry,
    method: &tiny_http::Method,
    url: &str,
    openmetrics: bool,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let path = url.split('?').next().unwrap_or(url);
    let (status, body, kind) = match (method, path, encode(registry)) {
        (tiny_http::Method::Get, "/metrics", Ok(text)) if openmetrics => (200, text, OPENMETRICS),
        (tiny_http::Method::Get, "/metrics", Ok(text)) => (200, text_format(&text), TEXT_FORMAT),
        (tiny_http::Method::Get, "/metrics", Err(e)) => (500, format!("{e}\n"), "text/plain"),
        (tiny_http::Method::Get, _, _) => {
            (404, "rondpoint serves /metrics only\n".into(), "text/plain")
        }
        _ => (405, "GET /metrics only\n".into(), "text/plain"),
    };
    let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], kind.as_bytes());
    let response = tiny_http::Response::from_string(body).with_status_code(status);
    match header {
        Ok(h) => response.with_header(h),
        Err(()) => response,
    }
}

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// OpenMetrics text (prometheus-client's only encoding) in Prometheus's older text format
/// (0.0.4), which curl users, node_exporter-style tooling and `promtool check metrics` read:
/// a counter's HELP and TYPE name its sample (`..._total`), and there are no UNIT or EOF
/// lines. Written here because the crate encodes OpenMetrics only; the two formats differ in
/// nothing else rondpoint uses.
fn text_format(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|p| line.strip_prefix(p).map(|rest| (p, rest)));
        match meta {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let suffix = if counters.contains(name) {
                    "_total"
                } else {
                    ""
                };
                out.push_str(&format!("{prefix}{name}{suffix} {tail}\n"));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

fn encode(registry: &Registry) -> Result<String> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry)
        .map_err(|e| anyhow::anyhow!("encoding the metrics: {e}"))?;
    Ok(text)
}

fn gauge(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn outcome_name(status: OutcomeStatus) -> &'static str {
    match status {
        OutcomeStatus::Applied => "applied",
        OutcomeStatus::Partial => "partial",
        OutcomeStatus::Failed => "failed",
        OutcomeStatus::Skipped => "skipped",
        OutcomeStatus::Substituted => "substituted",
    }
}

/// `--metrics ADDR`: a port alone (`9464` or `:9464`) is served on loopback; a host:port as
/// given.
pub fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    let port_only = text.strip_prefix(':').unwrap_or(text);
    if let Ok(port) = port_only.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    text.parse::<SocketAddr>().map_err(|_| {
        format!(
            "'{text}' is not a port or an address with a port (9464, 127.0.0.1:9464, [::1]:9464)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_older_text_format_names_counters_by_their_samples() {
        let om = "# HELP rondpoint_epochs Epochs completed.\n# TYPE rondpoint_epochs counter\n\
                  rondpoint_epochs_total 7\n# HELP rondpoint_cpu_seconds CPU.\n\
                  # TYPE rondpoint_cpu_seconds counter\n# UNIT rondpoint_cpu_seconds seconds\n\
                  rondpoint_cpu_seconds_total 0.5\n# HELP rondpoint_managed_processes N.\n\
                  # TYPE rondpoint_managed_processes gauge\nrondpoint_managed_processes 1\n# EOF\n";
        assert_eq!(
            text_format(om),
            "# HELP rondpoint_epochs_total Epochs completed.\n\
             # TYPE rondpoint_epochs_total counter\nrondpoint_epochs_total 7\n\
             # HELP rondpoint_cpu_seconds_total CPU.\n# TYPE rondpoint_cpu_seconds_total counter\n\
             rondpoint_cpu_seconds_total 0.5\n# HELP rondpoint_managed_processes N.\n\
             # TYPE rondpoint_managed_processes gauge\nrondpoint_managed_processes 1\n"
        );
    }

    #[test]
    fn a_port_alone_is_served_on_loopback() {
        assert_eq!(
            parse_addr("9464").unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert_eq!(
            parse_addr(":9464").unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert_eq!(
            parse_addr("0.0.0.0:80").unwrap(),
            "0.0.0.0:80".parse().unwrap()
        );
        assert!(parse_addr("localhost").unwrap_err().contains("not a port"));
        assert!(parse_addr("70000").is_err());
    }
}
