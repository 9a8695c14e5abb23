//! Moves by quantity (`Action::MoveNodePages`): what the machine knows of the process's
//! mappings, THP-backed ranges and the nodes' room (`room`), handed to
//! [`crate::node_pages::move_off`], which finds the pages and moves them.

use super::LinuxMachine;
use crate::node_pages::{self, NodePagesPlan};
use crate::sys::Sys;
use rondpoint_model::{NodeId, Outcome, Pid};

impl<S: Sys> LinuxMachine<S> {
    /// Moves up to `pages` base pages of `pid` off `from`, round-robin over `to`, within each
    /// target's room.
    pub(super) fn move_node_pages(
        &mut self,
        index: usize,
        pid: Pid,
        from: NodeId,
        to: &[NodeId],
        pages: u64,
    ) -> Outcome {
        if let Some(bad) = to
            .iter()
            .chain(std::iter::once(&from))
            .find(|n| self.topology.index_of(**n).is_none())
        {
            return Outcome::failed(index, format!("no such node: {bad}"));
        }
        let (Ok(Some(numa)), Ok(Some(ranges))) = (self.proc.numa_maps(pid), self.proc.maps(pid))
        else {
            return Outcome::skipped(index, pages, format!("{pid} has exited"));
        };
        let room = self.room();
        let thp = self.thp.get(&pid).cloned().unwrap_or_default();
        let managed = &self.managed;
        self.search_cursors.retain(|p| managed.contains(&p));
        node_pages::move_off(
            &mut self.sys,
            index,
            NodePagesPlan {
                pid,
                from,
                to,
                pages,
                extents: node_pages::extents_on(&numa, &ranges, from),
                thp: &thp,
                room,
            },
            &mut self.search_cursors,
        )
    }
}
