//! Placing a scenario on a machine: threads on cores, regions in the address space, and the
//! checks that refuse what cannot run.

use super::{App, Phase, RegionModel, SimConfig, SimError, SimMachine, Thread, Totals};
use crate::placement::{MAX_NODES, Popularity, Region};
use crate::scenario::{
    AppSpec, FirstTouch, NamedCount, Pattern, RegionSpec, Scenario, ThreadCount, ThreadPlacement,
};
use crate::spec::MachineSpec;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use rondpoint_model::bounds::Invalid;
use rondpoint_model::{MemPolicy, NodeId, PageSize, Pid, SamplingRequest, Tid};

impl SimMachine {
    /// Places a scenario on a machine. Refuses scenarios that cannot run: more threads than
    /// cores, a footprint larger than the machine's memory, nodes that do not exist.
    pub fn new(
        spec: MachineSpec,
        scenario: &Scenario,
        config: SimConfig,
    ) -> Result<Self, SimError> {
        let n = spec.nodes();
        let impossible = |what: Invalid| SimError::Impossible {
            scenario: scenario.name.clone(),
            machine: spec.name.clone(),
            what: what.0,
        };
        if n > MAX_NODES {
            return Err(impossible(Invalid(format!("more than {MAX_NODES} nodes"))));
        }
        if scenario.apps.is_empty() {
            return Err(impossible("the scenario has no [[app]]".into()));
        }
        crate::bounds::check_scenario(scenario).map_err(&impossible)?;
        check_names(scenario).map_err(&impossible)?;
        let free: Vec<f64> = spec
            .mem_bytes
            .iter()
            .map(|&b| b as f64 * (1.0 - config.os_reserve))
            .collect();
        check_footprint(scenario, &free).map_err(&impossible)?;
        let cpu_nodes = spec.cpu_nodes();
        let mut used = vec![false; spec.cores.len()];
        let mut apps = Vec::new();
        let mut threads = Vec::new();
        for (ai, a) in scenario.apps.iter().enumerate() {
            let mine = place_threads(&spec, a, ai, &cpu_nodes, &mut used, &mut threads)
                .map_err(&impossible)?;
            let mut app = build_app(a, ai, mine, n).map_err(&impossible)?;
            app.mempolicy = membind(&spec, a).map_err(&impossible)?;
            apps.push(app);
        }
        let mut m = Self::idle(spec, config, apps, threads, free);
        m.restart = scenario.restart;
        Ok(m)
    }

    /// The machine at time 0: applications placed, nothing allocated, every counter at zero.
    fn idle(
        spec: MachineSpec,
        config: SimConfig,
        apps: Vec<App>,
        threads: Vec<Thread>,
        free: Vec<f64>,
    ) -> Self {
        let n = spec.nodes();
        let resources = n + spec.directed_links();
        Self {
            free,
            rng: Pcg64Mcg::seed_from_u64(config.seed),
            background: vec![0.0; resources],
            copy_bytes: vec![0.0; resources],
            totals: Totals {
                mc_accesses: vec![0.0; n],
                mc_bytes: vec![0.0; n],
                accesses_by_source: vec![0.0; n],
                link_bytes: vec![0.0; spec.directed_links()],
                ..Totals::default()
            },
            e_start_ns: 0.0,
            e_mc_by_source: vec![0.0; n * n],
            e_mc_writes: vec![0.0; n],
            e_link_bytes: vec![0.0; spec.directed_links()],
            e_samples: Vec::new(),
            e_samples_offered: 0,
            e_collapses: Vec::new(),
            epoch: 0,
            restart: false,
            layout: None,
            now_ns: 0.0,
            warm: None,
            sampling: SamplingRequest::NONE,
            spec,
            config,
            apps,
            threads,
        }
    }
}

/// Refuses a scenario whose regions, rounded up to their pages, need more memory than the
/// machine can give applications (`free`, per node), before any region is built.
fn check_footprint(scenario: &Scenario, free: &[f64]) -> Result<(), Invalid> {
    let (mut footprint, mut pages) = (0.0, 0.0);
    for r in scenario.apps.iter().flat_map(|a| &a.regions) {
        let page = r.page_size.bytes() as f64;
        let n = ((r.size_mib.get() * 1048576.0) / page).ceil().max(1.0);
        pages += n;
        footprint += n * page;
    }
    crate::bounds::scenario::PAGES
        .check("the scenario's pages", pages)
        .map_err(|e| e.to_string())?;
    let capacity: f64 = free.iter().sum();
    if footprint > capacity {
        return Err(Invalid(format!(
            "the footprint, {:.1} GiB, exceeds the memory the machine can give applications, \
             {:.1} GiB",
            footprint / f64::from(1 << 30),
            capacity / f64::from(1 << 30)
        )));
    }
    Ok(())
}

