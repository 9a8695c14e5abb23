//! Pins that move a set of running threads each to its own target CPU, in an order in which
//! every pin finds its CPU free: a thread whose target another moving thread holds waits for
//! it to leave, and a cycle (two threads exchanging CPUs) is broken through a free CPU. A
//! kernel lets a thread onto a busy CPU until the other leaves, but a backend that runs one
//! thread per CPU (the simulator) does not, and the order costs nothing on Linux.

use rondpoint_model::{Action, CpuId, Pid, Tid};
use std::collections::{BTreeMap, BTreeSet};

/// One thread to move: where it runs, and the CPUs it is to be allowed, its target first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    pub pid: Pid,
    pub tid: Tid,
    pub from: CpuId,
    /// The pin's CPUs: the first is where the thread should run.
    pub cpus: Vec<CpuId>,
}

impl Move {
    fn target(&self) -> Option<CpuId> {
        self.cpus.first().copied()
    }

    fn pin(&self, cpus: Vec<CpuId>) -> Action {
        Action::PinThread {
            pid: self.pid,
            tid: self.tid,
            cpus,
        }
    }
}

/// The pins carrying out `moves` in order. `busy` are the CPUs threads that do not move run
/// on; `cpus` every CPU of the machine (a free one breaks a cycle). A move onto a CPU a
/// thread that stays holds is left as it is, and a cycle with no free CPU to go through is
/// pinned to its targets alone (a kernel carries them out, sharing a CPU for a moment; a
/// backend that runs one thread per CPU reports them failed). Each step places
/// a thread for good or frees a CPU a waiting thread wants, so it ends.
pub fn pins(moves: &[Move], busy: &BTreeSet<CpuId>, cpus: &[CpuId]) -> Vec<Action> {
    // Which moving thread holds each CPU now.
    let mut holder: BTreeMap<CpuId, usize> = BTreeMap::new();
    let mut at: Vec<CpuId> = Vec::with_capacity(moves.len());
    for (k, m) in moves.iter().enumerate() {
        holder.insert(m.from, k);
        at.push(m.from);
    }
    let mut left: Vec<usize> = (0..moves.len())
        .filter(|&k| moves[k].target().is_some_and(|t| t != moves[k].from))
        .collect();
    let mut out = Vec::with_capacity(left.len() + 1);
    while !left.is_empty() {
        let ready = left.iter().position(|&k| {
            moves[k]
                .target()
                .is_some_and(|t| !busy.contains(&t) && holder.get(&t).is_none_or(|&h| h == k))
        });
        let k = match ready {
            Some(i) => left.remove(i),
            None => {
                // A target a thread that stays holds: the pin as it is, for the kernel to
                // share the CPU (a backend that cannot fails it).
                if let Some(i) = left
                    .iter()
                    .position(|&k| moves[k].target().is_some_and(|t| busy.contains(&t)))
                {
                    left.remove(i)
                } else {
                    // Every thread left waits for another: through a free CPU, if any.
                    let k = left[0];
                    let spare = cpus
                        .iter()
                        .copied()
                        .find(|c| !busy.contains(c) && !holder.contains_key(c));
                    let Some(spare) = spare else {
                        // Each to its target alone: a CPU list with others could let a
                        // backend keep the thread where it is and call the pin done.
                        out.extend(left.iter().map(|&k| {
                            moves[k].pin(moves[k].cpus.iter().copied().take(1).collect())
                        }));
                        return out;
                    };
                    out.push(moves[k].pin(vec![spare]));
                    holder.remove(&at[k]);
                    holder.insert(spare, k);
                    at[k] = spare;
                    continue;
                }
            }
        };
        let m = &moves[k];
        out.push(m.pin(m.cpus.clone()));
        holder.remove(&at[k]);
        if let Some(t) = m.target() {
            holder.insert(t, k);
            at[k] = t;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn mv(k: i32, from: u32, to: u32) -> Move {
        Move {
            pid: Pid(k),
            tid: Tid(k),
            from: CpuId(from),
            cpus: vec![CpuId(to)],
        }
    }

    fn cpus(n: u32) -> Vec<CpuId> {
        (0..n).map(CpuId).collect()
    }

    /// Carries out `pins` one by one on a machine with one thread per CPU, as the simulator
    /// does: the final CPU of each thread, or the first pin that found its CPU busy.
    fn carry_out(
        moves: &[Move],
        busy: &BTreeSet<CpuId>,
        pins: &[Action],
    ) -> Result<BTreeMap<Tid, CpuId>, String> {
        let mut on: BTreeMap<Tid, CpuId> = moves.iter().map(|m| (m.tid, m.from)).collect();
        for p in pins {
            let Action::PinThread { tid, cpus, .. } = p else {
                return Err(format!("not a pin: {p:?}"));
            };
            let to = cpus[0];
            let taken = busy.contains(&to) || on.iter().any(|(t, c)| t != tid && *c == to);
            if taken {
                return Err(format!("{tid:?} onto busy {to:?}"));
            }
            on.insert(*tid, to);
        }
        Ok(on)
    }

    #[test]
    fn a_chain_moves_the_last_thread_first() {
        // 0 -> 1 -> 2 (free): thread on 1 must leave before thread on 0 comes.
        let moves = [mv(1, 0, 1), mv(2, 1, 2)];
        let p = pins(&moves, &BTreeSet::new(), &cpus(3));
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].pid(), Pid(2));
    }

    #[test]
    fn an_exchange_goes_through_a_free_cpu() {
        let moves = [mv(1, 0, 1), mv(2, 1, 0)];
        let p = pins(&moves, &BTreeSet::new(), &cpus(3));
        assert_eq!(p.len(), 3, "{p:?}");
        let on = carry_out(&moves, &BTreeSet::new(), &p).unwrap();
        assert_eq!(on[&Tid(1)], CpuId(1));
        assert_eq!(on[&Tid(2)], CpuId(0));
    }

    #[test]
    fn an_exchange_on_a_full_machine_is_left_to_the_kernel() {
        let moves = [mv(1, 0, 1), mv(2, 1, 0)];
        let mut wide = moves.clone();
        for m in &mut wide {
            m.cpus.extend([CpuId(0), CpuId(1)]);
        }
        let p = pins(&wide, &BTreeSet::new(), &cpus(2));
        assert_eq!(p.len(), 2);
        assert!(carry_out(&moves, &BTreeSet::new(), &p).is_err());
        // Each pinned to its target alone, not to a list that holds where it runs.
        for p in &p {
            let Action::PinThread { cpus, .. } = p else {
                panic!("{p:?}");
            };
            assert_eq!(cpus.len(), 1);
        }
    }

    #[test]
    fn a_move_onto_a_cpu_that_stays_busy_is_left_to_the_kernel() {
        // Thread 1 wants CPU 5, which a thread that does not move holds; thread 2 waits for
        // thread 1's CPU.
        let moves = [mv(1, 0, 5), mv(2, 1, 0)];
        let busy: BTreeSet<CpuId> = [CpuId(5)].into();
        let p = pins(&moves, &busy, &cpus(8));
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(p[0].pid(), Pid(1));
    }

    proptest! {
        /// Any permutation of threads over CPUs, with at least one CPU free, is carried out
        /// pin by pin with no pin onto a busy CPU, and every thread ends on its target.
        #[test]
        fn every_permutation_with_a_free_cpu_is_carried_out(
            perm in (2usize..8).prop_flat_map(|n| Just((0..n as u32).collect::<Vec<_>>()).prop_shuffle()),
            extra_busy in any::<bool>(),
        ) {
            let n = perm.len() as u32;
            let moves: Vec<Move> = perm.iter().enumerate().map(|(k, &to)| mv(k as i32, k as u32, to)).collect();
            // CPU n is busy with a thread that stays (or free); CPU n + 1 is free.
            let busy: BTreeSet<CpuId> = if extra_busy { [CpuId(n)].into() } else { BTreeSet::new() };
            let p = pins(&moves, &busy, &cpus(n + 2));
            let on = carry_out(&moves, &busy, &p).map_err(TestCaseError::fail)?;
            for m in &moves {
                prop_assert_eq!(on[&m.tid], m.cpus[0]);
            }
        }
    }
}
