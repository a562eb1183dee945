//! The one typed event stream: what a run (and fleet, find-max, suite, doctor) reports while it
//! works. `--progress jsonl` writes one [`Line`] per line of JSON; `fleet run` reads its hosts'
//! lines back as the same type, so renaming a field breaks compilation, not a live view.
//!
//! The wire format is the contract automation uses (docs/results.md, "The event stream"):
//! an object with an `event` key naming the variant (snake_case) and the variant's fields; lines
//! a coordinator forwards from a host also carry `host`. Fields are added, never renamed or
//! removed; [`STREAM_VERSION`] counts incompatible changes.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The version of the event stream's schema (documented in docs/results.md).
pub const STREAM_VERSION: u32 = 1;

/// One event. Serialized as `{"event": "<name>", ...fields}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A line of test.log.
    Log {
        /// The line, without its timestamp.
        text: String,
        /// What kind of line it is (not on the wire: a terminal shows tuning's and find-max's
        /// own lines while they search; a line read back is [`LogKind::Plain`]).
        #[serde(skip)]
        kind: LogKind,
    },
    /// Once a second while the engine runs.
    Progress {
        /// The figures.
        progress: mbx_engine::Progress,
    },
    /// Database creation's progress (at most once a second).
    Create {
        /// Which database (0-based).
        database: usize,
        /// Bytes written so far to it.
        bytes_done: u64,
    },
    /// A new phase began.
    Phase {
        /// The phase.
        phase: mbx_engine::Phase,
    },
    /// The run is ready for the synchronized start (`--start-gate stdin`): `fleet run` waits for
    /// this from every host before it sends the start time.
    Ready {
        /// The run's process id.
        pid: u32,
    },
    /// One sample interval's figures (the line samples.jsonl gets).
    Sample {
        /// The figures.
        sample: mbx_result::Sample,
    },
    /// An error the test met (one entry of result.json's `errors[]`: class, path, errno,
    /// count, message...), written as the test ends, before its `result`.
    Error {
        /// The entry.
        error: mbx_result::ErrorEntry,
    },
    /// The run ended and its result.json is written.
    Result {
        /// The result.json written.
        path: PathBuf,
        /// True exactly when every check passed.
        pass: bool,
        /// The verdict's state: `pass`, `fail` or `not_judged`.
        verdict: String,
        /// How the test ended.
        stopped: mbx_result::Stopped,
    },
    /// `doctor`'s findings (the report `doctor --json` prints).
    Doctor {
        /// The report (schema `mbxstress.doctor/1`).
        doctor: mbx_result::DoctorReport,
    },
    /// A suite skipped a test already done (resume).
    SuiteSkip {
        /// The test's name.
        test: String,
        /// Whether it passed when it ran.
        pass: bool,
    },
    /// `find-max` found its answer.
    FindMax {
        /// find-max.json.
        path: PathBuf,
        /// The answer, mailboxes (null: no count passed).
        mailboxes: Option<u64>,
        /// The answer's IOPS (null: no count passed).
        iops: Option<f64>,
        /// Why the search ended.
        end: String,
    },
    /// `fleet run`: the synchronized start was sent.
    FleetStart {
        /// When the hosts start measuring, in the coordinator's clock (Unix seconds).
        start_at_unix_s: f64,
    },
    /// `fleet run`: a host's run ended.
    HostEnd {
        /// The host's name.
        host: String,
        /// Its state (`passed`, `failed`, ...).
        state: String,
        /// Why, for a host that did not pass.
        message: Option<String>,
    },
    /// `fleet run` ended and fleet.json is written.
    FleetResult {
        /// fleet.json.
        path: PathBuf,
        /// A host failed or the run was interrupted.
        partial: bool,
        /// The spread of the hosts' measured-phase starts, ms.
        skew_ms: Option<f64>,
    },
    /// `loadgen`: once a second, where the phase is.
    LoadgenProgress {
        /// The figures.
        progress: LoadgenProgress,
    },
    /// `loadgen`: one sample interval's figures (the line samples.jsonl gets).
    LoadgenSample {
        /// The figures.
        sample: mbx_result::LoadgenSample,
    },
    /// Written by `fleet run`'s remote wrapper after the run exits (the shell's `$?`), never
    /// forwarded: it tells a run killed by a signal from a connection that ended.
    RemoteExit {
        /// The exit status (128 + the signal's number for a run killed by a signal).
        status: i64,
    },
}

