//! Why N-MASS pinned each process, for the explanation trail: its MPKI and remote penalty,
//! where its memory is and where it goes, and the cache pressures before and after.

use super::maxlocal::Proc;
use super::view::Managed;
use rondpoint_model::{Action, Pid, Reason, Topology};

/// One reason per run of pins of one process, in the pins' order. `target` is each managed
/// process's node (dense index; none: left where it is).
pub(super) fn reasons(
    name: &str,
    topology: &Topology,
    managed: &[Managed],
    inputs: &[Proc],
    target: &[Option<usize>],
    actions: &[Action],
) -> Vec<Reason> {
    let nodes = topology.len();
    let mut before = vec![0.0; nodes];
    let mut after = vec![0.0; nodes];
    for (i, t) in inputs.iter().zip(target) {
        if let Some(b) = before.get_mut(i.home) {
            *b += i.mpki;
        }
        if let Some(a) = after.get_mut(t.unwrap_or(i.home)) {
            *a += i.mpki;
        }
    }
    let show = |v: &[f64]| -> String {
        let parts: Vec<String> = v.iter().map(|x| format!("{x:.1}")).collect();
        format!("[{}]", parts.join(", "))
    };
    let measured = before.iter().any(|&x| x > 0.0);
    let pressures = format!(
        "cache pressure per node (MPKI summed, [Majo11 §3.1]) {} with every process at home, \
         {} as mapped",
        show(&before),
        show(&after)
    );
    let node_name = |k: usize| topology.nodes().get(k).map_or(k, |n| usize::from(n.id.0));
    let mut out: Vec<Reason> = Vec::new();
    let mut last: Option<Pid> = None;
    for a in actions {
        let pid = a.pid();
        if last == Some(pid) {
            if let Some(r) = out.last_mut() {
                r.actions += 1;
            }
            continue;
        }
        last = Some(pid);
        let Some(k) = managed.iter().position(|m| m.pid == pid) else {
            out.push(Reason::new(1, name, format!("{pid}: a core exchange")));
            continue;
        };
        let (m, i) = (&managed[k], &inputs[k]);
        let to = target[k].unwrap_or(m.home);
        let home = node_name(m.home);
        let evidence = format!(
            "{} ({pid}): MPKI {:.1}, remote penalty {:.2}, memory on node {home}",
            m.comm, i.mpki, i.np
        );
        let expected = if !measured {
            format!(
                "runs local on node {home}: no MPKI known yet (no profile, nothing measured), \
                 so every process stays with its memory (maximum-local, [Majo11 §3.3]) until \
                 one is measured"
            )
        } else if to == m.home {
            format!("runs local on node {home}; {pressures}")
        } else {
            format!(
                "runs on node {} and pays its remote penalty ({:.0}% slower accesses) for a \
                 less pressured cache; {pressures}",
                node_name(to),
                (i.np - 1.0) * 100.0
            )
        };
        out.push(Reason::new(1, name, evidence).expecting(expected));
    }
    out
}
