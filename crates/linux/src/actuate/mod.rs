//! Carrying out actions on a live kernel: page moves (`pages`: move_pages, a process's moves
//! together, verified by a placement query), whole-application moves (sched_setaffinity and
//! migrate_pages), thread pinning. Backends decide nothing: an action is done as asked, or
//! reported as not done with the reason.

mod pages;

pub use pages::{MOVE_BATCH, MoveReport, move_node_pages, move_pages_from, move_pages_to, query};
pub(crate) use pages::{Placement, place_all};

use crate::sys::{Errno, NodeMask, Sys};
use rondpoint_model::{
    Action, CpuId, NodeId, Outcome, OutcomeStatus, Pid, ThreadCpu, Tid, Topology,
};

fn gone(index: usize, pages: u64, pid: Pid) -> Outcome {
    Outcome::skipped(index, pages, format!("{pid} has exited"))
}

/// The placement an action asks for, if it is one: its pages and the nodes they go to.
pub(crate) fn placement_of(index: usize, action: &Action) -> Option<Placement<'_>> {
    match action {
        Action::MigratePages { range, to } => Some(Placement {
            index,
            range,
            nodes: std::slice::from_ref(to),
        }),
        Action::Interleave { range, nodes } | Action::Replicate { range, nodes } => {
            Some(Placement {
                index,
                range,
                nodes,
            })
        }
        _ => None,
    }
}

/// The outcome of a placement, as the action that asked for it reports it: upstream Linux
/// cannot replicate another process's pages (Carrefour patched the kernel), so a replication
/// is carried out as the nearest effect on traffic, its pages spread over the nodes that read
/// them (which balances the controllers the replicas would have relieved), and says so.
pub(crate) fn placed(action: &Action, mut o: Outcome) -> Outcome {
    if let Action::Replicate { nodes, .. } = action {
        if matches!(o.status, OutcomeStatus::Applied | OutcomeStatus::Partial) {
            o.status = OutcomeStatus::Substituted;
            let names: Vec<String> = nodes.iter().map(|n| n.0.to_string()).collect();
            o.note = Some(format!(
                "Linux cannot replicate another process's pages; interleaved them over \
                 nodes {} instead",
                names.join(",")
            ));
        }
    }
    o
}

/// Pins `a` to `b`'s CPU and `b` to `a`'s (action `index`). When the second pin fails, the
/// first is taken back to `a`'s own CPU, so that no exchange is left half done.
fn exchange_threads(sys: &mut dyn Sys, index: usize, a: &ThreadCpu, b: &ThreadCpu) -> Outcome {
    let exited = |t: &ThreadCpu| format!("thread {} of {} has exited", t.tid.0, t.pid);
    match sys.sched_setaffinity(a.tid, &[b.cpu]) {
        Ok(()) => {}
        Err(e) if e == Errno::ESRCH => return Outcome::skipped(index, 0, exited(a)),
        Err(e) => return Outcome::failed(index, format!("sched_setaffinity: {e}")),
    }
    let (why, vanished) = match sys.sched_setaffinity(b.tid, &[a.cpu]) {
        Ok(()) => return Outcome::applied(index),
        Err(e) if e == Errno::ESRCH => (exited(b), true),
        Err(e) => (format!("sched_setaffinity: {e}"), false),
    };
    match sys.sched_setaffinity(a.tid, &[a.cpu]) {
        Ok(()) if vanished => {
            Outcome::skipped(index, 0, format!("{why}; the other thread was put back"))
        }
        Ok(()) => Outcome::failed(index, format!("{why}; the other thread was put back")),
        Err(e) => Outcome::failed(
            index,
            format!("{why}; putting the other thread back failed too: {e}"),
        ),
    }
}

