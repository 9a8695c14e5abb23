//! Pages and page ranges of a process's address space.

use crate::ids::Pid;
use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

/// The granularity a range is placed at. A THP-backed region moves as whole 2 MiB pages: a
/// 4 KiB-granular decision on it silently does nothing on Linux (see
/// shared/design/linux-mechanisms.md, section 4), so the size travels with every range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PageSize {
    /// A base page, 4 KiB on x86-64.
    #[serde(rename = "4KiB")]
    Base4K,
    /// A transparent huge page, 2 MiB on x86-64.
    #[serde(rename = "2MiB")]
    Huge2M,
}

impl PageSize {
    /// Bytes in one page of this size.
    pub const fn bytes(self) -> u64 {
        match self {
            PageSize::Base4K => 4096,
            PageSize::Huge2M => 2 * 1024 * 1024,
        }
    }

    /// Base pages in one page of this size (1 or 512).
    pub const fn base_pages(self) -> u64 {
        self.bytes() / PageSize::Base4K.bytes()
    }

    /// The start of the page of this size that holds `addr`.
    pub const fn align_down(self, addr: u64) -> u64 {
        addr & !(self.bytes() - 1)
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PageSize::Base4K => "4KiB",
            PageSize::Huge2M => "2MiB",
        })
    }
}

/// What is wrong with a page range.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PageError {
    #[error("start address {start:#x} is not aligned to {size}")]
    Unaligned { start: u64, size: PageSize },
    #[error(
        "range of {count} pages of {size} from {start:#x} runs past the end of the address space"
    )]
    Overflow {
        start: u64,
        count: u64,
        size: PageSize,
    },
    #[error("range is empty")]
    Empty,
}

/// `count` consecutive pages of one size in one process, starting at virtual address `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PageRange {
    pub pid: Pid,
    /// First byte of the first page (aligned to `page_size`).
    pub start: u64,
    /// Number of pages of `page_size`.
    pub count: u64,
    pub page_size: PageSize,
}

impl PageRange {
    /// A checked range: aligned, non-empty, inside the 64-bit address space.
    pub fn new(pid: Pid, start: u64, count: u64, page_size: PageSize) -> Result<Self, PageError> {
        if count == 0 {
            return Err(PageError::Empty);
        }
        if page_size.align_down(start) != start {
            return Err(PageError::Unaligned {
                start,
                size: page_size,
            });
        }
        count
            .checked_mul(page_size.bytes())
            .and_then(|len| start.checked_add(len))
            .ok_or(PageError::Overflow {
                start,
                count,
                size: page_size,
            })?;
        Ok(Self {
            pid,
            start,
            count,
            page_size,
        })
    }

    /// The single page of `page_size` that holds `addr`.
    pub fn page_of(pid: Pid, addr: u64, page_size: PageSize) -> Self {
        Self {
            pid,
            start: page_size.align_down(addr),
            count: 1,
            page_size,
        }
    }

    /// Bytes covered.
    pub fn bytes(&self) -> u64 {
        self.count.saturating_mul(self.page_size.bytes())
    }

    /// One past the last byte (saturating at the top of the address space).
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.bytes())
    }

    /// Whether `addr` falls inside the range.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.start && addr < self.end()
    }

    /// Start addresses of every page in the range.
    pub fn page_starts(&self) -> impl Iterator<Item = u64> + '_ {
        let step = self.page_size.bytes();
        (0..self.count).map(move |i| self.start + i * step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(PageSize::Base4K.bytes(), 4096);
        assert_eq!(PageSize::Huge2M.base_pages(), 512);
        assert_eq!(PageSize::Huge2M.align_down(0x20_1234), 0x20_0000);
    }

    #[test]
    fn range_checks() {
        let r = PageRange::new(Pid(1), 0x1000, 3, PageSize::Base4K).unwrap();
        assert_eq!(r.bytes(), 3 * 4096);
        assert!(r.contains(0x3fff) && !r.contains(0x4000));
        assert_eq!(
            r.page_starts().collect::<Vec<_>>(),
            vec![0x1000, 0x2000, 0x3000]
        );
        assert_eq!(
            PageRange::new(Pid(1), 0x1000, 1, PageSize::Huge2M),
            Err(PageError::Unaligned {
                start: 0x1000,
                size: PageSize::Huge2M
            })
        );
        assert_eq!(
            PageRange::new(Pid(1), 0, 0, PageSize::Base4K),
            Err(PageError::Empty)
        );
        assert!(matches!(
            PageRange::new(Pid(1), u64::MAX - 4095, 2, PageSize::Base4K),
            Err(PageError::Overflow { .. })
        ));
    }

    #[test]
    fn page_size_serialises_with_unit() {
        assert_eq!(
            serde_json::to_string(&PageSize::Huge2M).unwrap(),
            "\"2MiB\""
        );
    }
}
