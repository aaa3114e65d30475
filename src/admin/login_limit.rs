//! Slowing down password guessing on the admin port.
//!
//! Each peer (an IPv4 address, or an IPv6 /64: one host's addresses) has a bucket of
//! [`LoginLimits::burst`] password checks that refills by one every [`LoginLimits::refill`].
//! A check takes a token before the password is compared (so parallel connections cannot
//! overtake the count); a successful login gives it back and forgets the peer's failures. A
//! peer with an empty bucket is refused without its password being checked, with a message
//! saying when to try again. A failed check is answered only after
//! [`LoginLimits::failure_delay`], which slows a guessing loop on one connection at a time.
//!
//! So one peer gets at most `burst` guesses at once and then one per `refill`, whatever it
//! does. Refusals are logged once per [`LOG_INTERVAL`] with a count (a guessing loop must not
//! flood the log), and each at debug.
//!
//! The table of peers is bounded ([`LoginLimits::max_peers`]): peers whose bucket is full again
//! are forgotten first; past that, new peers share one bucket.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::log_limit::RateLimited;

/// One warning line at most this often about refused admin logins.
pub(crate) const LOG_INTERVAL: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginLimits {
    /// Password checks a peer may make before it has to wait.
    pub burst: u32,
    /// One more check is allowed after this long.
    pub refill: Duration,
    /// A wrong password is answered after this long.
    pub failure_delay: Duration,
    /// Peers tracked at once.
    pub max_peers: usize,
}

impl Default for LoginLimits {
    fn default() -> Self {
        LoginLimits {
            burst: 5,
            refill: Duration::from_secs(1),
            failure_delay: Duration::from_millis(500),
            max_peers: 4096,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Checks left at `at`.
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn tokens_at(&self, now: Instant, limits: &LoginLimits) -> f64 {
        let refilled =
            now.saturating_duration_since(self.at).as_secs_f64() / limits.refill.as_secs_f64();
        (self.tokens + refilled).min(f64::from(limits.burst))
    }
}

/// Why a login was refused, for the rate-limited log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    WrongCredentials,
    /// Refused without a check: the peer used up its checks.
    Blocked,
}

/// The peers' buckets and the refusal log of one admin interface.
#[derive(Debug)]
pub(crate) struct LoginLimiter {
    limits: LoginLimits,
    peers: Mutex<HashMap<IpAddr, Bucket>>,
    log: RateLimited,
}

/// All peers past [`LoginLimits::max_peers`] share this key.
const OVERFLOW: IpAddr = IpAddr::V6(Ipv6Addr::UNSPECIFIED);

/// The key of a peer: IPv4 as is, IPv6 by its /64.
fn peer_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::V6(Ipv6Addr::from(segments))
            }
        },
    }
}

impl Default for LoginLimiter {
    fn default() -> Self {
        LoginLimiter::new(LoginLimits::default())
    }
}

impl LoginLimiter {
    pub(crate) fn new(limits: LoginLimits) -> Self {
        LoginLimiter {
            limits: LoginLimits {
                burst: limits.burst.max(1),
                refill: limits.refill.max(Duration::from_millis(1)),
                max_peers: limits.max_peers.max(1),
                ..limits
            },
            peers: Mutex::new(HashMap::new()),
            log: RateLimited::new(LOG_INTERVAL),
        }
    }

