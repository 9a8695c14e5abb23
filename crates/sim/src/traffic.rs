//! What one thread's DRAM accesses cost the memory system: the directed links an access
//! crosses, the service demand it puts on each controller and link, and the queueing class of
//! the thread. One place for the model, used by every step of a run ([`crate::machine`]) and by
//! the placement bound ([`crate::bound`]), so that the bound optimises what runs measure.

use crate::placement::mask_nodes;
use crate::solver::Class;
use crate::spec::MachineSpec;

/// Bytes of one cache line.
pub(crate) const LINE: f64 = 64.0;
/// Header bytes of a request or response message on a link (HyperTransport/UPI packets carry
/// 8-16 bytes of header per 64-byte line; 16 chosen).
pub(crate) const HEADER: f64 = 16.0;

/// The directed links an access from node `h` to memory on node `d` crosses, each with the
/// bytes it carries per access, for a write ratio `w`: data comes back d -> h, requests (and
/// write-backs) go h -> d. Nothing for a local access.
pub(crate) fn route(
    spec: &MachineSpec,
    d: usize,
    h: usize,
    w: f64,
) -> impl Iterator<Item = (usize, f64)> + '_ {
    let (back, out): (&[usize], &[usize]) = if d == h {
        (&[], &[])
    } else {
        (&spec.path[d][h], &spec.path[h][d])
    };
    let back_bytes = LINE + HEADER + HEADER * w;
    let out_bytes = HEADER + (LINE + HEADER) * w;
    back.iter()
        .map(move |&l| (l, back_bytes))
        .chain(out.iter().map(move |&l| (l, out_bytes)))
}

/// Appends to `row` the service demand per miss (ns) of a thread on node `h` whose misses go
/// to the nodes in proportion to `mix`, with write ratio `w`, on each controller and directed
/// link it uses (resources numbered controllers first, then directed links; a link once per
/// route crossing it). `background` is each resource's utilisation by other traffic (page
/// copies), which leaves that much less bandwidth.
pub(crate) fn demand(
    spec: &MachineSpec,
    mix: &[f64],
    h: usize,
    w: f64,
    background: &[f64],
    row: &mut Vec<(usize, f64)>,
) {
    let n = spec.nodes();
    let free = |k: usize| 1.0 - background.get(k).copied().unwrap_or(0.0);
    for (d, &a) in mix.iter().enumerate().take(n) {
        if a == 0.0 {
            continue;
        }
        row.push((d, a * LINE * (1.0 + w) / spec.mc_bw[d] / free(d)));
        for (l, bytes) in route(spec, d, h, w) {
            let bw = spec.link_bw[l / 2] * free(n + l);
            row.push((n + l, a * bytes / bw));
        }
    }
}

/// The queueing class of a thread on node `h` with `mlp` misses in flight, `mpki` misses per
/// thousand instructions at `cpi` cycles per instruction between misses, its misses spread by
/// `mix`, given its demands `row` (from [`demand`]).
pub(crate) fn class(
    spec: &MachineSpec,
    mix: &[f64],
    h: usize,
    (mlp, cpi, mpki): (f64, f64, f64),
    row: &[(usize, f64)],
) -> Class {
    let idle: f64 = mix
        .iter()
        .enumerate()
        .map(|(d, &a)| a * spec.idle_ns[h][d])
        .sum();
    let think = if mpki > 0.0 {
        mlp * cpi * 1000.0 / (mpki * spec.cycles_per_ns())
    } else {
        f64::INFINITY
    };
    // The idle latency of a preset is a measured unloaded latency: it already contains the
    // service time of every controller and link on the way. Only the rest is pure delay;
    // queueing is what the network adds on top.
    let service: f64 = row.iter().map(|&(_, d)| d).sum();
    Class {
        customers: mlp,
        think_ns: think,
        idle_ns: (idle - service).max(0.0),
    }
}

/// Misses per thousand instructions of an application whose reference MPKI is `mpki` at
/// `mrc_ref` bytes of LLC, with miss-ratio-curve exponent `alpha`, when it gets `cache` bytes.
pub(crate) fn mpki_at(mpki: f64, mrc_ref: f64, alpha: f64, cache: f64) -> f64 {
    let ratio = (cache.max(1.0) / mrc_ref).clamp(1.0 / 64.0, 64.0);
    mpki * ratio.powf(-alpha)
}

/// Instructions per ns of a thread that completes `throughput` misses per ns at `mpki`, or
/// runs at its base CPI when it does not miss.
pub(crate) fn instructions_per_ns(spec: &MachineSpec, mpki: f64, cpi: f64, throughput: f64) -> f64 {
    if mpki > 0.0 && throughput > 0.0 {
        throughput * 1000.0 / mpki
    } else {
        spec.cycles_per_ns() / cpi
    }
}

/// The node that serves an access from node `from` to a page replicated on `mask`: the local
/// copy if there is one, else the nearest.
pub(crate) fn serving_copy(spec: &MachineSpec, from: usize, mask: u64) -> usize {
    if mask & (1u64 << from) != 0 {
        from
    } else {
        mask_nodes(mask)
            .min_by(|&a, &b| spec.idle_ns[from][a].total_cmp(&spec.idle_ns[from][b]))
            .unwrap_or(from)
    }
}
