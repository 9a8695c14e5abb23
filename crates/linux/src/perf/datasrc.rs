//! Where a sampled memory access was served from: the kernel's PERF_SAMPLE_DATA_SRC encoding
//! (Intel PEBS, and AMD IBS when the kernel translates it) and the raw AMD IBS op registers.
//!
//! Sources:
//! - `union perf_mem_data_src` and the PERF_MEM_* constants in include/uapi/linux/perf_event.h:
//!   mem_op bits 0-4, mem_lvl 5-18, mem_snoop 19-23, mem_lock 24-25, mem_dtlb 26-32,
//!   mem_lvl_num 33-36, mem_remote 37, mem_snoopx 38-39, mem_blk 40-42, mem_hops 43-45.
//! - AMD IBS: arch/x86/include/asm/amd-ibs.h (from the Family 19h PPR, 55898) for the IbsOpData2
//!   and IbsOpData3 bits and the DataSrc values; arch/x86/events/amd/ibs.c for the PERF_SAMPLE_RAW
//!   layout: `u32 caps` then the MSRs IbsOpCtl, IbsOpRip, IbsOpData, IbsOpData2, IbsOpData3,
//!   IbsDcLinAd, IbsDcPhysAd (then IbsBrTarget / IbsOpData4 when the CPU has them).

/// Where the data of a sampled load came from, as far as the sample says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataSource {
    /// L1 data cache, or the line fill buffer (a miss already in flight for the same line).
    L1,
    L2,
    /// The last-level cache of this core's complex (Intel L3/LLC, AMD L3 of the CCX or another
    /// CCX of the same node).
    L3,
    /// DRAM attached to the accessing CPU's node.
    LocalDram,
    /// DRAM of another node, any number of hops.
    RemoteDram,
    /// A cache of another node (forwarded or modified line).
    RemoteCache,
    /// CXL or other extension memory.
    Cxl,
    /// Not said, not available, a miss without a source, or I/O / uncached / PMEM.
    Unknown,
}

// mem_lvl (PERF_MEM_LVL_*, shift 5)
const LVL_SHIFT: u32 = 5;
const LVL_HIT: u64 = 0x02;
const LVL_MISS: u64 = 0x04;
const LVL_L1: u64 = 0x08;
const LVL_LFB: u64 = 0x10;
const LVL_L2: u64 = 0x20;
const LVL_L3: u64 = 0x40;
const LVL_LOC_RAM: u64 = 0x80;
const LVL_REM_RAM1: u64 = 0x100;
const LVL_REM_RAM2: u64 = 0x200;
const LVL_REM_CCE1: u64 = 0x400;
const LVL_REM_CCE2: u64 = 0x800;
// mem_lvl_num (PERF_MEM_LVLNUM_*, shift 33)
const LVLNUM_SHIFT: u32 = 33;
const LVLNUM_L1: u64 = 0x01;
const LVLNUM_L2: u64 = 0x02;
const LVLNUM_L3: u64 = 0x03;
const LVLNUM_L4: u64 = 0x04;
const LVLNUM_CXL: u64 = 0x09;
const LVLNUM_ANY_CACHE: u64 = 0x0b;
const LVLNUM_LFB: u64 = 0x0c;
const LVLNUM_RAM: u64 = 0x0d;
// mem_remote (PERF_MEM_REMOTE_REMOTE, shift 37)
const REMOTE_SHIFT: u32 = 37;

