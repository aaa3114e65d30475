//! The live page of the metrics port (`/`) and its JSON report (`/report.json`): the run so
//! far, rendered on request from the last published [`Snapshot`] with the report's own HTML
//! and JSON (the same charts as `psprobe report`), so its numbers are the admin's `overhead`
//! table's. A small inline script (refresh.js) refreshes it when a segment finishes; nothing
//! is fetched from elsewhere. Each rendering is kept until the next segment.
//!
//! Must not: render on the relay's runtime workers (the endpoint calls it on its blocking pool).

use std::sync::{Arc, Mutex};

use super::{LiveResults, Snapshot};
use crate::metrics::http::{NoReport, Page, Pages};
use crate::report::svg::escape;
use crate::report::{build, html_page, render, Format};

const REFRESH: &str = include_str!("refresh.js");

/// A rendering, and the snapshot it was made from.
type Kept = Mutex<Option<(u64, Arc<Made>)>>;

/// A rendering and the entity tag of its snapshot.
struct Made {
    etag: String,
    body: Result<String, String>,
}

pub(crate) struct LivePage {
    results: Arc<LiveResults>,
    /// A schedule runs in this psprobe (else the page says how to start one).
    scheduled: bool,
    /// Tells this process's pages from an earlier psprobe's on the same port.
    started_s: u64,
    html: Kept,
    json: Kept,
}

impl LivePage {
    pub(crate) fn new(results: Arc<LiveResults>, scheduled: bool) -> Self {
        LivePage {
            results,
            scheduled,
            started_s: crate::clock::unix_now(),
            html: Mutex::default(),
            json: Mutex::default(),
        }
    }

    fn etag_of(&self, s: &Snapshot) -> String {
        format!("W/\"{:x}-{}\"", self.started_s, s.generation)
    }

    /// `make`'s rendering of the last snapshot, made once per snapshot.
    fn kept(
        &self,
        kept: &Kept,
        make: impl FnOnce(&Snapshot) -> Result<String, String>,
    ) -> Arc<Made> {
        let snapshot = self.results.snapshot();
        if let Some((generation, made)) = &*kept.lock().unwrap_or_else(|e| e.into_inner()) {
            if *generation == snapshot.generation {
                return Arc::clone(made);
            }
        }
        let made = Arc::new(Made {
            etag: self.etag_of(&snapshot),
            body: make(&snapshot),
        });
        *kept.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((snapshot.generation, Arc::clone(&made)));
        made
    }

    fn page(&self, s: &Snapshot) -> String {
        let etag = escape(&self.etag_of(s));
        let when = if s.at_s > 0 {
            format!(", the last at {}", crate::timestamp::rfc3339(s.at_s))
        } else {
            String::new()
        };
        let segments = match s.generation {
            _ if !self.scheduled => "no schedule".to_string(),
            1 => "1 segment".to_string(),
            n => format!("{n} segments"),
        };
        let said = if self.scheduled {
            format!("Live: the run so far, {segments}{when}; the page follows as segments finish.")
        } else {
            "Live: no schedule runs in this psprobe.".to_string()
        };
        let status = format!(
            "<p id=\"live-status\" data-etag=\"{etag}\" style=\"margin:0 0 1em;padding:6px 10px;background:#eef4fb;border:1px solid #c8d8ea;font-size:13px\">\
             {said} <a href=\"/report.json\">JSON report</a> · <a href=\"/metrics\">metrics</a></p>"
        );
        let head = format!(
            "<title>psprobe live: {segments}</title><link rel=\"icon\" href=\"data:,\"><script>{REFRESH}</script>"
        );
        match &s.analysis {
            Ok(analysis) => {
                let report = build(analysis.as_ref().clone(), &s.phases);
                html_page(&report, &head, &status)
            }
            Err(why) => {
                let said = if self.scheduled {
                    format!(
                        "No estimate yet: {}. Estimates appear once every scenario has been measured next to the baseline.",
                        escape(why)
                    )
                } else {
                    "No schedule runs in this psprobe: start it with --scenarios (or --attribute) and this page follows the run. /metrics has the live counters.".to_string()
                };
                format!(
                    "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">{head}\
                     <style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1240px;color:#222}}</style></head>\
                     <body>{status}<h1>performance_schema overhead</h1><p id=\"live-waiting\">{said}</p></body></html>\n"
                )
            }
        }
    }
}

impl Pages for LivePage {
    fn etag(&self) -> String {
        self.etag_of(&self.results.snapshot())
    }

    fn html(&self) -> Page {
        let made = self.kept(&self.html, |s| Ok(self.page(s)));
        let (Ok(body) | Err(body)) = made.body.clone();
        Page {
            etag: made.etag.clone(),
            body,
        }
    }

    fn json(&self) -> Result<Page, NoReport> {
        if !self.scheduled {
            return Err(NoReport::Here(
                "no schedule runs in this psprobe (--scenarios or --attribute)".into(),
            ));
        }
        let made = self.kept(&self.json, |s| {
            let analysis = s
                .analysis
                .as_ref()
                .map_err(|why| format!("no estimate yet: {why}"))?;
            let report = build(analysis.as_ref().clone(), &s.phases);
            render(&report, Format::Json).map_err(|e| format!("cannot render the report: {e}"))
        });
        Ok(Page {
            etag: made.etag.clone(),
            body: made.body.clone().map_err(NoReport::Yet)?,
        })
    }
}
