//! The terminal side of the application layer's events: `--progress jsonl` writes each
//! [`Event`] as one line of JSON on stdout; `human` renders them (a status line, phase names,
//! tuning's lines, headers and summaries); `quiet` prints the summaries only.

use std::io::IsTerminal;

use mbx_app::event::{Event, EventSink, Line, LogKind, Notice};

use crate::cli::ProgressMode;
use crate::render::num;
use crate::summary::{capitalize, fmt_secs};

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
        let timing = match p.phase_total_s {
            Some(total) => format!(
                "{} / {} (ETA {})",
                fmt_secs(p.phase_elapsed_s),
                fmt_secs(total),
                fmt_secs((total - p.phase_elapsed_s).max(0.0))
            ),
            None => fmt_secs(p.phase_elapsed_s),
        };
        let line = match (p.pass_bytes, p.log_files) {
            (None, Some(f)) => format!(
                "[{}] {timing} | {} of {} log files generated per database ({:.0}%) | IOPS {}",
                p.phase.name(),
                f.done,
                f.planned,
                if f.planned > 0 {
                    (f.done as f64 * 100.0 / f.planned as f64).min(100.0)
                } else {
                    100.0
                },
                num(p.iops, 0)
            ),
            (pass, _) => match pass {
            Some(b) => format!(
                "[{}] {timing} | {} of {} MB ({:.0}%)",
                p.phase.name(),
                num(b.done as f64 / 1e6, 1),
                num(b.planned as f64 / 1e6, 1),
                if b.planned > 0 {
                    b.done as f64 * 100.0 / b.planned as f64
                } else {
                    100.0
                }
            ),
            None => format!(
                "[{}] {timing} | IOPS {} (target {}) | DB read {:.2} ms | log write {:.2} ms | cache {:.0}%",
                p.phase.name(),
                num(p.iops, 0),
                num(p.target_iops, 0),
                p.db_read_avg_ms,
                p.log_write_avg_ms,
                p.cache_fill * 100.0
            ),
            },
        };
        if self.tty {
            let pad = self.last_line_len.saturating_sub(line.len());
            errp!("\r{line}{:pad$}", "");
            self.last_line_len = line.len();
        } else if p.phase_elapsed_s - self.last_plain >= 15.0 || p.phase_elapsed_s < self.last_plain
        {
            errln!("{line}");
            self.last_plain = p.phase_elapsed_s;
        }
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
        let eta = p
            .eta_s
            .map(|s| format!(" (ETA {})", fmt_secs(s)))
            .unwrap_or_default();
        let pct = if p.total > 0 {
            p.done as f64 * 100.0 / p.total as f64
        } else {
            100.0
        };
        let mut line = format!(
            "[{}] {}{eta} | {} of {} {} ({pct:.0}%)",
            p.phase,
            fmt_secs(p.elapsed_s),
            num(p.done as f64, 0),
            num(p.total as f64, 0),
            p.unit
        );
        if let Some(mb) = p.mb_per_s {
            line.push_str(&format!(
                " | {} msg/s, {} MB/s",
                num(p.per_s, 0),
                num(mb, 1)
            ));
        } else if p.unit == "tasks" {
            line.push_str(&format!(" | {} tasks/s", num(p.per_s, 1)));
        }
        if let Some(u) = p.unfinished {
            line.push_str(&format!(" | {} unfinished", num(u as f64, 0)));
        }
        if let (Some(d), Some(t)) = (p.users_done, p.users_total) {
            line.push_str(&format!(" | users {d}/{t}"));
        }
        if p.failed > 0 {
            line.push_str(&format!(" | {} failed", num(p.failed as f64, 0)));
        }
        self.status(line, p.elapsed_s);
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
                    crate::findings::announce(doctor);
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
                    self.create = Some(crate::progress::CreateProgress::new(
                        s.config.profile.databases as usize,
                        false,
                        false,
                    ));
                    crate::summary::print_start(s);
                }
            }
            Notice::FindMaxStart(s) => {
                if human {
                    self.create = Some(crate::progress::CreateProgress::new(
                        s.config.profile.databases as usize,
                        false,
                        false,
                    ));
                    crate::summary::print_find_max_start(s);
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
                    crate::summary::print_end(*kind, result, path, *report)?;
                }
            }
            Notice::LoadgenStart { phase, dir, users } => {
                if human {
                    if *phase == "submit" {
                        errln!(
                            "loadgen submit: {users} connections; results in {}",
                            dir.display()
                        );
                    } else {
                        errln!(
                            "loadgen {}: {users} users; results in {}",
                            if *phase == "init" { "init" } else { "run" },
                            dir.display()
                        );
                    }
                }
            }
            Notice::LoadgenEnd {
                result,
                path,
                report,
            } => {
                self.clear_status();
                if summaries {
                    crate::summary::print_loadgen_end(result, path, *report)?;
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
            Notice::SuiteEnd(summary) => crate::summary::print_suite_summary(summary)?,
            Notice::FindMaxEnd {
                find_max,
                json,
                html,
            } => {
                if summaries {
                    crate::summary::print_find_max_end(find_max, json, html)?;
                }
            }
        }
        Ok(())
    }
}