impl Thread {
    /// Thread `t` of app `ai` (spec `a`), on `core`, before it has run.
    fn new(a: &AppSpec, ai: usize, t: usize, core: usize, n: usize) -> Self {
        Self {
            app: ai,
            index: t,
            tid: Tid(1000 * (ai as i32 + 1) + t as i32),
            core,
            remaining: a.instructions.get(),
            done_ns: None,
            stall_ns: 0.0,
            mix: vec![0.0; n],
            write_ratio: 0.0,
            mix_dirty: true,
            phase: 0,
            llc_pressure: a.mpki.get().max(1e-3),
            latency_ns: 0.0,
            mpki: a.mpki.get(),
            e_instr: 0.0,
            e_cycles: 0.0,
            e_misses: 0.0,
            e_writes: 0.0,
        }
    }
}

/// How many threads `a` has on `spec` ("node-cores": the cores of the first node with CPUs).
pub(crate) fn thread_count(spec: &MachineSpec, a: &AppSpec) -> usize {
    match &a.threads {
        ThreadCount::Count(c) => *c as usize,
        ThreadCount::Named(NamedCount::AllCores) => spec.cores.len(),
        ThreadCount::Named(NamedCount::NodeCores) => spec
            .cpu_nodes()
            .first()
            .map_or(0, |&node| spec.cores_on(node)),
    }
}

/// Creates the threads of app `ai` on free cores its placement allows (marking them `used`),
/// appends them to `threads`, and returns their indices.
fn place_threads(
    spec: &MachineSpec,
    a: &AppSpec,
    ai: usize,
    cpu_nodes: &[usize],
    used: &mut [bool],
    threads: &mut Vec<Thread>,
) -> Result<Vec<usize>, Invalid> {
    let n = spec.nodes();
    let count = thread_count(spec, a);
    if count == 0 {
        return Err(Invalid(format!("app '{}' has no threads", a.name)));
    }
    let free = used.iter().filter(|u| !**u).count();
    if count > free {
        return Err(Invalid(format!(
            "app '{}' wants {count} threads but only {free} of the machine's {} cores are free",
            a.name,
            spec.cores.len()
        )));
    }
    let order = node_order(&a.placement, cpu_nodes, n)?;
    let mut mine = Vec::with_capacity(count);
    for t in 0..count {
        let core = pick_core(spec, used, &order, &a.placement, t).ok_or_else(|| {
            format!(
                "app '{}' wants {count} threads but only {} of the machine's {} cores are \
                 free where its placement allows",
                a.name,
                t,
                spec.cores.len()
            )
        })?;
        used[core] = true;
        mine.push(threads.len());
        threads.push(Thread::new(a, ai, t, core, n));
    }
    Ok(mine)
}

fn node_order(p: &ThreadPlacement, cpu_nodes: &[usize], n: usize) -> Result<Vec<usize>, Invalid> {
    let check = |id: u16| {
        let i = usize::from(id);
        if i < n && cpu_nodes.contains(&i) {
            Ok(i)
        } else {
            Err(Invalid(format!(
                "placement names node {id}, which does not exist or has no CPUs"
            )))
        }
    };
    match p {
        ThreadPlacement::Spread | ThreadPlacement::Fill => Ok(cpu_nodes.to_vec()),
        ThreadPlacement::Node(id) => Ok(vec![check(*id)?]),
        ThreadPlacement::Nodes(ids) if ids.is_empty() => Err("placement lists no nodes".into()),
        ThreadPlacement::Nodes(ids) => ids.iter().map(|&i| check(i)).collect(),
    }
}

fn pick_core(
    spec: &MachineSpec,
    used: &[bool],
    order: &[usize],
    p: &ThreadPlacement,
    t: usize,
) -> Option<usize> {
    let free_on =
        |node: usize| (0..spec.cores.len()).find(|&c| !used[c] && spec.cores[c].node == node);
    match p {
        ThreadPlacement::Fill | ThreadPlacement::Node(_) => order.iter().find_map(|&n| free_on(n)),
        ThreadPlacement::Spread | ThreadPlacement::Nodes(_) => {
            (0..order.len()).find_map(|k| free_on(order[(t + k) % order.len()]))
        }
    }
}

/// The allocation policy of app `a` from its `membind`: bound to those nodes, each of which
/// must exist and have memory.
fn membind(spec: &MachineSpec, a: &AppSpec) -> Result<MemPolicy, Invalid> {
    let Some(ids) = &a.membind else {
        return Ok(MemPolicy::Default);
    };
    if ids.is_empty() {
        return Err(Invalid(format!("app '{}': membind lists no nodes", a.name)));
    }
    for &id in ids {
        let i = usize::from(id);
        if i >= spec.nodes() || spec.mem_bytes[i] == 0 {
            return Err(Invalid(format!(
                "app '{}': membind names node {id}, which does not exist or has no memory",
                a.name
            )));
        }
    }
    Ok(MemPolicy::Bind {
        nodes: ids.iter().map(|&i| NodeId(i)).collect(),
    })
}

