//! Randomized complete blocks: each block runs every scenario once, in an order shuffled with
//! the seed, so drift in the workload or the server spreads evenly over the scenarios.

/// SplitMix64: small, well-distributed, and the same on every platform and release.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The order of `count` scenarios (indices) in block `block` for `seed`.
pub(crate) fn block_order(count: usize, block: u64, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..count).collect();
    let mut state = seed ^ block.wrapping_mul(0xD1B5_4A32_D192_ED03);
    // Fisher-Yates.
    for i in (1..count).rev() {
        let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_is_a_permutation_and_reproducible() {
        for block in 0..50 {
            let mut order = block_order(6, block, 42);
            assert_eq!(order, block_order(6, block, 42));
            order.sort_unstable();
            assert_eq!(order, vec![0, 1, 2, 3, 4, 5]);
        }
    }

    #[test]
    fn orders_vary_between_blocks_and_seeds() {
        let blocks: std::collections::HashSet<_> = (0..20).map(|b| block_order(6, b, 7)).collect();
        assert!(blocks.len() > 10, "shuffled, not fixed: {}", blocks.len());
        assert_ne!(block_order(6, 0, 1), block_order(6, 0, 2));
    }

    #[test]
    fn first_position_is_roughly_uniform() {
        let mut first = [0u32; 4];
        for b in 0..4000 {
            first[block_order(4, b, 99)[0]] += 1;
        }
        for n in first {
            assert!((800..1200).contains(&n), "{first:?}");
        }
    }
}
