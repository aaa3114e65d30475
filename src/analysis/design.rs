//! Two-level fractional factorial designs for attributing cost to instrument groups: every
//! run (design point) turns some groups on and the others off, so that, in one complete
//! replicate, each group is on in half the runs and off in the other half, balanced against
//! every other group. A group's main effect is then the difference between the two halves, and
//! K groups are measured in the time of one comparison.
//!
//! Construction: with `2^k` runs indexed by `u` (k base factors), factor `j` has a column `c_j`
//! (a set of base factors) and is on in run `u` when `popcount(c_j & u)` is odd. Every column
//! here has an odd number of base factors, which gives:
//! - resolution IV or better: a defining word (factors whose columns multiply to the identity)
//!   then needs an even number of factors, and two distinct columns never cancel, so no word
//!   is shorter than four: main effects are clear of each other and of every two-factor
//!   interaction;
//! - a fold-over: the mirror of every run (`u` with every bit flipped) flips every factor and
//!   is a run too; `u = 0` is the point with every group off and its mirror the point with all
//!   on. The schedule runs each run next to its mirror, so a main effect is measured within
//!   pairs of slots a fraction of a second apart (the host's drift cancels as in the paired
//!   fast schedule); two-factor interactions, which are constant within a mirror pair, are
//!   measured across pairs.
//!
//! `k` is the smallest with `2^(k-1) >= K` (16 runs for 5-8 groups, 32 for 9-16), the k base
//! factors are the first k groups, and the other columns are the odd sets of three or more
//! base factors chosen for minimum aberration (fewest words of length four, then six, ...).
//!
//! Must not: know what a group sets or talk to a server; it is arithmetic on bit masks (the
//! controller plans its runs with it; the analysis reads the design back from the points'
//! names).

/// At most this many factors (groups) at once: 32 runs, about 8 s a replicate at 250 ms slots.
pub(crate) const MAX_FACTORS: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DesignError {
    #[error("a design needs at least one group")]
    NoFactors,
    #[error("{0} groups at once: at most {MAX_FACTORS} (split them over two runs)")]
    TooMany(usize),
}

/// A resolution IV (or better) two-level design with mirror pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Design {
    /// Base factors: the design has `2^base` runs.
    base: u32,
    /// Factor `j`'s column: the base factors whose product gives its level (odd weight).
    columns: Vec<u32>,
}

fn odd(x: u32) -> bool {
    x.count_ones() % 2 == 1
}

impl Design {
    /// The minimum-aberration fold-over design for `factors` groups.
    pub(crate) fn new(factors: usize) -> Result<Design, DesignError> {
        if factors == 0 {
            return Err(DesignError::NoFactors);
        }
        if factors > MAX_FACTORS {
            return Err(DesignError::TooMany(factors));
        }
        let base = (1u32..)
            .find(|k| 1usize << (k - 1) >= factors)
            .expect("some k fits 16 factors");
        let units: Vec<u32> = (0..base).map(|i| 1 << i).collect();
        let extra = factors - base as usize;
        let candidates: Vec<u32> = (1u32..1 << base)
            .filter(|c| odd(*c) && c.count_ones() >= 3)
            .collect();
        let mut best: Option<(Vec<usize>, Vec<u32>)> = None;
        for chosen in combinations(candidates.len(), extra) {
            let columns: Vec<u32> = units
                .iter()
                .copied()
                .chain(chosen.iter().map(|&i| candidates[i]))
                .collect();
            let design = Design { base, columns };
            let pattern = design.wordlength_pattern();
            if best.as_ref().is_none_or(|(p, _)| pattern < *p) {
                best = Some((pattern, design.columns));
            }
        }
        let (_, columns) = best.expect("enough odd columns for every factor");
        Ok(Design { base, columns })
    }

    pub(crate) fn factors(&self) -> usize {
        self.columns.len()
    }

    /// Runs in one complete replicate.
    pub(crate) fn runs(&self) -> usize {
        1 << self.base
    }