/// Decodes a PERF_SAMPLE_DATA_SRC value.
///
/// A level that only *missed* (LVL_MISS without LVL_HIT) is [`DataSource::Unknown`]. Specific
/// mem_lvl memory bits win (REM_RAM*, REM_CCE*, LOC_RAM: Intel sets e.g. REM_RAM1 with level
/// number L3), then mem_lvl_num with mem_remote (the newer encoding), then the mem_lvl cache
/// bits.
pub fn decode_data_src(v: u64) -> DataSource {
    let lvl = (v >> LVL_SHIFT) & 0x3fff;
    let lvl_num = (v >> LVLNUM_SHIFT) & 0xf;
    let remote = (v >> REMOTE_SHIFT) & 1 == 1;
    if lvl & LVL_MISS != 0 && lvl & LVL_HIT == 0 {
        return DataSource::Unknown;
    }
    if lvl & (LVL_REM_RAM1 | LVL_REM_RAM2) != 0 {
        return DataSource::RemoteDram;
    }
    if lvl & (LVL_REM_CCE1 | LVL_REM_CCE2) != 0 {
        return DataSource::RemoteCache;
    }
    if lvl & LVL_LOC_RAM != 0 {
        return if remote {
            DataSource::RemoteDram
        } else {
            DataSource::LocalDram
        };
    }
    match lvl_num {
        LVLNUM_L1 | LVLNUM_LFB => return DataSource::L1,
        LVLNUM_L2 => return DataSource::L2,
        LVLNUM_L3 | LVLNUM_L4 | LVLNUM_ANY_CACHE => {
            return if remote {
                DataSource::RemoteCache
            } else {
                DataSource::L3
            };
        }
        LVLNUM_RAM => {
            return if remote {
                DataSource::RemoteDram
            } else {
                DataSource::LocalDram
            };
        }
        LVLNUM_CXL => return DataSource::Cxl,
        _ => {}
    }
    if lvl & (LVL_L1 | LVL_LFB) != 0 {
        DataSource::L1
    } else if lvl & LVL_L2 != 0 {
        DataSource::L2
    } else if lvl & LVL_L3 != 0 {
        DataSource::L3
    } else {
        DataSource::Unknown
    }
}

/// One AMD IBS op sample, decoded from its PERF_SAMPLE_RAW payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IbsOp {
    /// The IBS capabilities word the kernel puts first (CPUID Fn8000_001B EAX).
    pub caps: u32,
    /// The raw registers, for anything not decoded below.
    pub op_ctl: u64,
    pub op_rip: u64,
    pub op_data: u64,
    pub op_data2: u64,
    pub op_data3: u64,
    /// IbsDcLinAd, when IbsOpData3.DcLinAddrValid (bit 17).
    pub lin_addr: Option<u64>,
    /// IbsDcPhysAd bits 0-51, when IbsOpData3.DcPhyAddrValid (bit 18).
    pub phys_addr: Option<u64>,
    /// IbsOpData3.LdOp (bit 0).
    pub is_load: bool,
    /// IbsOpData3.StOp (bit 1).
    pub is_store: bool,
    /// IbsOpData3.DcMiss (bit 7): the access missed the L1 data cache.
    pub dc_miss: bool,
    /// IbsOpData3.L2Miss (bit 20; Zen 4 and later, 0 before).
    pub l2_miss: bool,
    /// IbsOpData3.DcMissLat (bits 32-47): cycles from the miss to the data return.
    pub dc_miss_latency: u16,
    /// IbsOpData2 DataSrc: `DataSrcHi (bits 6-7) << 3 | DataSrcLo (bits 0-2)`. Zen 2/3 use the
    /// low bits only (2 local cache, 3 DRAM, 4 remote cache, 7 I/O); Zen 4+ the extended values
    /// (1 local L3, 2 near CCX, 3 DRAM, 5 far CCX, 6 PMEM, 7 I/O, 8 extension memory, 12 peer
    /// agent memory). 0 = no source given (L1/L2 hits, stores).
    pub data_src: u8,
    /// IbsOpData2.RmtNode (bit 4): the data came from another node.
    pub remote_node: bool,
}

const IBS_RAW_REGS: usize = 7;

/// Decodes the PERF_SAMPLE_RAW payload of an `ibs_op` sample; `None` if it is too short to be
/// one (e.g. an `ibs_fetch` sample, which has three registers).
pub fn decode_ibs_op(raw: &[u8]) -> Option<IbsOp> {
    let caps = u32::from_le_bytes(raw.get(0..4)?.try_into().ok()?);
    let mut regs = [0u64; IBS_RAW_REGS];
    for (i, reg) in regs.iter_mut().enumerate() {
        let at = 4 + 8 * i;
        *reg = u64::from_le_bytes(raw.get(at..at + 8)?.try_into().ok()?);
    }
    let [
        op_ctl,
        op_rip,
        op_data,
        op_data2,
        op_data3,
        dc_lin_ad,
        dc_phys_ad,
    ] = regs;
    let bit = |v: u64, n: u32| (v >> n) & 1 == 1;
    Some(IbsOp {
        caps,
        op_ctl,
        op_rip,
        op_data,
        op_data2,
        op_data3,
        lin_addr: bit(op_data3, 17).then_some(dc_lin_ad),
        phys_addr: bit(op_data3, 18).then_some(dc_phys_ad & ((1 << 52) - 1)),
        is_load: bit(op_data3, 0),
        is_store: bit(op_data3, 1),
        dc_miss: bit(op_data3, 7),
        l2_miss: bit(op_data3, 20),
        dc_miss_latency: ((op_data3 >> 32) & 0xffff) as u16,
        data_src: (((op_data2 >> 6) & 0x3) << 3 | (op_data2 & 0x7)) as u8,
        remote_node: bit(op_data2, 4),
    })
}