/// Where a loadgen phase is ([`Event::LoadgenProgress`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LoadgenProgress {
    /// `init`, `baseline`, `day` or `grace`.
    pub phase: String,
    /// Seconds since the phase began.
    pub elapsed_s: f64,
    /// Seconds still to go (estimated for `init`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_s: Option<f64>,
    /// Done so far, in `unit`s.
    pub done: u64,
    /// Of this many.
    pub total: u64,
    /// `messages` (init: messages in the mailboxes), `tasks` (day), `s` (seconds of the day).
    pub unit: String,
    /// Rate over the last second: messages appended (init) or tasks completed (day) per second.
    #[serde(default)]
    pub per_s: f64,
    /// MB (10^6 bytes) appended per second over the last second (init).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mb_per_s: Option<f64>,
    /// Failed: users (init) or tasks (day) so far.
    #[serde(default)]
    pub failed: u64,
    /// Tasks unfinished (queued or running) now (day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<u64>,
    /// Users whose mailbox is filled (init).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_done: Option<u64>,
    /// Users in all (init).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_total: Option<u64>,
}

/// One line of the stream: an event and, for lines a coordinator forwards, the host it came from.
/// (`host_end` names its host in the event itself: on that line `host` is the event's.)
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    /// The host the event came from (`fleet run`'s output only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The event.
    #[serde(flatten)]
    pub event: Event,
}

/// By hand: a derived (flattened) reader would take `host_end`'s own `host` for the line's and
/// then refuse the event for missing it.
impl<'de> Deserialize<'de> for Line {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Line, D::Error> {
        use serde::de::Error;
        use serde_json::Value;
        let mut map = serde_json::Map::<String, Value>::deserialize(d)?;
        let host = if map.get("event").and_then(Value::as_str) == Some("host_end") {
            None
        } else {
            match map.remove("host") {
                None | Some(Value::Null) => None,
                Some(Value::String(h)) => Some(h),
                Some(other) => {
                    return Err(D::Error::custom(format!(
                        "`host` is {other}, not a host's name"
                    )))
                }
            }
        };
        let event = Event::deserialize(Value::Object(map)).map_err(D::Error::custom)?;
        Ok(Line { host, event })
    }
}

impl Line {
    /// The line as JSON (no newline), its keys in alphabetical order at every level: the bytes
    /// `--progress jsonl` has always written (through `serde_json::Value`, whose maps sort).
    pub fn to_json(&self) -> String {
        // An enum of plain data: serialization cannot fail (no maps with non-string keys).
        serde_json::to_value(self)
            .map(|v| v.to_string())
            .unwrap_or_else(|e| format!("{{\"event\":\"error\",\"error\":\"{e}\"}}"))
    }

    /// Reads one line of the stream. Lines that are not events (or events of a newer version
    /// this one does not know) are `Err`, with serde's reason.
    ///
    /// Every string in it is made safe to show (`mbx_config::text::visible`: control characters
    /// escaped visibly), so a host's line (JSON may carry `\u001b`) cannot write escapes to the
    /// coordinator's terminal, fleet.json or its report.
    pub fn parse(line: &str) -> Result<Line, serde_json::Error> {
        fn visible(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::String(s) if !mbx_config::text::is_visible(s) => {
                    *s = mbx_config::text::visible(s, usize::MAX);
                }
                serde_json::Value::Array(a) => a.iter_mut().for_each(visible),
                serde_json::Value::Object(o) => o.values_mut().for_each(visible),
                _ => {}
            }
        }
        let mut v: serde_json::Value = serde_json::from_str(line)?;
        visible(&mut v);
        serde_json::from_value(v)
    }
}

impl From<Event> for Line {
    fn from(event: Event) -> Line {
        Line { host: None, event }
    }
}

/// What kind of test-log line a [`Event::Log`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogKind {
    /// An ordinary line (test.log and the stream only).
    #[default]
    Plain,
    /// One of automatic tuning's or find-max's own lines (the start, a step's outcome, the
    /// end): a terminal shows these while the search runs.
    Tuning,
}

