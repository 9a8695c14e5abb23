//! Rate limits on what a policy may do per epoch (not to be confused with the ranges of
//! accepted numbers, [`rondpoint_model::bounds`]).

use rondpoint_model::{Action, PageSize};

/// Per-epoch caps. Actions are admitted in the order the policy gave them until a cap would be
/// exceeded; the rest are refused (and reported as skipped).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RateLimits {
    /// Most pages (of any size) moved, interleaved or replicated per epoch.
    pub max_pages_per_epoch: Option<u64>,
    /// Most bytes moved, interleaved or replicated per epoch.
    pub max_bytes_per_epoch: Option<u64>,
}

fn bytes_of(a: &Action) -> u64 {
    match a {
        Action::MigratePages { range, .. }
        | Action::Interleave { range, .. }
        | Action::Replicate { range, .. } => range.bytes(),
        Action::MoveNodePages { pages, .. } => pages.saturating_mul(PageSize::Base4K.bytes()),
        Action::PinThread { .. }
        | Action::ExchangeThreads { .. }
        | Action::MoveApplication { .. }
        | Action::SetMemPolicy { .. } => 0,
    }
}

impl RateLimits {
    /// Splits actions into (admitted, refused), by their indices, keeping order.
    pub(crate) fn admit(&self, actions: &[Action]) -> (Vec<usize>, Vec<usize>) {
        let (mut pages, mut bytes) = (0u64, 0u64);
        let mut admitted = Vec::with_capacity(actions.len());
        let mut refused = Vec::new();
        for (i, a) in actions.iter().enumerate() {
            let (p, b) = (pages + a.pages(), bytes + bytes_of(a));
            let over = self.max_pages_per_epoch.is_some_and(|m| p > m)
                || self.max_bytes_per_epoch.is_some_and(|m| b > m);
            if over {
                refused.push(i);
            } else {
                pages = p;
                bytes = b;
                admitted.push(i);
            }
        }
        (admitted, refused)
    }
}