    pub(crate) fn limits(&self) -> &LoginLimits {
        &self.limits
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Bucket>> {
        self.peers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes one password check for `ip`; `Err(wait)` when it has none left (one comes back in
    /// `wait`).
    pub(crate) fn begin(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let limits = self.limits;
        let mut peers = self.lock();
        let mut key = peer_key(ip);
        if !peers.contains_key(&key) && peers.len() >= limits.max_peers {
            // Peers whose bucket has refilled carry no state: forget them.
            peers.retain(|_, b| b.tokens_at(now, &limits) < f64::from(limits.burst));
            if peers.len() >= limits.max_peers {
                key = OVERFLOW;
            }
        }
        let bucket = peers.entry(key).or_insert(Bucket {
            tokens: f64::from(limits.burst),
            at: now,
        });
        let tokens = bucket.tokens_at(now, &limits);
        if tokens < 1.0 {
            let wait = limits.refill.mul_f64(1.0 - tokens);
            return Err(wait);
        }
        *bucket = Bucket {
            tokens: tokens - 1.0,
            at: now,
        };
        Ok(())
    }

    /// `ip` logged in: its failures are forgotten.
    pub(crate) fn succeeded(&self, ip: IpAddr) {
        self.lock().remove(&peer_key(ip));
    }

    /// Logs a refused login: at debug each time, at warn once per [`LOG_INTERVAL`] with the
    /// count of the others.
    pub(crate) fn refused(&self, user: &str, ip: IpAddr, why: Refusal) {
        let reason = match why {
            Refusal::WrongCredentials => "wrong user or password",
            Refusal::Blocked => "too many failed logins from this peer",
        };
        tracing::debug!(%ip, user, "admin login refused: {reason}");
        if let Some(more) = self.log.check() {
            tracing::warn!(
                "admin login refused for user '{user}' from {ip}: {reason} ({more} more refused \
                 since the last such line; at most one line per {}s; password checks are limited \
                 to {} at once and then one per {:?} per peer)",
                LOG_INTERVAL.as_secs(),
                self.limits.burst,
                self.limits.refill,
            );
        }
    }

    /// Reports refusals not logged yet once the interval has passed; called periodically.
    pub(crate) fn flush_log(&self, now: Instant) {
        if let Some(more) = self.log.take_overdue(now) {
            tracing::warn!(
                "{more} more admin login(s) refused since the last such line (at most one line \
                 per {}s)",
                LOG_INTERVAL.as_secs()
            );
        }
    }

    #[cfg(test)]
    /// Peers tracked now (for tests).
    pub(crate) fn tracked_peers(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn limiter(burst: u32, max_peers: usize) -> LoginLimiter {
        LoginLimiter::new(LoginLimits {
            burst,
            refill: Duration::from_secs(1),
            failure_delay: Duration::ZERO,
            max_peers,
        })
    }

    #[test]
    fn a_peer_gets_its_burst_then_one_check_per_refill() {
        let l = limiter(3, 16);
        let t0 = Instant::now();
        let a = ip("192.0.2.1");
        for _ in 0..3 {
            assert_eq!(l.begin(a, t0), Ok(()));
        }
        let wait = l.begin(a, t0).unwrap_err();
        assert_eq!(wait, Duration::from_secs(1));
        // Another peer is not affected.
        assert_eq!(l.begin(ip("192.0.2.2"), t0), Ok(()));
        let later = t0 + Duration::from_millis(1500);
        assert_eq!(l.begin(a, later), Ok(()));
        let wait = l.begin(a, later).unwrap_err();
        assert!(wait <= Duration::from_millis(500), "{wait:?}");
        // In 10 s, at most 10 more checks.
        let mut allowed = 0;
        for ms in (1500..11_500).step_by(10) {
            if l.begin(a, t0 + Duration::from_millis(ms)).is_ok() {
                allowed += 1;
            }
        }
        assert!((9..=10).contains(&allowed), "{allowed}");
    }

    #[test]
    fn success_forgets_the_failures() {
        let l = limiter(2, 16);
        let t0 = Instant::now();
        let a = ip("::ffff:192.0.2.1");
        assert!(l.begin(a, t0).is_ok());
        assert!(l.begin(a, t0).is_ok());
        assert!(
            l.begin(ip("192.0.2.1"), t0).is_err(),
            "v4-mapped is the same peer"
        );
        l.succeeded(a);
        assert!(l.begin(a, t0).is_ok());
    }

    #[test]
    fn ipv6_peers_count_by_their_64() {
        let l = limiter(1, 16);
        let t0 = Instant::now();
        assert!(l.begin(ip("2001:db8:1:2::1"), t0).is_ok());
        assert!(l.begin(ip("2001:db8:1:2::ffff"), t0).is_err());
        assert!(l.begin(ip("2001:db8:1:3::1"), t0).is_ok());
    }

    #[test]
    fn the_table_is_bounded() {
        let l = limiter(1, 4);
        let t0 = Instant::now();
        for i in 0..4 {
            assert!(l.begin(ip(&format!("198.51.100.{i}")), t0).is_ok());
        }
        // Full of peers with empty buckets: new ones share the overflow bucket.
        assert!(l.begin(ip("198.51.100.10"), t0).is_ok());
        assert!(l.begin(ip("198.51.100.11"), t0).is_err());
        // The four peers and the shared bucket.
        assert_eq!(l.tracked_peers(), 5);
        // Once buckets refill, their peers are forgotten and room is made.
        let later = t0 + Duration::from_secs(5);
        assert!(l.begin(ip("198.51.100.12"), later).is_ok());
        assert!(l.tracked_peers() <= 4);
    }
}
