//! Room on a node for the pages rondpoint moves there by quantity (`Action::MoveNodePages`):
//! what the kernel itself would count as available to user space on that node.
//!
//! The kernel's estimate is MemAvailable ("an estimate of how much memory is available for
//! starting new applications, without swapping", Documentation/filesystems/proc.rst;
//! `si_mem_available` in mm/show_mem.c). For one node, from its meminfo
//! (`/sys/devices/system/node/nodeN/meminfo`) and its zones' watermarks (`/proc/zoneinfo`):
//!
//! ```text
//! room = MemFree - reserve
//!      + file - min(file / 2, low)
//!      + reclaimable - min(reclaimable / 2, low)        (at least 0)
//! ```
//!
//! - `reserve`: per zone, its `high` watermark plus its largest lowmem reserve
//!   (`protection`), at most its `managed` pages, summed over the node's zones: the node's part
//!   of the kernel's `totalreserve_pages` (`calculate_totalreserve_pages`). Below its high
//!   watermark a node's kswapd reclaims, and below `min` allocations stall in direct reclaim;
//!   the lowmem reserve is what a zone keeps from allocations that could have used a higher
//!   zone, as user pages can.
//! - `low`: the sum of the node's zones' `low` watermarks.
//! - `file`: its page cache on the file LRU lists, `Active(file)` + `Inactive(file)`: clean
//!   cache is dropped by reclaim without writing anything; half of it, or `low` if less, is
//!   taken as still needed, as the kernel does.
//! - `reclaimable`: its reclaimable kernel memory, `KReclaimable` (else `SReclaimable`), of
//!   which the same share is taken as in use (items still referenced).
//!
//! Watermarks are in pages (the kernel's base page size); meminfo is in kB. When zoneinfo
//! cannot be read, or lists no zone of a node, the room is the conservative rule rondpoint
//! used before: free memory less `LiveConfig::reserve_free_bytes`, no cache counted.

use super::LinuxMachine;
use crate::procfs::NodeWatermarks;
use crate::sys::Sys;
use crate::sysfs::NodeMeminfo;
use rondpoint_model::NodeId;
use std::collections::BTreeMap;

/// The room on one node, as the module documentation says: by the kernel's estimate when its
/// watermarks are known (`marks`, in pages of `page_bytes`), else free memory less
/// `fallback_reserve` bytes.
pub(super) fn room_bytes(
    mem: &NodeMeminfo,
    marks: Option<&NodeWatermarks>,
    page_bytes: u64,
    fallback_reserve: u64,
) -> u64 {
    let Some(w) = marks else {
        return mem.free_bytes.saturating_sub(fallback_reserve);
    };
    let bytes = |pages: u64| i128::from(pages) * i128::from(page_bytes);
    let low = bytes(w.low_pages);
    let usable = |x: Option<u64>| x.map_or(0, |x| i128::from(x) - (i128::from(x) / 2).min(low));
    let room = i128::from(mem.free_bytes) - bytes(w.reserve_pages)
        + usable(mem.file_bytes)
        + usable(mem.reclaimable_bytes);
    u64::try_from(room.max(0)).unwrap_or(u64::MAX)
}

impl<S: Sys> LinuxMachine<S> {
    /// Whether the kernel's watermarks can be read (/proc/zoneinfo, with every node of the
    /// topology), so that room is the kernel's estimate rather than the conservative rule.
    pub(super) fn watermarks_known(&self) -> bool {
        self.proc
            .zoneinfo()
            .ok()
            .flatten()
            .is_some_and(|z| self.topology.nodes().iter().all(|n| z.contains_key(&n.id)))
    }

    /// The room on every node now (see the module documentation). A node whose meminfo
    /// cannot be read has the free memory discovery found, less the fallback reserve.
    pub(super) fn room(&self) -> BTreeMap<NodeId, u64> {
        let marks = self.proc.zoneinfo().ok().flatten().unwrap_or_default();
        let page_bytes = self.sys.page_bytes();
        let reserve = self.config.reserve_free_bytes;
        self.topology
            .nodes()
            .iter()
            .map(|n| {
                let room = match self.sysfs.node_meminfo(n.id) {
                    Ok(m) => room_bytes(&m, marks.get(&n.id), page_bytes, reserve),
                    Err(_) => n.mem_free_bytes.saturating_sub(reserve),
                };
                (n.id, room)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn meminfo(free_mib: u64, file_mib: Option<u64>, slab_mib: Option<u64>) -> NodeMeminfo {
        NodeMeminfo {
            total_bytes: 8192 * MIB,
            free_bytes: free_mib * MIB,
            file_bytes: file_mib.map(|x| x * MIB),
            reclaimable_bytes: slab_mib.map(|x| x * MIB),
        }
    }

    #[test]
    fn room_is_free_plus_reclaimable_less_the_kernels_reserve() {
        // 256 pages (1 MiB) of low watermarks, 2560 pages (10 MiB) of reserve.
        let marks = NodeWatermarks {
            low_pages: 256,
            high_pages: 512,
            reserve_pages: 2560,
        };
        // 100 MiB free, 40 MiB of cache (1 MiB, the low watermarks, kept), 4 MiB of
        // reclaimable slab (1 MiB kept): 100 - 10 + 39 + 3.
        let m = meminfo(100, Some(40), Some(4));
        assert_eq!(room_bytes(&m, Some(&marks), 4096, 64 * MIB), 132 * MIB);
        // Little cache: half of it is kept (the low watermarks are more).
        let m = meminfo(100, Some(1), None);
        assert_eq!(
            room_bytes(&m, Some(&marks), 4096, 64 * MIB),
            90 * MIB + MIB / 2
        );
        // Free memory under the reserve: cache can make up for it, and never below zero.
        let m = meminfo(5, Some(40), None);
        assert_eq!(room_bytes(&m, Some(&marks), 4096, 64 * MIB), 34 * MIB);
        assert_eq!(
            room_bytes(&meminfo(5, None, None), Some(&marks), 4096, 0),
            0
        );
        // Without the watermarks: free memory less the fixed reserve, no cache counted.
        let m = meminfo(100, Some(40), Some(4));
        assert_eq!(room_bytes(&m, None, 4096, 64 * MIB), 36 * MIB);
    }
}
