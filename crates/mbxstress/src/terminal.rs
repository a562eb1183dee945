//! The terminal side of the application layer's events: `--progress jsonl` writes each
//! [`Event`] as one line of JSON on stdout; `human` shows them (a status line, phase names,
//! tuning's lines, headers and summaries); `quiet` prints the summaries only. The text is
//! `mbx_app::present`'s; this file decides where and when it goes.

use std::io::{IsTerminal, Write as _};

use mbx_app::event::{Event, EventSink, Line, LogKind, Notice};
use mbx_app::present::{self, capitalize, Shown};

use crate::cli::ProgressMode;

/// Text for stdout as it is (its lines end in newlines); the error of a closed pipe is returned.
fn out(text: &str) -> std::io::Result<()> {
    std::io::stdout().write_all(text.as_bytes())
}

/// Renders a command's events and notices for `--progress MODE`.
pub struct Terminal {
    mode: ProgressMode,
    tty: bool,
    last_line_len: usize,
    last_plain: f64,
    /// The database creation progress bar (human mode only).
    create: Option<crate::progress::CreateProgress>,
    /// The first error writing a line whose loss matters (a result, a summary line).
    failed: Option<std::io::Error>,
}

impl Terminal {
    /// For `mode`.
    pub fn new(mode: ProgressMode) -> Terminal {
        Terminal {
            mode,
            tty: std::io::stderr().is_terminal(),
            last_line_len: 0,
            last_plain: -1.0,
            create: None,
            failed: None,
        }
    }

    /// The first error writing an event that had to reach stdout (a closed pipe).
    pub fn finish(&mut self) -> anyhow::Result<()> {
        match self.failed.take() {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    fn keep(&mut self, written: std::io::Result<()>) {
        if let Err(e) = written {
            self.failed.get_or_insert(e);
        }
    }

    /// One event as a line of JSON on stdout.
    fn jsonl(e: &Event) -> std::io::Result<()> {
        outln!("{}", Line::from(e.clone()).to_json())
    }

    /// The database creation progress bar, for a test about to prepare `databases`.
    fn preparing(&mut self, databases: u32) {
        self.create = Some(crate::progress::CreateProgress::new(
            databases as usize,
            false,
            false,
        ));
    }

    fn finish_preparing(&mut self) {
        if let Some(c) = self.create.take() {
            c.finish();
        }
    }

    fn clear_status(&mut self) {
        if self.tty && self.last_line_len > 0 {
            errp!("\r{:width$}\r", "", width = self.last_line_len);
            self.last_line_len = 0;
        }
    }

    fn progress(&mut self, p: &mbx_engine::Progress) {
        self.status(present::run_progress(p), p.phase_elapsed_s);
    }
}

impl Terminal {
    fn status(&mut self, line: String, elapsed_s: f64) {
        if self.tty {
            let pad = self.last_line_len.saturating_sub(line.len());
            errp!("\r{line}{:pad$}", "");
            self.last_line_len = line.len();
        } else if elapsed_s - self.last_plain >= 15.0 || elapsed_s < self.last_plain {
            errln!("{line}");
            self.last_plain = elapsed_s;
        }
    }

    fn loadgen_progress(&mut self, p: &mbx_app::event::LoadgenProgress) {
        self.status(present::loadgen_progress(p), p.elapsed_s);
    }
}

impl EventSink for Terminal {
    fn event(&mut self, e: &Event) {
        let jsonl = self.mode == ProgressMode::Jsonl;
        let human = self.mode == ProgressMode::Human;
        match e {
            Event::Log { text, kind } => {
                if jsonl {
                    let _ = Self::jsonl(e);
                } else if human && *kind == LogKind::Tuning {
                    self.clear_status();
                    errln!("{text}");
                }
            }
            Event::Phase { phase } => {
                self.finish_preparing();
                self.clear_status();
                self.last_plain = -1.0;
                if human {
                    errln!("{}", capitalize(phase.name()));
                } else if jsonl {
                    let _ = Self::jsonl(e);
                }
            }
            // `fleet run` waits for this line from every host, whatever the mode.
            Event::Ready { .. } => {
                let _ = Self::jsonl(e);
            }
            Event::Progress { progress } => {
                if jsonl {
                    let _ = Self::jsonl(e);
                } else if human {
                    self.progress(progress);
                }
            }
            Event::Doctor { doctor } => {
                if jsonl {
                    let _ = Self::jsonl(e);
                } else if human {
                    errp!("{}", present::doctor_findings(doctor));
                }
            }
            Event::SuiteSkip { test, pass } => {
                let written = if jsonl {
                    Self::jsonl(e)
                } else {
                    outln!(
                        "skipping {test}: it ran to completion earlier ({})",
                        if *pass { "PASS" } else { "FAIL" }
                    )
                };
                self.keep(written);
            }
            Event::LoadgenProgress { progress } => {
                if jsonl {
                    let _ = Self::jsonl(e);
                } else if human {
                    self.loadgen_progress(progress);
                }
            }
            Event::Error { .. } | Event::Result { .. } | Event::FindMax { .. } => {
                if jsonl {
                    let written = Self::jsonl(e);
                    self.keep(written);
                }
            }
            _ => {
                if jsonl {
                    let _ = Self::jsonl(e);
                }
            }
        }
    }

    fn notice(&mut self, n: &Notice<'_>) -> std::io::Result<()> {
        let human = self.mode == ProgressMode::Human;
        let summaries = self.mode != ProgressMode::Jsonl;
        match n {
            Notice::RunStart(s) => {
                if human {
                    self.preparing(s.config.profile.databases);
                    errp!("{}", present::run_start(s));
                }
            }
            Notice::FindMaxStart(s) => {
                if human {
                    self.preparing(s.config.profile.databases);
                    errp!("{}", present::find_max_start(s));
                }
            }
            Notice::Prepare(e) => {
                if let Some(c) = &self.create {
                    c.on_event((*e).clone());
                }
            }
            Notice::EngineDone => {
                self.finish_preparing();
                self.clear_status();
            }
            Notice::Warning(w) => errln!("warning: {w}"),
            Notice::RunEnd {
                kind,
                result,
                path,
                report,
            } => {
                if summaries {
                    match present::run_end(*kind, result, path, *report) {
                        Shown::Stdout(text) => out(&text)?,
                        Shown::Stderr(text) => errp!("{text}"),
                    }
                }
            }
            Notice::LoadgenStart { phase, dir, users } => {
                if human {
                    errp!("{}", present::loadgen_start(phase, dir, *users));
                }
            }
            Notice::LoadgenEnd {
                result,
                path,
                report,
            } => {
                self.clear_status();
                if summaries {
                    out(&present::loadgen_end(result, path, *report))?;
                }
            }
            Notice::TestStopped(message) => errln!("error: the test stopped: {message}"),
            Notice::SuiteTest {
                index,
                of,
                kind,
                dir,
            } => {
                if human {
                    errln!(
                        "\n== Suite test {index} of {of}: {kind} ({})",
                        dir.display()
                    );
                }
            }
            Notice::MovedAside { test, to } => errln!(
                "{test}: an incomplete earlier attempt was moved aside to {}; running it again",
                to.display()
            ),
            Notice::SuiteEnd(summary) => out(&present::suite_end(summary))?,
            Notice::FindMaxEnd {
                find_max,
                json,
                html,
            } => {
                if summaries {
                    out(&present::find_max_end(find_max, json, html))?;
                }
            }
        }
        Ok(())
    }
}
