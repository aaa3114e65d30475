//! `psprobe experiment --threads`: the concurrencies of a study, as a list (`1,8,64`) or as a
//! progression written out by its first terms and its last (`1,2,4,...,1024`: the seed study's
//! eleven levels, doubling; `8,16,...,64`: adding). Every mistake is one line that says what
//! to write instead, before anything starts.
//!
//! Must not: accept a list that would start a cell with no client (0), a level twice, or more
//! clients than the server takes.

use thiserror::Error;

/// The seed study's concurrencies, as `--threads` writes them.
pub(crate) const SEED_STUDY: &str = "1,2,4,...,1024";

/// The most levels one study takes (1,2,...,1000 read as adding 1 would be 1,000 cells).
pub(crate) const MAX_LEVELS: usize = 64;

#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum ThreadsError {
    #[error("--threads is empty: give concurrencies such as 1,8,64 or {SEED_STUDY}")]
    Empty,
    #[error(
        "--threads: {0:?} is not a number of client threads (whole numbers from 1, such as 1,8,64)"
    )]
    NotANumber(String),
    #[error("--threads: 0 client threads measure nothing; start at 1")]
    Zero,
    #[error("--threads: {0} is listed twice")]
    Twice(u32),
    #[error("--threads: `...` needs two numbers before it (the step) and one after it (the last), as in {SEED_STUDY}")]
    Progression,
    #[error("--threads: {first},{second},...,{last} does not reach {last} (going up {how}); write a last term the progression reaches")]
    Unreached {
        first: u32,
        second: u32,
        last: u32,
        how: String,
    },
    #[error("--threads names {0} levels; a study takes at most {MAX_LEVELS} (each level is a cell of its own; did you mean a doubling such as {SEED_STUDY}?)")]
    TooManyLevels(usize),
    #[error("--threads: {threads} client threads are more than this study's server accepts ({limit} connections); use at most {limit}")]
    TooMany { threads: u32, limit: u32 },
}

/// The levels `spec` names, in its order; `limit`: the most client threads a cell may have.
pub(crate) fn parse_threads(spec: &str, limit: u32) -> Result<Vec<u32>, ThreadsError> {
    let words: Vec<&str> = spec
        .split(',')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() {
        return Err(ThreadsError::Empty);
    }
    let mut levels = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if words[i] == "..." {
            // The two terms before it set the step; the one after it ends the run.
            if levels.len() < 2 || i + 1 >= words.len() || words[i + 1] == "..." {
                return Err(ThreadsError::Progression);
            }
            let last = number(words[i + 1])?;
            let (first, second) = (levels[levels.len() - 2], levels[levels.len() - 1]);
            levels.extend(progression(first, second, last)?);
            i += 2;
            continue;
        }
        levels.push(number(words[i])?);
        i += 1;
    }
    if levels.len() > MAX_LEVELS {
        return Err(ThreadsError::TooManyLevels(levels.len()));
    }
    for (k, level) in levels.iter().enumerate() {
        if levels[..k].contains(level) {
            return Err(ThreadsError::Twice(*level));
        }
        if *level > limit {
            return Err(ThreadsError::TooMany {
                threads: *level,
                limit,
            });
        }
    }
    Ok(levels)
}

fn number(word: &str) -> Result<u32, ThreadsError> {
    match word.parse::<u64>() {
        Ok(0) => Err(ThreadsError::Zero),
        Ok(n) => u32::try_from(n).map_err(|_| ThreadsError::NotANumber(word.to_string())),
        Err(_) => Err(ThreadsError::NotANumber(word.to_string())),
    }
}

/// The terms after `second` up to `last`: multiplying by `second / first` when that is whole
/// (the seed study's doubling), else adding `second - first`; when both reach `last`
/// (8,16,...,64) the multiplying one, the seed study's form.
fn progression(first: u32, second: u32, last: u32) -> Result<Vec<u32>, ThreadsError> {
    let unreached = |how: String| ThreadsError::Unreached {
        first,
        second,
        last,
        how,
    };
    if second <= first {
        return Err(unreached("nothing: its terms must rise".to_string()));
    }
    let (ratio, step) = (u64::from(second / first), u64::from(second - first));
    let multiplying = (second % first == 0).then(|| terms(second, last, |t| t * ratio));
    let adding = terms(second, last, |t| t + step);
    match (multiplying, adding) {
        (Some(Some(terms)), _) | (_, Some(terms)) => Ok(terms),
        (Some(None), None) => Err(unreached(format!(
            "neither by a factor of {ratio} nor by adding {step}"
        ))),
        (None, None) => Err(unreached(format!("by adding {step}"))),
    }
}

