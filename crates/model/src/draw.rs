//! Weighted random choice from a uniform draw, shared by the simulator (which access a
//! sample falls on) and the policies (which node a page goes to). The caller draws `u` from
//! its own random generator, so that the model needs none and runs stay reproducible.

/// The index of the weight that `u` (uniform in `[0, 1)`) falls on when the weights are laid
/// end to end and scaled to `[0, 1)`: index `i` with probability `weights[i] / sum`. `None`
/// when there are no weights; the last positive weight's index when rounding carries `u`
/// past the end; the first index when every weight is 0 or less (there is nothing to weigh,
/// and the first candidate is the callers' common fallback).
pub fn weighted_index<I>(weights: I, u: f64) -> Option<usize>
where
    I: IntoIterator<Item = f64>,
    I::IntoIter: Clone,
{
    let weights = weights.into_iter();
    let sum: f64 = weights.clone().filter(|w| *w > 0.0).sum();
    let mut x = u * sum;
    let mut chosen = None;
    for (i, w) in weights.enumerate() {
        if chosen.is_none() || w > 0.0 {
            chosen = Some(i);
        }
        if w <= 0.0 {
            continue;
        }
        if x < w {
            break;
        }
        x -= w;
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn picks_by_cumulative_weight() {
        let w = [1.0, 2.0, 1.0];
        assert_eq!(weighted_index(w, 0.0), Some(0));
        assert_eq!(weighted_index(w, 0.24), Some(0));
        assert_eq!(weighted_index(w, 0.25), Some(1));
        assert_eq!(weighted_index(w, 0.74), Some(1));
        assert_eq!(weighted_index(w, 0.75), Some(2));
        assert_eq!(weighted_index(w, 0.999_999), Some(2));
    }

    #[test]
    fn edge_cases() {
        assert_eq!(weighted_index(std::iter::empty::<f64>(), 0.5), None);
        assert_eq!(weighted_index([0.0, 0.0], 0.5), Some(0));
        // Zero weights are never chosen while a positive one exists.
        assert_eq!(weighted_index([0.0, 3.0, 0.0], 0.0), Some(1));
        assert_eq!(weighted_index([0.0, 3.0, 0.0], 0.99), Some(1));
        // Rounding past the end lands on the last positive weight.
        assert_eq!(weighted_index([1.0, 1.0, 0.0], 1.0), Some(1));
    }

    proptest! {
        #[test]
        fn frequencies_follow_weights(weights in prop::collection::vec(0.0f64..10.0, 1..6)) {
            let sum: f64 = weights.iter().sum();
            prop_assume!(sum > 0.1);
            let n = 4000;
            let mut hits = vec![0usize; weights.len()];
            for k in 0..n {
                let u = (k as f64 + 0.5) / n as f64;
                let i = weighted_index(weights.iter().copied(), u).unwrap();
                hits[i] += 1;
            }
            for (i, w) in weights.iter().enumerate() {
                let expected = w / sum * n as f64;
                prop_assert!((hits[i] as f64 - expected).abs() <= 1.5, "{i}: {hits:?} {weights:?}");
            }
        }
    }
}
