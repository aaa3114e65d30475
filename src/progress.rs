//! Progress of long work (a demo's or an experiment's schedules) on stderr: an indicatif bar
//! with the time left when stderr is a terminal; otherwise one quiet line per tenth of the
//! expected time (logs, CI, pipes), `demo: [#########---------------------]  30%  27s of ~90s,
//! about 63s left`. While a bar is drawn, log lines are written above it ([`log_writer`]).
//! A leaf: nothing else in the crate.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bar on the terminal now, for log lines to go above it.
static DRAWN: Mutex<Option<ProgressBar>> = Mutex::new(None);

pub(crate) struct Progress {
    who: String,
    expected: Duration,
    started: Instant,
    shown: Shown,
}

enum Shown {
    Bar(ProgressBar),
    /// Tenths of the expected time whose line was printed.
    Lines {
        printed: u32,
    },
}

impl Progress {
    /// Shows work expected to take `expected`, on stderr, its lines prefixed `who:`.
    pub(crate) fn start(who: &str, expected: Duration) -> Self {
        Self::new(who, expected, std::io::stderr().is_terminal())
    }

    fn new(who: &str, expected: Duration, terminal: bool) -> Self {
        let shown = if terminal {
            let bar =
                ProgressBar::with_draw_target(Some(millis(expected)), ProgressDrawTarget::stderr());
            // The template is a constant: it parses.
            if let Ok(style) =
                ProgressStyle::with_template("{prefix}: [{bar:30}] {percent:>3}%  {msg}, ETA {eta}")
            {
                bar.set_style(style.progress_chars("#>-"));
            }
            bar.set_prefix(who.to_string());
            *DRAWN.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar.clone());
            Shown::Bar(bar)
        } else {
            Shown::Lines { printed: 0 }
        };
        Progress {
            who: who.to_string(),
            expected,
            started: Instant::now(),
            shown,
        }
    }

    /// Shows the time elapsed now; call it every second or so.
    pub(crate) fn tick(&mut self) {
        if let Some(line) = self.tick_at(self.started.elapsed()) {
            eprintln!("{line}");
        }
    }

    /// Updates the bar to `elapsed`; without a bar, the line to print when `elapsed` reaches
    /// a new tenth of the expected time (the latest tenth only, once).
    fn tick_at(&mut self, elapsed: Duration) -> Option<String> {
        let said = format!("{}s of ~{}s", elapsed.as_secs(), self.expected.as_secs());
        match &mut self.shown {
            Shown::Bar(bar) => {
                bar.set_position(millis(elapsed).min(millis(self.expected)));
                bar.set_message(said);
                None
            }
            Shown::Lines { printed } => {
                let tenths = millis(elapsed).saturating_mul(10) / millis(self.expected).max(1);
                let tenth = tenths.min(10) as u32;
                if tenth <= *printed {
                    return None;
                }
                *printed = tenth;
                let left = self.expected.saturating_sub(elapsed).as_secs();
                Some(format!(
                    "{}: {}, about {left}s left",
                    self.who,
                    progress_bar(elapsed, self.expected)
                ))
            }
        }
    }

    /// The work is done: the bar goes (the lines stay).
    pub(crate) fn finish(self) {
        if let Shown::Bar(bar) = &self.shown {
            *DRAWN.lock().unwrap_or_else(|e| e.into_inner()) = None;
            bar.finish_and_clear();
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `[#########---------------------]  30%  27s of ~90s`.
pub(crate) fn progress_bar(elapsed: Duration, expected: Duration) -> String {
    const WIDTH: usize = 30;
    let fraction = (elapsed.as_secs_f64() / expected.as_secs_f64().max(1.0)).min(1.0);
    let filled = (fraction * WIDTH as f64).round() as usize;
    format!(
        "[{}{}] {:3.0}%  {}s of ~{}s",
        "#".repeat(filled),
        "-".repeat(WIDTH - filled),
        fraction * 100.0,
        elapsed.as_secs(),
        expected.as_secs()
    )
}

/// Stderr for log lines: while a bar is drawn, each line goes above it (the bar is cleared,
/// the line written, the bar drawn again) instead of through it.
pub(crate) fn log_writer() -> LogWriter {
    LogWriter
}

pub(crate) struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let drawn = DRAWN.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match drawn {
            Some(bar) => bar.suspend(|| std::io::stderr().write_all(buf).map(|()| buf.len())),
            None => std::io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_bar_fills_and_caps() {
        let half = progress_bar(Duration::from_secs(60), Duration::from_secs(120));
        assert!(
            half.starts_with("[###############---------------]"),
            "{half}"
        );
        assert!(half.contains(" 50%"));
        let over = progress_bar(Duration::from_secs(200), Duration::from_secs(120));
        assert!(over.contains("100%") && !over.contains('-'), "{over}");
    }

    /// Off a terminal: one line per tenth, none in between, none past the expected time, and
    /// a tick that skips tenths prints the latest only.
    #[test]
    fn without_a_terminal_one_line_per_tenth() {
        let mut p = Progress::new("demo", Duration::from_secs(100), false);
        let mut lines = Vec::new();
        for s in 0..=130 {
            lines.extend(p.tick_at(Duration::from_secs(s)));
        }
        assert_eq!(lines.len(), 10, "{lines:#?}");
        assert_eq!(
            lines[0],
            "demo: [###---------------------------]  10%  10s of ~100s, about 90s left"
        );
        assert!(
            lines[9].contains("100%  100s of ~100s, about 0s left"),
            "{}",
            lines[9]
        );
        let mut p = Progress::new("x", Duration::from_secs(100), false);
        assert_eq!(p.tick_at(Duration::from_secs(5)), None);
        let jumped = p.tick_at(Duration::from_secs(47)).unwrap();
        assert!(jumped.contains(" 47%"), "{jumped}");
        assert_eq!(p.tick_at(Duration::from_secs(49)), None);
        assert!(p.tick_at(Duration::from_secs(50)).is_some());
    }
}
