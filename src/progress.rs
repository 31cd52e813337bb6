//! A progress bar for work longer than a second, on stderr when it is a terminal; invisible
//! otherwise, so piped output and CI logs stay clean.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

const SHOW_AFTER: Duration = Duration::from_secs(1);

pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    tty: bool,
    shown: bool,
}

impl Progress {
    pub fn new(total: u64, what: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} ({eta} left)") {
            bar.set_style(style);
        }
        bar.set_message(what.to_string());
        Progress {
            bar,
            started: Instant::now(),
            tty: std::io::stderr().is_terminal(),
            shown: false,
        }
    }

    pub fn inc(&mut self) {
        self.bar.inc(1);
        self.show_when_slow();
    }

    /// Moves the bar to `pos` of its total.
    pub fn set(&mut self, pos: u64) {
        self.bar.set_position(pos);
        self.show_when_slow();
    }

    fn show_when_slow(&mut self) {
        if self.tty && !self.shown && self.started.elapsed() >= SHOW_AFTER {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
    }

    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
