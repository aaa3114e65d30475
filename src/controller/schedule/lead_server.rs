//! What the leader's slot loop asks of the server, as one trait: keep the lead, switch (apply,
//! verify, publish in one round trip), confirm the rows held, publish a row, restart through
//! the hook, verify a startup scenario. [`LiveServer`] does it over the controller's MySQL
//! connections and keeps the run's record ([`AsFound`]) up to date as it goes; the slot loop's
//! tests script it without a server.
//!
//! Must not: decide anything about the schedule (which slot, how long, what counts): that is
//! the leader's ([`super::lead`]).

use crate::controller::client::fast_switch::Switched;
use crate::controller::client::heartbeat::{Heartbeat, BEAT};
use crate::controller::client::leadership::{Leadership, LockHolder};
use crate::controller::client::restart::{restart_and_wait, RestartTiming};
use crate::controller::client::server::Controller;
use crate::controller::error::{ControllerError, Result};
use crate::controller::model::phase_row::PhaseRow;
use crate::controller::model::scenario::Scenario;
use crate::controller::model::setup_tables::Mismatch;
use crate::controller::model::snapshot::{RestartIntent, OWN_OPTIONS};

use super::as_found::AsFound;
use super::mode::ServerMode;
use super::settings::ControllerSettings;

/// The server as the leader's slot loop sees it.
pub(crate) trait LeadServer {
    /// Before any change: the lead still holds. [`ControllerError::LostLead`] when another
    /// psprobe is seen leading (this one must change nothing more), and
    /// [`ControllerError::Stalled`] when the server does not say (it stalls, or is cut off).
    async fn ensure_lead(&mut self) -> Result<()>;

    /// Puts the server in `scenario` (`original`: the snapshot), checking the previous
    /// scenario's rows held, with `publish` in the same round trip; rows someone else changed
    /// are kept, saved in the run's record and logged, and returned. `Stalled` when the server
    /// stops answering meanwhile.
    async fn switch(&mut self, scenario: &Scenario, publish: Option<&PhaseRow>)
        -> Result<Switched>;

    /// Whether the rows of the scenario in effect still hold (`None`: nothing switched yet).
    async fn confirm(&mut self) -> Result<Option<bool>>;

    /// Publishes the leader's row (a slow phase's; fast slots publish in their switch).
    async fn publish(&mut self, row: &PhaseRow) -> Result<()>;

    /// Restarts the server through the restart hook into `into` with startup `opts`
    /// (recorded first, so a psprobe killed meanwhile is told apart from a DBA's restart),
    /// connects again and keeps the leader lock; what was learned of the rows before is
    /// forgotten. Returns how long the restart's parts took.
    async fn restart(&mut self, into: &ServerMode, opts: &str) -> Result<RestartTiming>;

    /// Whether the server accepts a new connection now (after a restart of psprobe's that
    /// failed: a server that is down holds no lock anyone could have taken over).
    async fn answers(&mut self) -> bool;

    /// `@@performance_schema` of the server as last connected.
    fn performance_schema(&self) -> Option<bool>;

    /// The rows that differ from what `scenario` sets.
    async fn verify(&mut self, scenario: &Scenario) -> Result<Vec<Mismatch>>;

    /// The consumers of the snapshot taken before the first change (the startup options of a
    /// restart scenario name every one).
    fn consumers(&self) -> Vec<String>;
}

/// The leader's MySQL connections, its beat and the run's record.
pub(crate) struct LiveServer<'a> {
    pub(crate) s: &'a ControllerSettings,
    pub(crate) ctl: &'a mut Controller,
    pub(crate) lead: &'a mut Leadership,
    pub(crate) heartbeat: &'a Heartbeat,
    pub(crate) found: &'a mut AsFound,
}