/// Carries out one action. `threads` are the task ids of the action's process as the caller
/// last read them (only moving a whole application uses them).
pub fn apply(
    sys: &mut dyn Sys,
    topology: &Topology,
    index: usize,
    action: &Action,
    threads: &[Tid],
) -> Outcome {
    match action {
        Action::MigratePages { .. } | Action::Interleave { .. } | Action::Replicate { .. } => {
            let Some(p) = placement_of(index, action) else {
                return Outcome::failed(index, "not a placement");
            };
            let o = place_all(sys, topology, &[p]).pop();
            placed(
                action,
                o.unwrap_or_else(|| Outcome::failed(index, "not carried out")),
            )
        }
        Action::PinThread { pid, tid, cpus } => {
            if cpus.is_empty() {
                return Outcome::failed(index, "no CPUs given");
            }
            match sys.sched_setaffinity(*tid, cpus) {
                Ok(()) => Outcome::applied(index),
                Err(e) if e == Errno::ESRCH => {
                    Outcome::skipped(index, 0, format!("thread {} of {pid} has exited", tid.0))
                }
                Err(e) => Outcome::failed(index, format!("sched_setaffinity: {e}")),
            }
        }
        Action::ExchangeThreads { a, b } => exchange_threads(sys, index, a, b),
        Action::MoveApplication {
            pid,
            to,
            with_memory,
        } => move_application(sys, topology, index, *pid, threads, *to, *with_memory),
        Action::SetMemPolicy { .. } => Outcome::failed(
            index,
            "Linux sets a memory policy only for the calling process; rondpoint sets one at \
             launch (rondpoint run --policy interleave), not on a running program",
        ),
        // Carried out by the machine, which knows the process's mappings and the nodes' free
        // memory (crate::node_pages).
        Action::MoveNodePages { .. } => Outcome::failed(
            index,
            "a move by quantity needs the machine's view of the process (LinuxMachine::apply)",
        ),
    }
}

