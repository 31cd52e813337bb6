//! A progress bar for work longer than a second, on stderr when it is a terminal; invisible
//! otherwise, so piped output and CI logs stay clean.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

const SHOW_AFTER: Duration = Duration::from_secs(1);

pub struct Progress {
    total: u64,
    what: String,
    pos: u64,
    /// Made when it is first shown: piped, or done within a second, no bar is ever built.
    bar: Option<ProgressBar>,
    started: Instant,
    tty: bool,
}

impl Progress {
    pub fn new(total: u64, what: &str) -> Progress {
        Progress {
            total,
            what: what.to_string(),
            pos: 0,
            bar: None,
            started: Instant::now(),
            tty: std::io::stderr().is_terminal(),
        }
    }

    pub fn inc(&mut self) {
        self.set(self.pos.saturating_add(1));
    }

    /// Moves the bar to `pos` of its total.
    pub fn set(&mut self, pos: u64) {
        self.pos = pos;
        match &self.bar {
            Some(bar) => bar.set_position(pos),
            None => self.show_when_slow(),
        }
    }

    fn show_when_slow(&mut self) {
        if self.tty && self.started.elapsed() >= SHOW_AFTER {
            let bar = ProgressBar::with_draw_target(Some(self.total), ProgressDrawTarget::stderr())
                .with_elapsed(self.started.elapsed())
                .with_position(self.pos);
            if let Ok(style) =
                ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} ({eta} left)")
            {
                bar.set_style(style);
            }
            bar.set_message(self.what.clone());
            self.bar = Some(bar);
        }
    }

    /// Adds `more` steps to the total (work found to be needed on the way).
    pub fn extend(&mut self, more: u64) {
        self.total = self.total.saturating_add(more);
        if let Some(bar) = &self.bar {
            bar.set_length(self.total);
        }
    }

    /// Prints `line` on stderr above the bar (or plainly when there is none).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