/// What a command says to its user that is not part of the event stream (`--progress jsonl`
/// does not carry these): the terminal's headers, summaries and warnings. Borrowed: a notice
/// shows what the command holds at that moment.
#[derive(Debug)]
pub enum Notice<'a> {
    /// A test is about to start: what it is and where its results go.
    RunStart(&'a RunStart),
    /// Database creation's plan and progress (a terminal's progress bar).
    Prepare(&'a mbx_store::CreateEvent),
    /// The engine returned: a progress bar or status line shown can go.
    EngineDone,
    /// Something that did not stop the command but the user should know (stderr in every
    /// mode).
    Warning(String),
    /// A test ended and its result.json is written: its summary.
    RunEnd {
        /// The test type run.
        kind: mbx_config::TestKind,
        /// The result.
        result: &'a mbx_result::RunResult,
        /// result.json.
        path: &'a std::path::Path,
        /// The HTML report, when one was written.
        report: Option<&'a std::path::Path>,
    },
    /// A loadgen phase begins: its results go to `dir`.
    LoadgenStart {
        /// `init` or `day`.
        phase: &'static str,
        /// The results folder.
        dir: &'a std::path::Path,
        /// Users simulated.
        users: u64,
    },
    /// A loadgen phase ended and its result.json is written: its summary.
    LoadgenEnd {
        /// The result.
        result: &'a mbx_result::LoadgenResult,
        /// result.json.
        path: &'a std::path::Path,
        /// The HTML report, when one was written.
        report: Option<&'a std::path::Path>,
    },
    /// A test stopped on an error (`stopped.reason` io_error, integrity_error, error, or still
    /// running), after its summary: the message.
    TestStopped(&'a str),
    /// A test of the suite begins (1-based `index` of `of`), its results in `dir`.
    SuiteTest {
        /// Which test, from 1.
        index: usize,
        /// How many tests the suite has.
        of: usize,
        /// Its type.
        kind: mbx_config::TestKind,
        /// Its results folder.
        dir: &'a std::path::Path,
    },
    /// An incomplete earlier attempt of a suite's test was moved aside.
    MovedAside {
        /// The test's folder name.
        test: &'a str,
        /// Where the folder went.
        to: &'a std::path::Path,
    },
    /// The suite ended (or stopped early at `stopped_at`): every test's outcome.
    SuiteEnd(&'a crate::suite_plan::SuiteSummary),
    /// find-max is about to start.
    FindMaxStart(&'a FindMaxStart),
    /// find-max ended: the answer and its steps, find-max.json and find-max.html.
    FindMaxEnd {
        /// The search.
        find_max: &'a mbx_result::FindMax,
        /// find-max.json.
        json: &'a std::path::Path,
        /// find-max.html.
        html: &'a std::path::Path,
    },
}

/// What a test is about to do ([`Notice::RunStart`]).
#[derive(Debug, Clone)]
pub struct RunStart {
    /// The test type.
    pub kind: mbx_config::TestKind,
    /// The resolved configuration.
    pub config: mbx_config::RunConfig,
    /// Data pages per database.
    pub data_pages: u64,
    /// The disk subsystem throughput test's sizing: the free space and whether the existing
    /// databases were kept.
    pub sized: Option<(u64, bool)>,
    /// The size came from the existing databases' headers (Backup, Checksum).
    pub from_headers: bool,
    /// Automatic tuning's step length, seconds, when the test tunes its session count first.
    pub tuning_step_s: Option<f64>,
    /// The results folder.
    pub dir: std::path::PathBuf,
}

/// What find-max is about to do ([`Notice::FindMaxStart`]).
#[derive(Debug, Clone)]
pub struct FindMaxStart {
    /// The resolved configuration (the profile the ramp starts from).
    pub config: mbx_config::RunConfig,
    /// Data pages per database.
    pub data_pages: u64,
    /// Most steps.
    pub max_steps: u32,
    /// The resolution, percent.
    pub resolution_pct: f64,
    /// The results folder.
    pub dir: std::path::PathBuf,
}

/// Where a command's events go: the terminal renderer, a JSON-lines writer, a test's recorder.
pub trait EventSink {
    /// One event, in order.
    fn event(&mut self, e: &Event);

    /// One notice, in order with the events (nothing by default). An error writing it (stdout
    /// closed) stops the command.
    fn notice(&mut self, _n: &Notice<'_>) -> std::io::Result<()> {
        Ok(())
    }
}

/// Keeps every event (tests, and replaying a recorded stream).
impl EventSink for Vec<Event> {
    fn event(&mut self, e: &Event) {
        self.push(e.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 34: a host's line whose JSON carries terminal escapes reads back with them shown
    /// (`\x1b`), never as the control characters themselves.
    #[test]
    fn a_hosts_escapes_are_shown_not_obeyed() {
        let line = Line::parse(
            r#"{"event":"log","host":"h\u001b]0;x","text":"\u001b[2J\u001b[32mPASS\r"}"#,
        )
        .expect("a line");
        assert_eq!(line.host.as_deref(), Some("h\\x1b]0;x"));
        assert_eq!(
            line.event,
            Event::Log {
                text: "\\x1b[2J\\x1b[32mPASS\\r".into(),
                kind: LogKind::Plain,
            }
        );
    }

    /// The wire format is today's `--progress jsonl` (docs/results.md): lines written before this
    /// type existed read back as the same events.
    #[test]
    fn the_lines_of_the_documented_stream_read_back() {
        for (line, want) in [
            (
                r#"{"event":"log","text":"hello"}"#,
                Event::Log {
                    text: "hello".into(),
                    kind: LogKind::Plain,
                },
            ),
            (r#"{"event":"ready","pid":42}"#, Event::Ready { pid: 42 }),
            (
                r#"{"event":"phase","phase":"measure"}"#,
                Event::Phase {
                    phase: mbx_engine::Phase::Measure,
                },
            ),
            (
                r#"{"bytes_done":4096,"database":1,"event":"create"}"#,
                Event::Create {
                    database: 1,
                    bytes_done: 4096,
                },
            ),
            (
                r#"{"event":"remote_exit","status":137}"#,
                Event::RemoteExit { status: 137 },
            ),
            // The run writes result.json's `errors[]` entries (objects, not words).
            (
                r#"{"event":"error","error":{"class":"no_space","path":"/d/db1.edb","count":1,"first_at":"2026-01-01T00:00:00Z","message":"no space"}}"#,
                Event::Error {
                    error: mbx_result::ErrorEntry {
                        class: mbx_result::ErrorClass::NoSpace,
                        path: Some("/d/db1.edb".into()),
                        count: 1,
                        first_at: "2026-01-01T00:00:00Z".into(),
                        message: "no space".into(),
                        ..Default::default()
                    },
                },
            ),
        ] {
            let got = Line::parse(line).expect(line);
            assert_eq!(got.event, want, "{line}");
            assert_eq!(got.host, None);
            // The same JSON (to_json writes keys sorted, as the stream always has).
            let json = Line::from(want).to_json();
            let value = |t: &str| serde_json::from_str::<serde_json::Value>(t).expect(t);
            assert_eq!(value(&json), value(line), "{json}");
        }
        let p = Line::parse(r#"{"event":"progress","host":"h1","progress":{"phase":"measure","phase_elapsed_s":3.0,"phase_total_s":10.0,"iops":100.5,"target_iops":100,"db_read_avg_ms":1.5,"log_write_avg_ms":0.5,"cache_fill":1.0}}"#).expect("progress");
        assert_eq!(p.host.as_deref(), Some("h1"));
        let Event::Progress { progress } = p.event else {
            panic!("{p:?}")
        };
        assert_eq!(
            (progress.iops, progress.target_iops, progress.pass_bytes),
            (100.5, 100.0, None)
        );
    }

    /// fleet's own lines read back too: `host_end` carries its host in the event, forwarded
    /// lines theirs beside it.
    #[test]
    fn fleets_own_lines_read_back() {
        for line in [
            Line::from(Event::HostEnd {
                host: "h1".into(),
                state: "failed".into(),
                message: Some("the ssh connection ended".into()),
            }),
            Line::from(Event::FleetStart {
                start_at_unix_s: 1.5e9,
            }),
            Line {
                host: Some("h2".into()),
                event: Event::Ready { pid: 7 },
            },
        ] {
            let json = line.to_json();
            assert_eq!(Line::parse(&json).expect(&json), line, "{json}");
        }
        assert_eq!(
            Line::from(Event::HostEnd {
                host: "h1".into(),
                state: "passed".into(),
                message: None
            })
            .to_json(),
            r#"{"event":"host_end","host":"h1","message":null,"state":"passed"}"#
        );
        assert!(Line::parse(r#"{"event":"ready","pid":1,"host":3}"#).is_err());
    }

    /// A renamed or missing field fails loudly instead of reading as zero.
    #[test]
    fn a_line_with_a_renamed_field_is_refused() {
        let e = Line::parse(r#"{"event":"ready","process":42}"#).expect_err("renamed field");
        assert!(e.to_string().contains("pid"), "{e}");
        assert!(Line::parse(r#"{"event":"no_such_event"}"#).is_err());
    }
}