impl IbsOp {
    /// Where the data came from. L1 when the access hit the data cache; otherwise from DataSrc
    /// and RmtNode (loads only: the PPR defines DataSrc for load ops). DataSrc 0 after a miss is
    /// [`DataSource::Unknown`], although on Zen 4+ it is usually an L2 hit (see `l2_miss`).
    pub fn data_source(&self) -> DataSource {
        if !self.is_load && !self.is_store {
            return DataSource::Unknown;
        }
        if !self.dc_miss {
            return DataSource::L1;
        }
        if !self.is_load {
            return DataSource::Unknown;
        }
        match self.data_src {
            1 | 2 => DataSource::L3,
            3 if self.remote_node => DataSource::RemoteDram,
            3 => DataSource::LocalDram,
            4 | 5 => DataSource::RemoteCache,
            8 => DataSource::Cxl,
            _ => DataSource::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u64s(values: &[u64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// A data_src value from the PERF_MEM_* fields (perf_event.h shifts).
    fn data_src(lvl: u64, lvl_num: u64, remote: bool, snoop: u64) -> u64 {
        const OP_LOAD: u64 = 0x02;
        OP_LOAD | (lvl << 5) | (snoop << 19) | (lvl_num << 33) | (u64::from(remote) << 37)
    }

    #[test]
    fn data_src_levels_as_intel_pebs_reports_them() {
        // PERF_MEM_LVL_*: HIT 0x02, MISS 0x04, L1 0x08, LFB 0x10, L2 0x20, L3 0x40, LOC_RAM
        // 0x80, REM_RAM1 0x100, REM_RAM2 0x200, REM_CCE1 0x400; LVLNUM: L1 1, L2 2, L3 3, CXL 9,
        // LFB 0xc, RAM 0xd, NA 0xf; SNOOP: NONE 0x02, HIT 0x04, MISS 0x08, HITM 0x10. The rows
        // follow arch/x86/events/intel/ds.c's pebs_data_source table.
        use DataSource::*;
        let hit = 0x02;
        let cases = [
            (data_src(hit | 0x08, 0x1, false, 0x02), L1),
            (data_src(hit | 0x10, 0xc, false, 0x02), L1), // LFB
            (data_src(hit | 0x20, 0x2, false, 0x02), L2),
            (data_src(hit | 0x40, 0x3, false, 0x10), L3),
            (data_src(hit | 0x80, 0xd, false, 0x08), LocalDram),
            (data_src(hit | 0x100, 0xd, true, 0x08), RemoteDram),
            (data_src(hit | 0x100, 0x3, true, 0x04), RemoteDram), // 0x0b: REM_RAM1, level L3
            (data_src(hit | 0x200, 0, false, 0), RemoteDram),
            (data_src(hit | 0x400, 0x3, true, 0x10), RemoteCache), // 0x09: L3 miss, snoop hitm
        ];
        for (value, want) in cases {
            assert_eq!(decode_data_src(value), want, "{value:#x}");
        }
    }

    #[test]
    fn data_src_newer_and_degenerate_encodings() {
        use DataSource::*;
        let cases = [
            // Level number only (mem_lvl NA = 0x01), with and without the remote bit.
            (data_src(0x01, 0xd, false, 0), LocalDram),
            (data_src(0x01, 0xd, true, 0), RemoteDram),
            (data_src(0x01, 0x3, true, 0), RemoteCache),
            (data_src(0x01, 0x9, false, 0), Cxl),
            // A store that missed L1: where it went is not said.
            (data_src(0x04 | 0x08, 0x1, false, 0), Unknown),
            // Everything "not available" (what a software event reports), and zero.
            (0x1e_0508_0021, Unknown),
            (0, Unknown),
        ];
        for (value, want) in cases {
            assert_eq!(decode_data_src(value), want, "{value:#x}");
        }
    }

    /// The PERF_SAMPLE_RAW payload of an ibs_op sample: caps, then IbsOpCtl, IbsOpRip, IbsOpData,
    /// IbsOpData2, IbsOpData3, IbsDcLinAd, IbsDcPhysAd: 60 bytes, so that with its u32 size the RAW
    /// field is 64 bytes and needs no padding (arch/x86/events/amd/ibs.c, perf_prepare_sample).
    fn ibs_raw(op_data2: u64, op_data3: u64, lin: u64, phys: u64) -> Vec<u8> {
        let mut raw = 0x3ffu32.to_le_bytes().to_vec();
        raw.extend(u64s(&[
            1 << 18,
            0x40_1234,
            0,
            op_data2,
            op_data3,
            lin,
            phys,
        ]));
        raw
    }

    // IbsOpData3 bits (amd-ibs.h): ld_op 0, st_op 1, dc_miss 7, dc_lin_addr_valid 17,
    // dc_phy_addr_valid 18, l2_miss 20, dc_miss_lat 32-47. IbsOpData2: data_src_lo 0-2, rmt_node 4,
    // data_src_hi 6-7.
    const LD: u64 = 1;
    const ST: u64 = 1 << 1;
    const DC_MISS: u64 = 1 << 7;
    const LIN_VALID: u64 = 1 << 17;
    const PHYS_VALID: u64 = 1 << 18;
    const L2_MISS: u64 = 1 << 20;

    #[test]
    fn ibs_op_remote_dram_load() {
        let op_data3 = LD | DC_MISS | LIN_VALID | PHYS_VALID | L2_MISS | (300 << 32);
        let raw = ibs_raw(
            3 | (1 << 4),
            op_data3,
            0x7f12_3456_7000,
            0xfff0_0012_3456_7000,
        );
        let op = decode_ibs_op(&raw).unwrap();
        assert_eq!(op.caps, 0x3ff);
        assert_eq!(op.op_rip, 0x40_1234);
        assert_eq!(op.lin_addr, Some(0x7f12_3456_7000));
        assert_eq!(
            op.phys_addr,
            Some(0x12_3456_7000),
            "bits 52-63 are not address bits"
        );
        assert!(op.is_load && !op.is_store && op.dc_miss && op.l2_miss);
        assert_eq!(op.dc_miss_latency, 300);
        assert_eq!((op.data_src, op.remote_node), (3, true));
        assert_eq!(op.data_source(), DataSource::RemoteDram);
    }

    #[test]
    fn ibs_op_sources_and_validity() {
        let local = decode_ibs_op(&ibs_raw(3, LD | DC_MISS | LIN_VALID, 0x1000, 0x2000)).unwrap();
        assert_eq!(local.data_source(), DataSource::LocalDram);
        assert_eq!((local.lin_addr, local.phys_addr), (Some(0x1000), None));
        // Zen 4 extended source 8 (data_src_hi = 1, lo = 0): extension memory.
        let cxl = decode_ibs_op(&ibs_raw(1 << 6, LD | DC_MISS, 0, 0)).unwrap();
        assert_eq!((cxl.data_src, cxl.data_source()), (8, DataSource::Cxl));
        let far_cache = decode_ibs_op(&ibs_raw(5, LD | DC_MISS, 0, 0)).unwrap();
        assert_eq!(far_cache.data_source(), DataSource::RemoteCache);
        let l3 = decode_ibs_op(&ibs_raw(2, LD | DC_MISS, 0, 0)).unwrap();
        assert_eq!(l3.data_source(), DataSource::L3);
        let l1 = decode_ibs_op(&ibs_raw(0, LD | LIN_VALID, 0x1000, 0)).unwrap();
        assert_eq!(l1.data_source(), DataSource::L1);
        let store_miss = decode_ibs_op(&ibs_raw(3, ST | DC_MISS, 0, 0)).unwrap();
        assert_eq!(store_miss.data_source(), DataSource::Unknown);
        let not_memory = decode_ibs_op(&ibs_raw(0, 0, 0, 0)).unwrap();
        assert_eq!(not_memory.data_source(), DataSource::Unknown);
        // An ibs_fetch payload (caps + 3 registers) is not an op sample.
        assert_eq!(decode_ibs_op(&ibs_raw(0, 0, 0, 0)[..4 + 3 * 8]), None);
        assert_eq!(decode_ibs_op(&[]), None);
    }
}
