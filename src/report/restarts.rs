//! The report's "Restarts" section: what each restart into a slow phase took (stop, start,
//! the restart command, the first query), and when the statement rate was back to steady,
//! which is where the measured windows start.
//!
//! Must not: compute the profile (that is `analysis::restart_profile`).

use crate::analysis::restart_profile::{RestartProfile, TOLERANCE};

use super::doc::{column, Align, Block, Table};

fn seconds(ms: Option<f64>) -> String {
    ms.map_or_else(|| "-".to_string(), |ms| format!("{:.1} s", ms / 1000.0))
}

pub(super) fn section(p: &RestartProfile) -> Vec<Block> {
    let mut t = Table::new(vec![
        column("into scenario", Align::Left),
        column("restarts", Align::Right),
        column("port closed after", Align::Right),
        column("port open again after", Align::Right),
        column("restart command took", Align::Right),
        column("first query after", Align::Right),
    ]);
    for x in &p.parts {
        t.row(vec![
            x.scenario.as_str().into(),
            x.restarts.to_string().into(),
            seconds(x.stop_ms).into(),
            seconds(x.start_ms).into(),
            seconds(Some(x.command_ms)).into(),
            seconds(Some(x.first_query_ms)).into(),
        ]);
    }
    let (lo, hi) = p.settle_used_ms;
    let used = if lo == hi {
        format!("{:.1} s", lo as f64 / 1000.0)
    } else {
        format!("{:.1}-{:.1} s", lo as f64 / 1000.0, hi as f64 / 1000.0)
    };
    let steady = format!(
        "{}; the settle time this supports is {:.1} s. The measured windows started {used} after the first query (chosen from this profile as the run went, unless --restart-settle fixed it).",
        match p.steady_after_ms {
            Some(ms) => format!(
                "Over {} restarts, the statement rate through psprobe is back within {:.0}% of its steady level {:.1} s after the first query",
                p.phases,
                TOLERANCE * 100.0,
                ms as f64 / 1000.0
            ),
            None => format!(
                "Over {} restarts, the statement rate is not back within {:.0}% of its steady level before the phases end: lengthen --slow-phase",
                p.phases,
                TOLERANCE * 100.0
            ),
        },
        p.suggested_settle_ms as f64 / 1000.0
    );
    vec![
        Block::Heading("Restarts".into()),
        Block::para("Every phase of the slow blocks is entered through a restart; psprobe timed each (medians by scenario) by probing the server's port every 20 ms:"),
        Block::Table(t),
        Block::para(steady),
    ]
}
