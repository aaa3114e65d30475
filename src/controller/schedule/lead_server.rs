//! What the leader's slot loop asks of the server, as one trait: keep the lead, switch (apply,
//! verify, publish in one round trip), confirm the rows held, publish a row, restart through
//! the hook, verify a startup scenario. [`LiveServer`] does it over the controller's MySQL
//! connections; the slot loop's tests script it without a server.
//!
//! Must not: decide anything about the schedule (which slot, how long, what counts): that is
//! the leader's ([`super::lead`]).

use crate::controller::client::fast_switch::{Switched, Switcher};
use crate::controller::client::heartbeat::{Heartbeat, BEAT};
use crate::controller::client::leadership::Leadership;
use crate::controller::client::restart::{restart_and_wait, RestartTiming};
use crate::controller::client::server::Controller;
use crate::controller::error::{ControllerError, Result};
use crate::controller::model::phase_row::PhaseRow;
use crate::controller::model::scenario::Scenario;
use crate::controller::model::setup_tables::Mismatch;
use crate::controller::model::snapshot::Snapshot;

use super::runner::lost_lead;
use super::settings::ControllerSettings;

/// The server as the leader's slot loop sees it.
pub(crate) trait LeadServer {
    /// Before any change: the lead still holds (`LostLead` otherwise: a follower may have
    /// taken over, and this psprobe must change nothing more).
    async fn ensure_lead(&mut self) -> Result<()>;

    /// Puts the server in `scenario` (`original`: the snapshot), checking the previous
    /// scenario's rows held, with `publish` in the same round trip. `LostLead` when the lead is
    /// lost meanwhile.
    async fn switch(&mut self, scenario: &Scenario, publish: Option<&PhaseRow>)
        -> Result<Switched>;

    /// Whether the rows of the scenario in effect still hold (`None`: nothing switched yet).
    async fn confirm(&mut self) -> Result<Option<bool>>;

    /// Publishes the leader's row (a slow phase's; fast slots publish in their switch).
    async fn publish(&mut self, row: &PhaseRow) -> Result<()>;

    /// Restarts the server through the restart hook with performance_schema `ps` and startup
    /// `opts`, connects again and keeps the leader lock; what was learned of the rows before is
    /// forgotten. Returns how long the restart's parts took.
    async fn restart(&mut self, ps: bool, opts: &str) -> Result<RestartTiming>;

    /// `@@performance_schema` of the server as last connected.
    fn performance_schema(&self) -> Option<bool>;

    /// The rows that differ from what `scenario` sets.
    async fn verify(&mut self, scenario: &Scenario) -> Result<Vec<Mismatch>>;

    /// The consumers of the snapshot taken before the first change (the startup options of a
    /// restart scenario name every one).
    fn consumers(&self) -> Vec<String>;
}

/// The leader's MySQL connections, its beat and what it knows of the rows.
pub(crate) struct LiveServer<'a> {
    pub(crate) s: &'a ControllerSettings,
    pub(crate) ctl: &'a mut Controller,
    pub(crate) lead: &'a mut Leadership,
    pub(crate) heartbeat: &'a Heartbeat,
    pub(crate) switcher: Switcher,
    pub(crate) snapshot: Snapshot,
}

impl LeadServer for LiveServer<'_> {
    async fn ensure_lead(&mut self) -> Result<()> {
        if self.heartbeat.fresh() {
            return Ok(());
        }
        // Beats have failed for a while: a server that does not answer at once is taken as
        // lost (the connection is not used again).
        let asked = tokio::time::timeout(BEAT, self.lead.holds_lock()).await;
        match asked {
            Ok(Ok(true)) => Ok(()),
            _ => Err(lost_lead(&self.s.dsn)),
        }
    }

    async fn switch(
        &mut self,
        scenario: &Scenario,
        publish: Option<&PhaseRow>,
    ) -> Result<Switched> {
        let publish = publish.map(Leadership::publish_sql);
        let heartbeat = self.heartbeat;
        let switch = self
            .switcher
            .switch(self.ctl, scenario, &self.snapshot, publish.as_deref());
        tokio::select! {
            switched = switch => switched,
            () = heartbeat.lost() => Err(lost_lead(&self.s.dsn)),
        }
    }

    async fn confirm(&mut self) -> Result<Option<bool>> {
        self.switcher.confirm(self.ctl).await
    }

    async fn publish(&mut self, row: &PhaseRow) -> Result<()> {
        self.lead.publish(row).await
    }

    async fn restart(&mut self, ps: bool, opts: &str) -> Result<RestartTiming> {
        let s = self.s;
        let command = s
            .restart_cmd
            .as_deref()
            .ok_or_else(|| ControllerError::NeedsRestart {
                name: "pfsoff".into(),
            })?;
        // A planned absence: the heartbeat's failures meanwhile are not news.
        self.heartbeat.planned_absence(true);
        let restarted = restart_and_wait(command, ps, opts, s.restart_timeout, &s.dsn).await;
        let (ctl, timing) = match restarted {
            Ok(back) => back,
            Err(e) => {
                // The server may be back in some state (a command that restarted it with the
                // wrong setting) or never have gone (one that failed first): whatever runs
                // next needs working connections, so they are made anew where they can be.
                self.reconnect().await;
                self.heartbeat.planned_absence(false);
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
        self.switcher.forget();
        self.heartbeat
            .set_conns(vec![self.lead.connection_id(), self.ctl.connection_id()]);
        self.heartbeat.planned_absence(false);
        // This run restarted the server itself: a later recovery must not take the new start
        // time for someone else's restart.
        self.snapshot.known_start_unix = self.ctl.info().identity.started_at_unix;
        self.snapshot.save(&s.state_file)?;
        self.lead.save_snapshot(&self.snapshot).await?;
        Ok(timing)
    }

    fn performance_schema(&self) -> Option<bool> {
        self.ctl.info().performance_schema
    }

    async fn verify(&mut self, scenario: &Scenario) -> Result<Vec<Mismatch>> {
        self.ctl.verify(scenario).await
    }

    fn consumers(&self) -> Vec<String> {
        self.snapshot
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
        self.switcher.forget();
        self.heartbeat
            .set_conns(vec![self.lead.connection_id(), self.ctl.connection_id()]);
    }
}