    /// The factors on in run `run`: bit `j` for factor `j`.
    pub(crate) fn point(&self, run: usize) -> u32 {
        self.columns
            .iter()
            .enumerate()
            .filter(|(_, c)| odd(**c & run as u32))
            .fold(0, |mask, (j, _)| mask | 1 << j)
    }

    /// Every run's factors on, by run.
    #[cfg(test)]
    pub(crate) fn points(&self) -> Vec<u32> {
        (0..self.runs()).map(|r| self.point(r)).collect()
    }

    /// The run with every factor flipped.
    pub(crate) fn mirror(&self, run: usize) -> usize {
        run ^ (self.runs() - 1)
    }

    /// Each run with its mirror, the run with fewer factors on first (run 0, every group off,
    /// pairs with every group on).
    pub(crate) fn mirror_pairs(&self) -> Vec<(usize, usize)> {
        (0..self.runs())
            .filter(|&r| r < self.mirror(r))
            .map(|r| (r, self.mirror(r)))
            .collect()
    }

    /// The defining words: sets of factors (as masks) whose columns multiply to the identity.
    pub(crate) fn words(&self) -> Vec<u32> {
        let base = self.base as usize;
        let generators: Vec<u32> = self
            .columns
            .iter()
            .enumerate()
            .skip(base)
            .map(|(j, c)| (1u32 << j) | c)
            .collect();
        (1u32..1 << generators.len())
            .map(|pick| {
                generators
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| pick & (1 << i) != 0)
                    .fold(0, |w, (_, g)| w ^ g)
            })
            .collect()
    }

    /// Length of the shortest defining word; `None` for a full factorial (no word).
    pub(crate) fn resolution(&self) -> Option<u32> {
        self.words().iter().map(|w| w.count_ones()).min()
    }

    /// Number of words of length 3, 4, ... (the aberration criterion compares these in order).
    pub(crate) fn wordlength_pattern(&self) -> Vec<usize> {
        let mut pattern = vec![0; self.factors().saturating_sub(2).max(1)];
        for w in self.words() {
            let len = w.count_ones() as usize;
            if len >= 3 {
                pattern[len - 3] += 1;
            }
        }
        pattern
    }

    /// The two-factor interactions grouped by alias chain: pairs `(a, b)` whose contrasts are
    /// the same column over the runs (only the chain's sum can be estimated), in a stable
    /// order. (The analysis finds the chains from the points' names.)
    #[cfg(test)]
    pub(crate) fn interaction_chains(&self) -> Vec<Vec<(usize, usize)>> {
        let mut chains: std::collections::BTreeMap<u32, Vec<(usize, usize)>> =
            std::collections::BTreeMap::new();
        for a in 0..self.factors() {
            for b in a + 1..self.factors() {
                chains
                    .entry(self.columns[a] ^ self.columns[b])
                    .or_default()
                    .push((a, b));
            }
        }
        let mut out: Vec<_> = chains.into_values().collect();
        out.sort();
        out
    }
}