fn build_app(a: &AppSpec, ai: usize, threads: Vec<usize>, n: usize) -> Result<App, Invalid> {
    // The numbers are in range (crate::bounds::check_scenario).
    if a.regions.is_empty() {
        return Err(Invalid(format!("app '{}' has no [[app.region]]", a.name)));
    }
    let mut base: u64 = 0x7f00_0000_0000 + (ai as u64) * (1 << 40);
    let mut regions = Vec::new();
    let mut models = Vec::new();
    for r in &a.regions {
        let (region, model) = build_region(a, r, &mut base, threads.len(), n)?;
        regions.push(region);
        models.push(model);
    }
    if models.iter().all(|m| m.share == 0.0) {
        return Err(Invalid(format!(
            "app '{}': every region has share 0",
            a.name
        )));
    }
    let phases = build_phases(a, &models)?;
    Ok(App {
        name: a.name.clone(),
        pid: Pid(1000 * (ai as i32 + 1)),
        instructions: a.instructions.get(),
        cpi_base: a.cpi_base.get(),
        mlp: a.mlp.get().max(1.0),
        mpki: a.mpki.get(),
        mrc_ref: a.mrc_ref_bytes.get(),
        alpha: a.mrc_alpha.get(),
        start_ns: a.start_s.max(0.0) * 1e9,
        threads,
        models,
        regions,
        phases,
        mempolicy: MemPolicy::Default,
        allocated: false,
        interleave_cursor: 0,
        scan_cursor: (0, 0),
        scan_credit: 0.0,
        scan_pass_ns: None,
        scan_wait_ns: 0.0,
        done_ns: None,
    })
}

/// Every application and every region of one application named once: reports and policies
/// tell them apart by name.
fn check_names(scenario: &Scenario) -> Result<(), Invalid> {
    let mut apps = std::collections::BTreeSet::new();
    for a in &scenario.apps {
        if !apps.insert(a.name.as_str()) {
            return Err(Invalid(format!(
                "two applications are named '{}': give each a `name` of its own",
                a.name
            )));
        }
        let mut regions = std::collections::BTreeSet::new();
        for r in &a.regions {
            if !regions.insert(r.name.as_str()) {
                return Err(Invalid(format!(
                    "app '{}' has two regions named '{}'",
                    a.name, r.name
                )));
            }
        }
    }
    Ok(())
}

/// Region `r` of app `a`, placed at the next 2 MiB boundary from `base` (which then moves past
/// it and a 2 MiB gap), split into one block per thread when its pattern partitions it.
fn build_region(
    a: &AppSpec,
    r: &RegionSpec,
    base: &mut u64,
    threads: usize,
    n: usize,
) -> Result<(Region, RegionModel), Invalid> {
    let bad = |what: &str| Invalid(format!("region '{}' of app '{}': {what}", r.name, a.name));
    let size = r.size_mib.get();
    let (share, wr) = (r.share.get(), r.write_ratio.get());
    let page = r.page_size.bytes();
    let pages = ((size * 1048576.0) / page as f64).ceil().max(1.0) as usize;
    let blocks = match r.pattern {
        Pattern::Partitioned | Pattern::Halo => threads,
        _ => 1,
    };
    let popularity = match (r.pattern, &r.zipf_s) {
        (Pattern::Zipf, Some(s)) => Popularity::Zipf(s.get()),
        (Pattern::Zipf, None) => return Err(bad("pattern zipf needs zipf_s")),
        _ => Popularity::Uniform,
    };
    if let FirstTouch::Thread(t) = r.first_touch {
        if t as usize >= threads {
            return Err(bad(&format!(
                "first_touch thread {t}: the app has {threads} threads (0 to {})",
                threads.saturating_sub(1)
            )));
        }
    }
    let halo = match (r.pattern, &r.halo) {
        (Pattern::Halo, Some(h)) => h.get(),
        (Pattern::Halo, None) => return Err(bad("pattern halo needs halo")),
        _ => 0.0,
    };
    *base = base.div_ceil(PageSize::Huge2M.bytes()) * PageSize::Huge2M.bytes();
    let region = Region::new(*base, r.page_size, pages, blocks, popularity, n);
    *base += pages as u64 * page + PageSize::Huge2M.bytes();
    let model = RegionModel {
        name: r.name.clone(),
        share,
        write_ratio: wr,
        pattern: r.pattern,
        halo,
        first_touch: r.first_touch.clone(),
    };
    Ok((region, model))
}

/// The phases of app `a`, by start: each one's access shares over `models` (the base share
/// where the phase names no other).
fn build_phases(a: &AppSpec, models: &[RegionModel]) -> Result<Vec<Phase>, Invalid> {
    let mut phases = Vec::new();
    for p in &a.phases {
        let mut shares: Vec<f64> = models.iter().map(|m| m.share).collect();
        for (name, &s) in &p.shares {
            let Some(i) = models.iter().position(|m| &m.name == name) else {
                return Err(Invalid(format!(
                    "app '{}': phase names region '{name}', which does not exist",
                    a.name
                )));
            };
            shares[i] = s;
        }
        if shares.iter().all(|&s| s == 0.0) {
            return Err(Invalid(format!(
                "app '{}': every region has share 0 in the phase at {}",
                a.name, p.at
            )));
        }
        phases.push(Phase {
            at: p.at,
            shares,
            mpki_scale: p.mpki_scale.unwrap_or(1.0),
        });
    }
    phases.sort_by(|x, y| x.at.total_cmp(&y.at));
    Ok(phases)
}
