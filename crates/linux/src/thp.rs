//! Which parts of an address space are backed by transparent huge pages.
//!
//! A 2 MiB THP moves as a whole: asking move_pages to spread its 512 base pages over nodes
//! leaves it on one node (shared/design/linux-mechanisms.md, section 4, verified on 6.1 and
//! 6.12). So the live backend tags samples in THP-backed mappings with a 2 MiB page size, and
//! policies decide per huge page there. /proc/PID/smaps gives, per mapping, how much of it is
//! `AnonHugePages`; a mapping with any is treated as THP-backed (its huge-page-aligned part).

use rondpoint_model::PageSize;

/// One mapping of /proc/PID/smaps with its THP-backed bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThpMapping {
    pub start: u64,
    pub end: u64,
    pub anon_huge_bytes: u64,
}

/// Parses /proc/PID/smaps text; lines it does not know are skipped. Returns the mappings that
/// have THP-backed memory, sorted by address.
pub fn parse_smaps(text: &str) -> Vec<ThpMapping> {
    let mut out = Vec::new();
    let mut current: Option<(u64, u64)> = None;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
                current = Some((a, b));
                continue;
            }
        }
        if first == "AnonHugePages:" {
            let kb: u64 = words.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            if let (Some((start, end)), true) = (current, kb > 0) {
                out.push(ThpMapping {
                    start,
                    end,
                    anon_huge_bytes: kb * 1024,
                });
            }
        }
    }
    out.sort_by_key(|m| m.start);
    out
}

/// The page size to decide at for an address: 2 MiB inside the huge-page-aligned part of a
/// THP-backed mapping, 4 KiB elsewhere.
pub fn page_size_of(mappings: &[ThpMapping], addr: u64) -> PageSize {
    let huge = PageSize::Huge2M.bytes();
    let i = mappings.partition_point(|m| m.end <= addr);
    match mappings.get(i) {
        Some(m) if m.start <= addr => {
            let lo = m.start.div_ceil(huge) * huge;
            let hi = m.end / huge * huge;
            if addr >= lo && addr < hi {
                PageSize::Huge2M
            } else {
                PageSize::Base4K
            }
        }
        _ => PageSize::Base4K,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55d4c2a00000-55d4c2a21000 rw-p 00000000 00:00 0                          [heap]
Size:                132 kB
AnonHugePages:         0 kB
7f3a40000000-7f3a40a00000 rw-p 00000000 00:00 0 
Size:              10240 kB
Rss:               10240 kB
AnonHugePages:      8192 kB
ShmemPmdMapped:        0 kB
7f3a50001000-7f3a50400000 rw-p 00000000 00:00 0 
Size:               4092 kB
AnonHugePages:      2048 kB
7ffd1c1f2000-7ffd1c213000 rw-p 00000000 00:00 0                          [stack]
AnonHugePages:         0 kB
";

    #[test]
    fn finds_thp_backed_mappings() {
        let m = parse_smaps(SMAPS);
        assert_eq!(m.len(), 2);
        assert_eq!(
            m[0],
            ThpMapping {
                start: 0x7f3a40000000,
                end: 0x7f3a40a00000,
                anon_huge_bytes: 8 << 20
            }
        );
    }

    #[test]
    fn huge_page_size_only_in_the_aligned_part() {
        let m = parse_smaps(SMAPS);
        assert_eq!(page_size_of(&m, 0x7f3a40000000), PageSize::Huge2M);
        assert_eq!(page_size_of(&m, 0x7f3a409fffff), PageSize::Huge2M);
        assert_eq!(page_size_of(&m, 0x7f3a40a00000), PageSize::Base4K);
        // Second mapping starts 4 KiB past a 2 MiB boundary: its first huge page is at +2 MiB.
        assert_eq!(page_size_of(&m, 0x7f3a50001000), PageSize::Base4K);
        assert_eq!(page_size_of(&m, 0x7f3a50200000), PageSize::Huge2M);
        assert_eq!(page_size_of(&m, 0x55d4c2a00000), PageSize::Base4K);
        assert_eq!(page_size_of(&[], 0x1000), PageSize::Base4K);
    }
}
