//! The admin interface's memory for results, shared by all its connections. A result is held
//! from the query that makes it until its last byte is written; a client that asks for a large
//! result and does not read it holds that memory. Without a bound, 40 such clients took psprobe
//! to 3.6 GB (issue 23). Each query reserves what its result may take from one budget before it
//! runs ([`ResultBudget::reserve`]), keeps what the result took while it is written, and gives
//! it back when written, failed or abandoned (the [`Reservation`] is dropped).
//!
//! Must not: refuse a query while the budget has room for a result of the per-query limit, or
//! let the reservations together exceed the budget.

use std::sync::{Arc, Mutex};

/// What all admin results held at once may take (in the engine's count: value bytes plus 8 per
/// value); twice the per-query limit, so two full results fit.
pub(crate) const RESULT_BUDGET_BYTES: usize = 128 << 20;
/// A query is refused when less than this is left for it.
pub(crate) const MIN_RESERVATION: usize = 1 << 20;
/// Results this large are given back to the system when freed (glibc keeps freed memory in
/// its arenas otherwise: 2.8 GB stayed after the clients of issue 23 had gone).
const TRIM_AFTER_BYTES: usize = 8 << 20;

/// The budget; one per admin interface.
#[derive(Debug)]
pub(crate) struct ResultBudget {
    total: usize,
    used: Mutex<usize>,
}

/// Bytes of the budget held by one query's result; given back when dropped.
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Arc<ResultBudget>,
    bytes: usize,
}

impl ResultBudget {
    pub(crate) fn new(total: usize) -> Arc<Self> {
        Arc::new(ResultBudget {
            total,
            used: Mutex::new(0),
        })
    }

    /// Reserves up to `want` bytes: what is left when less, `None` when less than
    /// [`MIN_RESERVATION`] (or `want`, if smaller) is left.
    pub(crate) fn reserve(self: &Arc<Self>, want: usize) -> Option<Reservation> {
        let mut used = self.lock();
        let left = self.total.saturating_sub(*used);
        let bytes = want.min(left);
        if bytes < want.min(MIN_RESERVATION) {
            return None;
        }
        *used += bytes;
        Some(Reservation {
            budget: Arc::clone(self),
            bytes,
        })
    }

    #[cfg(test)]
    /// Bytes reserved now.
    pub(crate) fn used(&self) -> usize {
        *self.lock()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, usize> {
        self.used.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Reservation {
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Keeps only `bytes` (what the result took); the rest goes back at once.
    pub(crate) fn shrink_to(&mut self, bytes: usize) {
        if bytes < self.bytes {
            let mut used = self.budget.lock();
            *used = used.saturating_sub(self.bytes - bytes);
            self.bytes = bytes;
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        {
            let mut used = self.budget.lock();
            *used = used.saturating_sub(self.bytes);
        }
        if self.bytes >= TRIM_AFTER_BYTES {
            give_back_freed_memory();
        }
    }
}

/// Returns freed heap memory to the system (glibc's `malloc_trim`); elsewhere nothing.
pub(crate) fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The counted size of a result: as the engine counts it against its limit.
pub(crate) fn result_bytes(rows: &[Vec<Option<Vec<u8>>>]) -> usize {
    rows.iter()
        .flatten()
        .map(|v| 8 + v.as_ref().map_or(0, Vec::len))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_never_exceed_the_budget_and_come_back() {
        let budget = ResultBudget::new(10 << 20);
        let a = budget.reserve(6 << 20).unwrap();
        assert_eq!(a.bytes(), 6 << 20);
        let mut b = budget.reserve(6 << 20).unwrap();
        assert_eq!(b.bytes(), 4 << 20, "what is left");
        assert!(budget.reserve(6 << 20).is_none(), "nothing left");
        b.shrink_to(1 << 20);
        assert_eq!(budget.used(), 7 << 20);
        let c = budget.reserve(6 << 20).unwrap();
        assert_eq!(c.bytes(), 3 << 20);
        assert!(budget.reserve(1 << 10).is_none());
        drop((a, b, c));
        assert_eq!(budget.used(), 0);
        let small = budget.reserve(100).unwrap();
        assert_eq!(small.bytes(), 100, "a small want is met whole");
    }

    #[test]
    fn counted_bytes_match_the_engine() {
        let rows = vec![
            vec![Some(b"abc".to_vec()), None],
            vec![Some(Vec::new()), None],
        ];
        assert_eq!(result_bytes(&rows), 3 + 4 * 8);
    }
}