/// The terms after `start` that `next` makes, up to `last`; `None` when they pass it.
fn terms(start: u32, last: u32, next: impl Fn(u64) -> u64) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let mut term = u64::from(start);
    while term < u64::from(last) {
        term = next(term);
        out.push(u32::try_from(term).ok()?);
    }
    (term == u64::from(last)).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: u32 = 4000;

    #[test]
    fn the_seed_study_shorthand_is_its_eleven_levels() {
        assert_eq!(
            parse_threads(SEED_STUDY, LIMIT).unwrap(),
            vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
        );
    }

    #[test]
    fn lists_and_progressions_mix() {
        assert_eq!(parse_threads("1,8", LIMIT).unwrap(), vec![1, 8]);
        assert_eq!(parse_threads(" 1, 8 ,64 ", LIMIT).unwrap(), vec![1, 8, 64]);
        assert_eq!(
            parse_threads("8,16,...,64", LIMIT).unwrap(),
            vec![8, 16, 32, 64]
        );
        assert_eq!(
            parse_threads("10,20,...,50", LIMIT).unwrap(),
            vec![10, 20, 30, 40, 50]
        );
        assert_eq!(
            parse_threads("1,4,...,64,100", LIMIT).unwrap(),
            vec![1, 4, 16, 64, 100]
        );
        assert_eq!(
            parse_threads("1,3,...,9", LIMIT).unwrap(),
            vec![1, 3, 9],
            "a whole ratio multiplies"
        );
        assert_eq!(parse_threads("2,4,...,4", LIMIT).unwrap(), vec![2, 4]);
    }

    #[test]
    fn every_mistake_is_one_clear_error() {
        assert_eq!(parse_threads("", LIMIT), Err(ThreadsError::Empty));
        assert_eq!(parse_threads(" , ", LIMIT), Err(ThreadsError::Empty));
        assert_eq!(parse_threads("1,0,8", LIMIT), Err(ThreadsError::Zero));
        assert_eq!(
            parse_threads("1,-8", LIMIT),
            Err(ThreadsError::NotANumber("-8".into()))
        );
        assert_eq!(
            parse_threads("1,eight", LIMIT),
            Err(ThreadsError::NotANumber("eight".into()))
        );
        assert_eq!(
            parse_threads("99999999999", LIMIT),
            Err(ThreadsError::NotANumber("99999999999".into()))
        );
        assert_eq!(parse_threads("1,8,1", LIMIT), Err(ThreadsError::Twice(1)));
        assert_eq!(
            parse_threads("1,...,8", LIMIT),
            Err(ThreadsError::Progression)
        );
        assert_eq!(
            parse_threads("1,2,...", LIMIT),
            Err(ThreadsError::Progression)
        );
        assert_eq!(
            parse_threads("1,2,...,...,8", LIMIT),
            Err(ThreadsError::Progression)
        );
        assert!(matches!(
            parse_threads("2,4,...,1000", LIMIT),
            Err(ThreadsError::TooManyLevels(500))
        ));
        assert!(matches!(
            parse_threads("2,6,...,20", LIMIT),
            Err(ThreadsError::Unreached { last: 20, .. })
        ));
        assert!(matches!(
            parse_threads("8,4,...,1", LIMIT),
            Err(ThreadsError::Unreached { .. })
        ));
        assert_eq!(
            parse_threads("1,8,5000", LIMIT),
            Err(ThreadsError::TooMany {
                threads: 5000,
                limit: LIMIT
            })
        );
        // The messages name the fix.
        let text = parse_threads("", LIMIT).unwrap_err().to_string();
        assert!(text.contains(SEED_STUDY), "{text}");
    }
}
