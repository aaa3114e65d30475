//! The report's "Restarts" section: what each restart into a slow phase took (stop, start,
//! the restart command, the first query), and when the statement rate was back to steady,
//! which is where the measured windows start.
//!
//! Must not: compute the profile (that is `analysis::restart_profile`).

use std::fmt::Write;

use crate::analysis::restart_profile::{RestartProfile, TOLERANCE};

fn seconds(ms: Option<f64>) -> String {
    ms.map_or_else(|| "-".to_string(), |ms| format!("{:.1} s", ms / 1000.0))
}

pub(super) fn markdown(s: &mut String, p: &RestartProfile) {
    let _ = writeln!(
        s,
        "\n## Restarts\n\nEvery phase of the slow blocks is entered through a restart; psprobe timed each (medians by scenario) by probing the server's port every 20 ms:\n\n| into scenario | restarts | port closed after | port open again after | restart command took | first query after |\n| --- | ---: | ---: | ---: | ---: | ---: |"
    );
    for x in &p.parts {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            x.scenario,
            x.restarts,
            seconds(x.stop_ms),
            seconds(x.start_ms),
            seconds(Some(x.command_ms)),
            seconds(Some(x.first_query_ms))
        );
    }
    let (lo, hi) = p.settle_used_ms;
    let used = if lo == hi {
        format!("{:.1} s", lo as f64 / 1000.0)
    } else {
        format!("{:.1}-{:.1} s", lo as f64 / 1000.0, hi as f64 / 1000.0)
    };
    let _ = writeln!(
        s,
        "\n{}; the settle time this supports is {:.1} s. The measured windows started {used} after the first query (chosen from this profile as the run went, unless --restart-settle fixed it).",
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
}