/// Every way to choose `r` of `n` indices, in lexicographic order.
fn combinations(n: usize, r: usize) -> Vec<Vec<usize>> {
    fn rec(start: usize, n: usize, r: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == r {
            out.push(cur.clone());
            return;
        }
        for i in start..n {
            if n - i < r - cur.len() {
                break;
            }
            cur.push(i);
            rec(i + 1, n, r, cur, out);
            cur.pop();
        }
    }
    let mut out = Vec::new();
    rec(0, n, r, &mut Vec::with_capacity(r), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// +1 when factor `j` is on in the point, -1 when off.
    fn level(point: u32, j: usize) -> i32 {
        if point & (1 << j) != 0 {
            1
        } else {
            -1
        }
    }

    #[test]
    fn runs_are_the_smallest_power_of_two_with_room() {
        let runs: Vec<usize> = (1..=MAX_FACTORS)
            .map(|k| Design::new(k).unwrap().runs())
            .collect();
        assert_eq!(
            runs,
            [2, 4, 8, 8, 16, 16, 16, 16, 32, 32, 32, 32, 32, 32, 32, 32]
        );
        assert_eq!(Design::new(0), Err(DesignError::NoFactors));
        assert_eq!(Design::new(17), Err(DesignError::TooMany(17)));
    }

    #[test]
    fn every_design_is_balanced_orthogonal_and_resolution_iv_or_better() {
        for k in 1..=MAX_FACTORS {
            let d = Design::new(k).unwrap();
            let points = d.points();
            // Balance: each factor on in exactly half the runs.
            for j in 0..k {
                let on = points.iter().filter(|p| *p & (1 << j) != 0).count();
                assert_eq!(on * 2, d.runs(), "k={k} factor {j}");
            }
            // Main effects orthogonal to each other and to every two-factor interaction.
            for a in 0..k {
                for b in 0..k {
                    let dot: i32 = points.iter().map(|p| level(*p, a) * level(*p, b)).sum();
                    assert_eq!(dot, if a == b { d.runs() as i32 } else { 0 }, "k={k}");
                    for c in (b + 1)..k {
                        if a == b || a == c {
                            continue;
                        }
                        let dot: i32 = points
                            .iter()
                            .map(|p| level(*p, a) * level(*p, b) * level(*p, c))
                            .sum();
                        assert_eq!(dot, 0, "k={k}: {a} aliased with {b}x{c}");
                    }
                }
            }
            match d.resolution() {
                None => assert_eq!(d.runs(), 1 << k, "full factorial for k={k}"),
                Some(r) => assert!(r >= 4, "k={k}: resolution {r}"),
            }
            // Distinct points.
            let mut sorted = points.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), d.runs(), "k={k}");
        }
    }

    #[test]
    fn mirrors_flip_every_factor_and_hold_the_all_off_and_all_on_points() {
        for k in 1..=MAX_FACTORS {
            let d = Design::new(k).unwrap();
            let all = (1u32 << k) - 1;
            assert_eq!(d.point(0), 0, "run 0 is every group off");
            assert_eq!(d.point(d.mirror(0)), all, "its mirror is every group on");
            let pairs = d.mirror_pairs();
            assert_eq!(pairs.len() * 2, d.runs());
            for (a, b) in pairs {
                assert_eq!(d.point(a) ^ d.point(b), all, "k={k}");
            }
        }
    }

    #[test]
    fn nine_groups_take_a_minimum_aberration_2_9_4_design() {
        let d = Design::new(9).unwrap();
        assert_eq!((d.runs(), d.resolution()), (32, Some(4)));
        // The best fold-over design: nine words of length four, none of length six or
        // less but those (every word is even, so the mirror pairs exist; the unrestricted
        // minimum-aberration 2^(9-4) design has six, with words of length five and no mirror
        // pairs).
        assert_eq!(d.wordlength_pattern()[..2], [0, 9]);
        let chains = d.interaction_chains();
        let pairs: usize = chains.iter().map(Vec::len).sum();
        assert_eq!(pairs, 36, "every pair of nine is in one chain");
        assert!(chains.len() <= 15, "at most the 15 even columns of 32 runs");
        // Five groups: a 2^(5-1) design of resolution IV in 16 runs (fold-over keeps it IV).
        let d = Design::new(5).unwrap();
        assert_eq!((d.runs(), d.resolution()), (16, Some(4)));
        // Up to three groups: the full factorial.
        assert_eq!(Design::new(3).unwrap().resolution(), None);
    }

    #[test]
    fn combinations_count() {
        assert_eq!(combinations(5, 2).len(), 10);
        assert_eq!(combinations(4, 0), vec![Vec::<usize>::new()]);
        assert_eq!(combinations(3, 3), vec![vec![0, 1, 2]]);
    }
}