fn move_application(
    sys: &mut dyn Sys,
    topology: &Topology,
    index: usize,
    pid: Pid,
    threads: &[Tid],
    to: NodeId,
    with_memory: bool,
) -> Outcome {
    let Some(node) = topology.node(to) else {
        return Outcome::failed(index, format!("{to} does not exist"));
    };
    if node.cpus.is_empty() {
        return Outcome::failed(index, format!("{to} has no CPUs"));
    }
    let cpus: Vec<CpuId> = node.cpus.clone();
    // Every existing thread moves; threads created later inherit their creator's affinity.
    // The main thread goes first: if it is gone, so is the process.
    let mut tids = vec![Tid(pid.0)];
    tids.extend(threads.iter().copied().filter(|&t| t != Tid(pid.0)));
    for (k, &tid) in tids.iter().enumerate() {
        match sys.sched_setaffinity(tid, &cpus) {
            Ok(()) => {}
            Err(e) if e == Errno::ESRCH && k == 0 => return gone(index, 0, pid),
            Err(e) if e == Errno::ESRCH => {} // that thread has exited: nothing to move
            Err(e) => return Outcome::failed(index, format!("sched_setaffinity: {e}")),
        }
    }
    if !with_memory {
        return Outcome::applied(index);
    }
    let others: Vec<u16> = topology
        .nodes()
        .iter()
        .map(|n| n.id.0)
        .filter(|&n| n != to.0)
        .collect();
    match sys.migrate_pages(pid, &NodeMask::of(others), &NodeMask::of([to.0])) {
        Ok(0) => Outcome::applied(index),
        Ok(left) => {
            let mut o = Outcome::applied(index);
            o.status = OutcomeStatus::Partial;
            o.failures = vec![("not moved".into(), left)];
            o
        }
        Err(e) if e == Errno::ESRCH => gone(index, 0, pid),
        Err(e) => Outcome::failed(index, format!("migrate_pages: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{Call, FakeSys};
    use rondpoint_model::synthetic::TopologyBuilder;
    use rondpoint_model::{NodeList, PageRange, PageSize};

    const P: i32 = 42;
    const A: u64 = 0x7f00_0000_0000;

    /// Applies an action to a process whose only thread is its main thread.
    fn apply(sys: &mut dyn Sys, topology: &Topology, index: usize, action: &Action) -> Outcome {
        super::apply(sys, topology, index, action, &[])
    }

    fn topo() -> Topology {
        TopologyBuilder::new(4).cores_per_llc(2).build().unwrap()
    }

    fn range(count: u64) -> PageRange {
        PageRange::new(Pid(P), A, count, PageSize::Base4K).unwrap()
    }

    fn sys_with(pages: u64, node: i32) -> FakeSys {
        let placed: Vec<(u64, i32)> = (0..pages).map(|i| (A + i * 4096, node)).collect();
        FakeSys::new().with_process(P, &placed)
    }

    #[test]
    fn migrate_queries_moves_in_batches_and_verifies() {
        let mut sys = sys_with(3, 0);
        sys.placement.insert((P, A + 4096), 2); // already there
        let o = apply(
            &mut sys,
            &topo(),
            0,
            &Action::MigratePages {
                range: range(3),
                to: NodeId(2),
            },
        );
        assert_eq!(o.status, OutcomeStatus::Applied);
        assert_eq!(
            (o.pages_requested, o.pages_done, o.bytes_copied),
            (3, 3, 2 * 4096)
        );
        assert_eq!(
            sys.calls,
            vec![
                Call::MovePages {
                    pid: Pid(P),
                    pages: vec![A, A + 4096, A + 8192],
                    nodes: None
                },
                Call::MovePages {
                    pid: Pid(P),
                    pages: vec![A, A + 8192],
                    nodes: Some(vec![2, 2])
                },
                Call::MovePages {
                    pid: Pid(P),
                    pages: vec![A, A + 8192],
                    nodes: None
                },
            ]
        );
    }

    #[test]
    fn pages_whose_nodes_the_caller_knows_are_moved_without_asking_again() {
        let mut sys = sys_with(3, 0);
        let pages = [A, A + 4096, A + 8192];
        // The caller's query found the second page gone (ENOENT) and the third already there.
        let r = move_pages_from(&mut sys, Pid(P), &pages, &[0, -2, 2], &[2, 2, 2]).unwrap();
        assert_eq!((r.requested, r.done, r.moved), (3, 2, 1));
        assert_eq!(r.failures.get("ENOENT"), Some(&1));
        // One move and one verification: no query first.
        assert_eq!(
            sys.calls,
            vec![
                Call::MovePages {
                    pid: Pid(P),
                    pages: vec![A],
                    nodes: Some(vec![2])
                },
                Call::MovePages {
                    pid: Pid(P),
                    pages: vec![A],
                    nodes: None
                },
            ]
        );
    }

    #[test]
    fn a_whole_node_move_is_one_migrate_pages_call_then_one_query() {
        let mut sys = sys_with(4, 0);
        sys.placement.insert((P, A + 4096), 1);
        sys.placement.insert((P, A + 8192), 2); // already there
        let pages = [A, A + 4096, A + 8192, A + 12288];
        // The fourth page was gone at the caller's query.
        let r = move_node_pages(&mut sys, Pid(P), &pages, &[0, 1, 2, -2], 2).unwrap();
        assert_eq!((r.requested, r.done, r.moved), (4, 3, 2));
        assert_eq!(r.failures.get("ENOENT"), Some(&1));
        assert_eq!(
            sys.calls,
            vec![
                Call::MigratePages {
                    pid: Pid(P),
                    from: vec![0, 1],
                    to: vec![2]
                },
                Call::MovePages {
                    pid: Pid(P),
                    pages: vec![A, A + 4096],
                    nodes: None
                },
            ]
        );
        // Nothing elsewhere: no call at all.
        let mut sys = sys_with(2, 2);
        let r = move_node_pages(&mut sys, Pid(P), &pages[..2], &[2, 2], 2).unwrap();
        assert_eq!((r.done, r.moved), (2, 0));
        assert!(sys.calls.is_empty());
    }

    #[test]
    fn a_page_the_kernel_left_behind_is_reported_not_moved() {
        let mut sys = sys_with(2, 0);
        sys.fail_next.push_back(("migrate_pages", Errno::EPERM));
        let err = move_node_pages(&mut sys, Pid(P), &[A], &[0], 1).unwrap_err();
        assert_eq!(err, Errno::EPERM);
        // A page that moved to a node not asked for after the caller's query stays there.
        let mut sys = sys_with(2, 0);
        sys.placement.insert((P, A + 4096), 2);
        let r = move_node_pages(&mut sys, Pid(P), &[A, A + 4096], &[0, 3], 1).unwrap();
        assert_eq!(r.moved, 1, "{r:?}");
        assert_eq!(r.failures.get("not moved (verified)"), Some(&1), "{r:?}");
    }

    #[test]
    fn interleave_moves_in_one_call_grouped_by_target_node() {
        let mut sys = sys_with(4, 0);
        let o = apply(
            &mut sys,
            &topo(),
            0,
            &Action::Interleave {
                range: range(4),
                nodes: NodeList::from_slice(&[NodeId(1), NodeId(3)]),
            },
        );
        assert_eq!(o.pages_done, 4);
        let moves: Vec<&Call> = sys
            .calls_named("move_pages")
            .into_iter()
            .filter(|c| matches!(c, Call::MovePages { nodes: Some(_), .. }))
            .collect();
        assert_eq!(
            moves,
            vec![&Call::MovePages {
                pid: Pid(P),
                pages: vec![A, A + 8192, A + 4096, A + 12288],
                nodes: Some(vec![1, 1, 3, 3])
            }]
        );
    }

    #[test]
    fn placements_of_one_process_go_in_one_query_one_move_and_one_check() {
        // Two processes; the first has three placements, one of them naming no node here.
        let mut sys = sys_with(6, 0).with_process(7, &[(A, 1), (A + 4096, 1)]);
        let r = |start: u64, count: u64| PageRange::new(Pid(P), start, count, PageSize::Base4K);
        let (r1, r2) = (r(A, 2).unwrap(), r(A + 2 * 4096, 4).unwrap());
        let r3 = PageRange::new(Pid(7), A, 2, PageSize::Base4K).unwrap();
        let (to1, to2, to3, bad) = (
            [NodeId(2)],
            [NodeId(1), NodeId(3)],
            [NodeId(0)],
            [NodeId(9)],
        );
        let placements = [
            Placement {
                index: 0,
                range: &r1,
                nodes: &to1,
            },
            Placement {
                index: 1,
                range: &r3,
                nodes: &to3,
            },
            Placement {
                index: 2,
                range: &r1,
                nodes: &bad,
            },
            Placement {
                index: 3,
                range: &r2,
                nodes: &to2,
            },
        ];
        let out = place_all(&mut sys, &topo(), &placements);
        let index: Vec<usize> = out.iter().map(|o| o.action).collect();
        assert_eq!(index, vec![0, 1, 2, 3]);
        let done: Vec<u64> = out.iter().map(|o| o.pages_done).collect();
        assert_eq!(done, vec![2, 2, 0, 4]);
        assert_eq!(out[2].status, OutcomeStatus::Failed);
        // Per process: a query, a move, a verification.
        let calls = sys.calls_named("move_pages");
        assert_eq!(calls.len(), 6, "{calls:?}");
        let moves: Vec<&Call> = calls
            .into_iter()
            .filter(|c| matches!(c, Call::MovePages { nodes: Some(_), .. }))
            .collect();
        // Grouped by target node, in address order within a node; processes by pid.
        let page = |k: u64| A + k * 4096;
        assert_eq!(
            moves,
            vec![
                &Call::MovePages {
                    pid: Pid(7),
                    pages: vec![A, A + 4096],
                    nodes: Some(vec![0, 0])
                },
                &Call::MovePages {
                    pid: Pid(P),
                    pages: [2, 4, 0, 1, 3, 5].map(page).to_vec(),
                    nodes: Some(vec![1, 1, 2, 2, 3, 3])
                },
            ]
        );
    }

    #[test]
    fn per_page_errors_are_counted_by_errno() {
        let mut sys = sys_with(4, 0);
        sys.page_errors.insert((P, A), Errno::EBUSY);
        sys.page_errors.insert((P, A + 4096), Errno::ENOMEM);
        sys.page_errors.insert((P, A + 8192), Errno::EACCES);
        sys.placement.remove(&(P, A + 12288)); // not present: ENOENT at the query
        let o = apply(
            &mut sys,
            &topo(),
            0,
            &Action::MigratePages {
                range: range(4),
                to: NodeId(1),
            },
        );
        assert_eq!(o.status, OutcomeStatus::Failed);
        assert_eq!(o.pages_done, 0);
        assert_eq!(
            o.failures,
            vec![
                ("EACCES".to_string(), 1),
                ("EBUSY".to_string(), 1),
                ("ENOENT".to_string(), 1),
                ("ENOMEM".to_string(), 1)
            ]
        );
    }

    #[test]
    fn an_exchange_pins_each_thread_to_the_others_cpu_or_puts_the_first_back() {
        let side = |tid: i32, cpu: u32| ThreadCpu {
            pid: Pid(P),
            tid: Tid(tid),
            cpu: CpuId(cpu),
        };
        let exchange = Action::ExchangeThreads {
            a: side(43, 0),
            b: side(44, 2),
        };
        let affinities = |sys: &FakeSys| -> Vec<(i32, Vec<u32>)> {
            sys.calls
                .iter()
                .filter_map(|c| match c {
                    Call::SetAffinity { tid, cpus } => {
                        Some((tid.0, cpus.iter().map(|c| c.0).collect()))
                    }
                    _ => None,
                })
                .collect()
        };
        let mut sys = FakeSys::new();
        let o = apply(&mut sys, &topo(), 0, &exchange);
        assert_eq!(o.status, OutcomeStatus::Applied);
        assert_eq!(affinities(&sys), vec![(43, vec![2]), (44, vec![0])]);
        // The second thread has exited: the first goes back to its own CPU.
        let mut sys = FakeSys::new();
        sys.exited_tids.push(Tid(44));
        let o = apply(&mut sys, &topo(), 0, &exchange);
        assert_eq!(o.status, OutcomeStatus::Skipped);
        assert!(o.note.unwrap_or_default().contains("put back"));
        assert_eq!(
            affinities(&sys),
            vec![(43, vec![2]), (44, vec![0]), (43, vec![0])]
        );
    }

    #[test]
    fn a_vanished_process_is_skipped_not_failed() {
        let mut sys = FakeSys::new();
        let o = apply(
            &mut sys,
            &topo(),
            5,
            &Action::MigratePages {
                range: range(2),
                to: NodeId(1),
            },
        );
        assert_eq!((o.action, o.status), (5, OutcomeStatus::Skipped));
        assert!(o.note.unwrap().contains("exited"));
        let o = apply(
            &mut sys,
            &topo(),
            0,
            &Action::PinThread {
                pid: Pid(P),
                tid: Tid(43),
                cpus: vec![CpuId(0)],
            },
        );
        // The fake accepts affinity for any tid; make it fail the way a gone thread does.
        assert_eq!(o.status, OutcomeStatus::Applied);
        sys.fail_next.push_back(("sched_setaffinity", Errno::ESRCH));
        let o = apply(
            &mut sys,
            &topo(),
            0,
            &Action::PinThread {
                pid: Pid(P),
                tid: Tid(43),
                cpus: vec![CpuId(0)],
            },
        );
        assert_eq!(o.status, OutcomeStatus::Skipped);
    }

    #[test]
    fn whole_call_errors_are_failures_with_the_errno() {
        let mut sys = sys_with(2, 0);
        sys.fail_next.push_back(("move_pages", Errno::EPERM));
        let o = apply(
            &mut sys,
            &topo(),
            0,
            &Action::MigratePages {
                range: range(2),
                to: NodeId(1),
            },
        );
        assert_eq!(o.status, OutcomeStatus::Failed);
        assert!(o.note.unwrap().starts_with("move_pages: EPERM"));
        // An error on the move itself (not the query) fails that batch's pages.
        let mut sys = sys_with(2, 0);
        sys.fail_next.push_back(("move_pages", Errno::EFAULT));
        sys.fail_next.push_front(("move_pages", Errno::EFAULT));
        let o = apply(
            &mut sys,
            &topo(),
            0,
            &Action::MigratePages {
                range: range(2),
                to: NodeId(1),
            },
        );
        assert_eq!(o.status, OutcomeStatus::Failed);
    }

    #[test]
    fn a_move_the_kernel_silently_skipped_is_caught_by_verification() {
        // Two requests for the same page to different nodes (what a 4 KiB-granular interleave
        // of a huge page amounts to): the kernel reports both as done, but only the last one
        // holds, and only the verifying query sees it.
        let mut sys = sys_with(1, 0);
        let pages = [A, A];
        let r = move_pages_to(&mut sys, Pid(P), &pages, &[1, 2]).unwrap();
        assert_eq!(r.requested, 2);
        assert_eq!(r.done, 1, "only the last request for the page holds");
        assert_eq!(r.failures.get("not moved (verified)"), Some(&1));
    }

    #[test]
    fn replication_is_substituted_and_says_so() {
        let mut sys = sys_with(2, 0);
        let o = apply(
            &mut sys,
            &topo(),
            0,
            &Action::Replicate {
                range: range(2),
                nodes: NodeList::from_slice(&[NodeId(0), NodeId(1)]),
            },
        );
        assert_eq!(o.status, OutcomeStatus::Substituted);
        assert!(o.note.unwrap().contains("cannot replicate"));
        assert_eq!(sys.placement[&(P, A + 4096)], 1);
    }

    #[test]
    fn move_application_pins_and_migrates() {
        let mut sys = sys_with(2, 0);
        let o = apply(
            &mut sys,
            &topo(),
            0,
            &Action::MoveApplication {
                pid: Pid(P),
                to: NodeId(3),
                with_memory: true,
            },
        );
        assert_eq!(o.status, OutcomeStatus::Applied);
        assert_eq!(
            sys.calls,
            vec![
                Call::SetAffinity {
                    tid: Tid(P),
                    cpus: vec![CpuId(6), CpuId(7)]
                },
                Call::MigratePages {
                    pid: Pid(P),
                    from: vec![0, 1, 2],
                    to: vec![3]
                },
            ]
        );
        assert_eq!(sys.placement[&(P, A)], 3);
        sys.fail_next.push_back(("migrate_pages", Errno::EPERM));
        let o = apply(
            &mut sys,
            &topo(),
            0,
            &Action::MoveApplication {
                pid: Pid(P),
                to: NodeId(1),
                with_memory: true,
            },
        );
        assert_eq!(o.status, OutcomeStatus::Failed);
        assert!(o.note.unwrap().contains("EPERM"));
    }

    #[test]
    fn move_application_moves_every_thread_and_skips_ones_that_exited() {
        let action = Action::MoveApplication {
            pid: Pid(P),
            to: NodeId(2),
            with_memory: false,
        };
        // The main thread's affinity call says ESRCH: the process is gone, nothing failed.
        let mut sys = sys_with(1, 0);
        sys.fail_next.push_back(("sched_setaffinity", Errno::ESRCH));
        let o = super::apply(&mut sys, &topo(), 0, &action, &[Tid(P + 1)]);
        assert_eq!(o.status, OutcomeStatus::Skipped);
        // Every thread, main thread first; a worker that exited meanwhile is no failure.
        let mut sys2 = sys_with(1, 0);
        sys2.exited_tids.push(Tid(P + 1));
        let o = super::apply(
            &mut sys2,
            &topo(),
            0,
            &action,
            &[Tid(P + 1), Tid(P), Tid(P + 2)],
        );
        assert_eq!(o.status, OutcomeStatus::Applied);
        let pinned: Vec<i32> = sys2
            .calls
            .iter()
            .filter_map(|c| match c {
                Call::SetAffinity { tid, cpus } => {
                    assert_eq!(cpus, &vec![CpuId(4), CpuId(5)]);
                    Some(tid.0)
                }
                _ => None,
            })
            .collect();
        assert_eq!(pinned, vec![P, P + 1, P + 2]);
        let mut sys3 = sys_with(1, 0);
        sys3.fail_next
            .push_back(("sched_setaffinity", Errno::EPERM));
        let o = super::apply(&mut sys3, &topo(), 0, &action, &[Tid(P + 1)]);
        assert_eq!(o.status, OutcomeStatus::Failed);
        assert!(o.note.unwrap().contains("EPERM"));
    }

    #[test]
    fn set_mempolicy_on_a_running_process_is_refused_with_the_reason() {
        let mut sys = FakeSys::new();
        let o = apply(
            &mut sys,
            &topo(),
            0,
            &Action::SetMemPolicy {
                pid: Pid(P),
                policy: rondpoint_model::MemPolicy::Default,
            },
        );
        assert_eq!(o.status, OutcomeStatus::Failed);
        assert!(o.note.unwrap().contains("calling process"));
        assert!(sys.calls.is_empty());
    }

    #[test]
    fn huge_page_ranges_move_one_address_per_huge_page() {
        let mut sys = FakeSys::new().with_process(P, &[(A, 0), (A + (2 << 20), 0)]);
        let range = PageRange::new(Pid(P), A, 2, PageSize::Huge2M).unwrap();
        let o = apply(
            &mut sys,
            &topo(),
            0,
            &Action::MigratePages {
                range,
                to: NodeId(1),
            },
        );
        assert_eq!((o.pages_done, o.bytes_copied), (2, 2 * (2 << 20)));
        assert!(sys.calls.contains(&Call::MovePages {
            pid: Pid(P),
            pages: vec![A, A + (2 << 20)],
            nodes: Some(vec![1, 1])
        }));
    }
}
