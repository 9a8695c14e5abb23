//! The allocation policy a launched program starts with: how each `MemPolicy` is carried out
//! with set_mempolicy(2) before exec on this kernel, and what is done instead, and why, when
//! the kernel cannot do what was asked.

use crate::sys::{MemPolicyMode, NodeMask};
use rondpoint_model::{MemPolicy, NodeId};
use std::collections::BTreeMap;

/// The policy set before exec, and what differs from the one asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchPolicy {
    pub mode: MemPolicyMode,
    pub nodes: NodeMask,
    /// Why this is not exactly the policy asked for (the action's outcome is then
    /// `Substituted`, with this note).
    pub substituted: Option<String>,
}

/// How `policy` is set at launch on a kernel whose weighted-interleave weights are
/// `kernel_weights` (`None`: no weighted interleave, before Linux 6.9). `None` for the
/// default policy, which needs no call; `MemPolicyMode::Default` (no call either) with a note
/// for a policy Linux has no equivalent of.
///
/// Weighted interleave takes its weights from /sys/kernel/mm/mempolicy/weighted_interleave,
/// machine-wide; rondpoint does not change a machine-wide setting for one program. Weights
/// in the same proportions as the kernel's are done as asked; other weights run with the
/// kernel's and are reported substituted. Without weighted interleave, the weighted nodes are
/// interleaved evenly, which is what was asked when the weights are equal.
pub(crate) fn launch_policy(
    policy: &MemPolicy,
    kernel_weights: Option<&BTreeMap<u16, u8>>,
) -> Option<LaunchPolicy> {
    let plain = |mode, nodes: &[NodeId]| LaunchPolicy {
        mode,
        nodes: NodeMask::of(nodes.iter().map(|n| n.0)),
        substituted: None,
    };
    Some(match policy {
        MemPolicy::Default => return None,
        MemPolicy::Bind { nodes } => plain(MemPolicyMode::Bind, nodes),
        MemPolicy::Interleave { nodes } => plain(MemPolicyMode::Interleave, nodes),
        MemPolicy::PreferredMany { nodes } => plain(MemPolicyMode::PreferredMany, nodes),
        MemPolicy::WeightedInterleave { weights } => weighted(weights, kernel_weights),
        // First touch with the kernel's own fallback: set nothing, and say so.
        MemPolicy::Overflow { .. } => LaunchPolicy {
            mode: MemPolicyMode::Default,
            nodes: NodeMask::default(),
            substituted: Some(
                "first touch with the kernel's fallback order: Linux has no allocation policy \
                 that spreads a full node's overflow (the policy's reactive mode moves it \
                 afterwards)"
                    .into(),
            ),
        },
    })
}

fn weighted(asked: &[(NodeId, u8)], kernel: Option<&BTreeMap<u16, u8>>) -> LaunchPolicy {
    let used: Vec<(u16, u8)> = asked
        .iter()
        .filter(|(_, w)| *w > 0)
        .map(|(n, w)| (n.0, *w))
        .collect();
    let nodes = NodeMask::of(used.iter().map(|(n, _)| *n));
    let list = |ws: &mut dyn Iterator<Item = (u16, u8)>| {
        ws.map(|(n, w)| format!("node{n} {w}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let asked_text = list(&mut used.iter().copied());
    match kernel {
        Some(kernel) => {
            // A node the kernel lists no weight for has its default, 1.
            let theirs: Vec<(u16, u8)> = used
                .iter()
                .map(|(n, _)| (*n, kernel.get(n).copied().unwrap_or(1)))
                .collect();
            let proportional = used.iter().zip(&theirs).all(|((_, a), (_, k))| {
                u32::from(*a) * u32::from(theirs[0].1) == u32::from(*k) * u32::from(used[0].1)
            });
            LaunchPolicy {
                mode: MemPolicyMode::WeightedInterleave,
                nodes,
                substituted: (!proportional).then(|| {
                    format!(
                        "weighted interleave with the kernel's machine-wide weights ({}) instead \
                         of those asked ({asked_text}): rondpoint does not change \
                         /sys/kernel/mm/mempolicy/weighted_interleave",
                        list(&mut theirs.iter().copied())
                    )
                }),
            }
        }
        None => {
            let even = used.windows(2).all(|w| w[0].1 == w[1].1);
            LaunchPolicy {
                mode: MemPolicyMode::Interleave,
                nodes,
                substituted: (!even).then(|| {
                    format!(
                        "plain interleave over the weighted nodes instead of the weights asked \
                         ({asked_text}): this kernel has no weighted interleave (Linux 6.9+)"
                    )
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(w: &[(u16, u8)]) -> MemPolicy {
        MemPolicy::WeightedInterleave {
            weights: w.iter().map(|&(n, w)| (NodeId(n), w)).collect(),
        }
    }

    #[test]
    fn an_overflow_policy_is_first_touch_and_says_so() {
        let p = launch_policy(
            &MemPolicy::Overflow {
                spread: rondpoint_model::overflow::OverflowSpread::Interleave,
                tiers: Vec::new(),
            },
            None,
        )
        .unwrap();
        assert_eq!(p.mode, MemPolicyMode::Default);
        assert!(p.substituted.unwrap().contains("no allocation policy"));
    }

    #[test]
    fn plain_policies_are_set_as_asked() {
        assert_eq!(launch_policy(&MemPolicy::Default, None), None);
        let p = launch_policy(
            &MemPolicy::Bind {
                nodes: vec![NodeId(1), NodeId(3)],
            },
            None,
        )
        .unwrap();
        assert_eq!(
            (p.mode, p.nodes.nodes(), p.substituted),
            (MemPolicyMode::Bind, vec![1, 3], None)
        );
    }

    #[test]
    fn weights_in_the_kernel_s_proportions_are_done_as_asked() {
        let kernel = BTreeMap::from([(0, 2), (1, 1), (2, 1)]);
        let p = launch_policy(&weights(&[(0, 4), (1, 2), (3, 0)]), Some(&kernel)).unwrap();
        assert_eq!(p.mode, MemPolicyMode::WeightedInterleave);
        assert_eq!(
            p.nodes.nodes(),
            vec![0, 1],
            "a zero weight leaves its node out"
        );
        assert_eq!(p.substituted, None);
    }

    #[test]
    fn other_weights_run_with_the_kernel_s_and_say_so() {
        let kernel = BTreeMap::from([(0, 1), (1, 1)]);
        let p = launch_policy(&weights(&[(0, 3), (1, 1)]), Some(&kernel)).unwrap();
        assert_eq!(p.mode, MemPolicyMode::WeightedInterleave);
        let note = p.substituted.unwrap();
        assert!(
            note.contains("(node0 1, node1 1) instead of those asked (node0 3, node1 1)"),
            "{note}"
        );
    }

    #[test]
    fn without_weighted_interleave_the_nodes_are_interleaved_evenly() {
        let p = launch_policy(&weights(&[(0, 3), (2, 1)]), None).unwrap();
        assert_eq!(
            (p.mode, p.nodes.nodes()),
            (MemPolicyMode::Interleave, vec![0, 2])
        );
        assert!(p.substituted.unwrap().contains("Linux 6.9+"));
        let even = launch_policy(&weights(&[(0, 2), (2, 2)]), None).unwrap();
        assert_eq!(
            even.substituted, None,
            "equal weights are a plain interleave"
        );
    }
}