impl LeadServer for LiveServer<'_> {
    async fn ensure_lead(&mut self) -> Result<()> {
        if self.heartbeat.fresh() {
            return Ok(());
        }
        // Beats have failed for a while: a server that does not answer at once is taken as
        // stalled (the connection is not used again), one that names another leader as lost.
        let mine = [self.lead.connection_id(), self.ctl.connection_id()];
        let asked = tokio::time::timeout(BEAT, self.lead.holder(&mine)).await;
        match asked {
            Ok(Ok(LockHolder::Me)) => Ok(()),
            Ok(Ok(LockHolder::Other { leader })) => Err(lost_to(self.s, leader)),
            Ok(Ok(LockHolder::Nobody)) => Err(stalled(self.s, "the leader lock was released")),
            Ok(Err(e)) => Err(stalled(self.s, &e.to_string())),
            Err(_) => Err(stalled(
                self.s,
                "no beat was written and the server did not answer",
            )),
        }
    }

    async fn switch(
        &mut self,
        scenario: &Scenario,
        publish: Option<&PhaseRow>,
    ) -> Result<Switched> {
        let heartbeat = self.heartbeat;
        let switch = self.found.switcher.switch(self.ctl, scenario, publish);
        let switched = tokio::select! {
            switched = switch => switched?,
            () = heartbeat.lost() => {
                return Err(stalled(self.s, "a switch waited past the fence without a beat"));
            }
        };
        self.found.claimed(&switched.claims, self.lead).await?;
        Ok(switched)
    }

    async fn confirm(&mut self) -> Result<Option<bool>> {
        self.found.switcher.confirm(self.ctl).await
    }

    async fn publish(&mut self, row: &PhaseRow) -> Result<()> {
        self.lead.publish(row).await
    }

    async fn restart(&mut self, into: &ServerMode, opts: &str) -> Result<RestartTiming> {
        let s = self.s;
        let command = s
            .restart_cmd
            .as_deref()
            .ok_or_else(|| ControllerError::NeedsRestart {
                name: "pfsoff".into(),
            })?;
        self.found.restarting(RestartIntent {
            into: into.recorded().unwrap_or_else(|| OWN_OPTIONS.to_string()),
            since_unix: crate::clock::unix_now(),
            timeout_s: s.restart_timeout.as_secs(),
        })?;
        // The server's copy too, for a follower taking over (best effort: a server that does
        // not take it now is about to restart anyway; this host's file is the record).
        let _ = self.lead.save_snapshot(&self.found.snapshot).await;
        // A planned absence: the heartbeat's failures meanwhile are not news.
        self.heartbeat.planned_absence(true);
        let ps = *into != ServerMode::Off;
        let restarted = restart_and_wait(command, ps, opts, s.restart_timeout, &s.dsn).await;
        let (ctl, timing) = match restarted {
            Ok(back) => back,
            Err(e) => {
                // The server may be back in some state (a command that restarted it with the
                // wrong setting) or never have gone (one that failed first): whatever runs
                // next needs working connections, so they are made anew where they can be,
                // and the record says the state is not known (the next start restarts it with
                // its own options before restoring).
                self.reconnect().await;
                self.heartbeat.planned_absence(false);
                let identity = self.ctl.info().identity.clone();
                self.found
                    .restarted(&ServerMode::Unknown, &identity, self.lead)
                    .await
                    .ok();
                return Err(e);
            }
        };
        *self.ctl = ctl;
        *self.lead = Leadership::connect(&s.dsn).await?;
        if !self.lead.try_acquire().await? {
            return Err(ControllerError::Connection {
                target: s.dsn.redacted(),
                action: "keep the leader lock across the restart".into(),
                reason: "another psprobe took it".into(),
            });
        }
        self.heartbeat
            .set_conns(vec![self.lead.connection_id(), self.ctl.connection_id()]);
        self.heartbeat.planned_absence(false);
        // This run restarted the server itself: a later recovery must not take the new start
        // time for someone else's restart.
        let identity = self.ctl.info().identity.clone();
        self.found.restarted(into, &identity, self.lead).await?;
        Ok(timing)
    }

    async fn answers(&mut self) -> bool {
        let connect = Controller::connect(&self.s.dsn);
        matches!(
            tokio::time::timeout(std::time::Duration::from_secs(3), connect).await,
            Ok(Ok(_))
        )
    }

    fn performance_schema(&self) -> Option<bool> {
        self.ctl.info().performance_schema
    }

    async fn verify(&mut self, scenario: &Scenario) -> Result<Vec<Mismatch>> {
        self.ctl.verify(scenario).await
    }

    fn consumers(&self) -> Vec<String> {
        self.found
            .snapshot
            .state
            .consumers
            .iter()
            .map(|c| c.name.clone())
            .collect()
    }
}

impl LiveServer<'_> {
    /// Best effort after a failed restart: new controller and leadership connections, the lock
    /// taken again, the beat told; left as they are when the server does not answer.
    async fn reconnect(&mut self) {
        let s = self.s;
        if let Ok(ctl) = Controller::connect(&s.dsn).await {
            *self.ctl = ctl;
        }
        if let Ok(mut lead) = Leadership::connect(&s.dsn).await {
            if lead.try_acquire().await.unwrap_or(false) {
                *self.lead = lead;
            }
        }
        self.found.switcher.forget();
        self.heartbeat
            .set_conns(vec![self.lead.connection_id(), self.ctl.connection_id()]);
    }
}

/// Another psprobe (`leader`) holds the lock now.
pub(crate) fn lost_to(s: &ControllerSettings, leader: String) -> ControllerError {
    ControllerError::LostLead {
        target: s.dsn.redacted(),
        by: leader,
        stale_after: crate::controller::client::heartbeat::STALE_AFTER,
    }
}

/// The server did not say whether this psprobe still leads.
pub(crate) fn stalled(s: &ControllerSettings, reason: &str) -> ControllerError {
    ControllerError::Stalled {
        target: s.dsn.redacted(),
        waited: crate::controller::client::heartbeat::FENCE_AFTER,
        reason: reason.to_string(),
    }
}
