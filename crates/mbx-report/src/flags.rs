//! Why a result is not a complete, passing measurement. `esrp`, `compare`, `import` and `report`
//! flag such a result wherever they use it, so an interrupted run's "1000 IOPS over 0.001 s" is
//! never summed or compared as if it were a real figure.

use serde::{Deserialize, Serialize};

/// A measured duration below this many seconds is too short for its rates to mean anything.
pub const MIN_MEANINGFUL_DURATION_S: f64 = 1.0;

/// One reason a result is not a complete, passing measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flag {
    /// Stable identifier: "interrupted", "stopped", "unfinished", "verdict_failed", "not_judged"
    /// or
    /// "too_short".
    pub code: &'static str,
    /// What it means, for people.
    pub message: String,
}

fn push(flags: &mut Vec<Flag>, code: &'static str, message: String) {
    if !flags.iter().any(|f| f.code == code) {
        flags.push(Flag { code, message });
    }
}

/// A value of a result.json read leniently: absent, null or of another type than this
/// version writes, it is None (a result of an older or newer version is read alike, never
/// refused for a key this reader does not need).
#[derive(Debug, Clone, PartialEq)]
pub struct Lenient<T>(pub Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Lenient(None)
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Ok(Lenient(serde_json::from_value(v).ok()))
    }
}

impl<T> Lenient<T> {
    /// The value, when it is there and of its type.
    pub fn get(&self) -> Option<&T> {
        self.0.as_ref()
    }
}

/// What is read of any mbxstress result.json (a storage test's or loadgen's, of any version)
/// to flag it and to place it in time: typed, every key optional, unknown keys ignored.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ResultSummary {
    /// `schema`.
    pub schema: Lenient<String>,
    /// `kind` (`loadgen` for a loadgen result).
    pub kind: Lenient<String>,
    /// `test`.
    pub test: Lenient<TestSummary>,
    /// `stopped`.
    pub stopped: Lenient<StoppedSummary>,
    /// `verdict`.
    pub verdict: Lenient<VerdictSummary>,
}

/// `test` of a result.json, leniently.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TestSummary {
    /// `test.interrupted`.
    pub interrupted: Lenient<bool>,
    /// `test.stop_reason` (older results).
    pub stop_reason: Lenient<String>,
    /// `test.duration_s`: the measured duration.
    pub duration_s: Lenient<f64>,
    /// `test.start_unix_s`: a loadgen day's start.
    pub start_unix_s: Lenient<f64>,
    /// `test.collection_start_unix_s`: a storage test's measured window's start.
    pub collection_start_unix_s: Lenient<f64>,
}

/// `stopped` of a result.json, leniently.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct StoppedSummary {
    /// `stopped.reason`.
    pub reason: Lenient<String>,
    /// `stopped.phase`.
    pub phase: Lenient<String>,
    /// `stopped.message`.
    pub message: Lenient<String>,
}

/// `verdict` of a result.json, leniently.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct VerdictSummary {
    /// `verdict.pass`.
    pub pass: Lenient<bool>,
    /// `verdict.checks` (a check that is not an object reads as one without keys).
    pub checks: Lenient<Vec<Lenient<CheckSummary>>>,
}

/// One of `verdict.checks`, leniently.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CheckSummary {
    /// `name`.
    pub name: Lenient<String>,
    /// `state`: pass, fail or not_judged.
    pub state: Lenient<String>,
    /// `pass` (results without `state`).
    pub pass: Lenient<bool>,
    /// `reason`: why a check judged nothing.
    pub reason: Lenient<String>,
}

impl ResultSummary {
    /// The summary of a result.json's text; None when it is not a JSON object.
    pub fn parse(text: &str) -> Option<ResultSummary> {
        serde_json::from_str(text).ok()
    }

    /// `test`, or an empty one.
    pub fn test(&self) -> TestSummary {
        self.test.get().cloned().unwrap_or_default()
    }

    /// `stopped`, or an empty one.
    pub fn stopped(&self) -> StoppedSummary {
        self.stopped.get().cloned().unwrap_or_default()
    }
}

/// Flags of an mbxstress `result.json` (read leniently as a [`ResultSummary`], so that results
/// written by older and newer versions are read alike): `test.interrupted`, a stop reason other
/// than "completed" (`test.stop_reason`, or `stopped.reason`, `stopped.phase` and
/// `stopped.message`; "running": a test that never finished), a verdict that is not a pass
/// (`verdict_failed` for a failed check, `not_judged` for a check that judged nothing:
/// `verdict.checks[].state`, or `pass` in results without it), and a measured `test.duration_s`
/// under [`MIN_MEANINGFUL_DURATION_S`]. Absent keys raise no flag.
pub fn result_flags(v: &ResultSummary) -> Vec<Flag> {
    let mut flags = Vec::new();
    let test = v.test();
    let stopped = v.stopped();
    let reason = test
        .stop_reason
        .get()
        .or_else(|| stopped.reason.get())
        .map(|r| r.trim())
        .filter(|r| !r.is_empty() && !r.eq_ignore_ascii_case("completed"));
    let detail = stopped
        .message
        .get()
        .map(|m| m.trim())
        .filter(|m| !m.is_empty() && Some(*m) != reason)
        .map(|m| format!(" ({m})"))
        .unwrap_or_default();
    let phase = stopped.phase.get().map(String::as_str);
    let interrupted = test.interrupted.get() == Some(&true) || reason == Some("interrupted");
    if interrupted {
        // Ctrl-C during shutdown comes after the measured phase completed: the figures are whole.
        let message = match phase {
            Some("shutdown") => format!(
                "the test was interrupted during shutdown{detail}: its measured phase had completed, so the figures cover the whole duration, but the test did not end on its own"
            ),
            Some(phase) => format!(
                "the test was interrupted in its {phase} phase, before the end of its duration{detail}: a partial result"
            ),
            None => format!(
                "the test was interrupted before the end of its duration{detail}: a partial result"
            ),
        };
        push(&mut flags, "interrupted", message);
    }
    if reason == Some("running") {
        push(
            &mut flags,
            "unfinished",
            "the test never finished: its result.json still says `running` (written as the test started, it is replaced as the test ends; the process was killed, ran out of memory or lost power): not a measurement".into(),
        );
    }
    if let Some(reason) =
        reason.filter(|r| !matches!(*r, "interrupted" | "verdict_failed" | "running"))
    {
        let phase = phase
            .map(|p| format!(" in its {p} phase"))
            .unwrap_or_default();
        push(
            &mut flags,
            "stopped",
            format!("the test stopped early{phase}: {reason}{detail}"),
        );
    }
    let verdict = v.verdict.get().cloned().unwrap_or_default();
    let empty = CheckSummary::default();
    let checks: Vec<&CheckSummary> = verdict
        .checks
        .get()
        .into_iter()
        .flatten()
        .map(|c| c.get().unwrap_or(&empty))
        .collect();
    fn state(c: &CheckSummary) -> &str {
        c.state.get().map_or(
            if c.pass.get() == Some(&false) {
                "fail"
            } else {
                "pass"
            },
            String::as_str,
        )
    }
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| state(c) == "fail")
        .filter_map(|c| c.name.get().map(String::as_str))
        .collect();
    let not_judged: Vec<String> = checks
        .iter()
        .filter(|c| state(c) == "not_judged")
        .filter_map(|c| {
            let name = c.name.get()?;
            Some(match c.reason.get() {
                Some(why) => format!("{name}: {why}"),
                None => name.to_string(),
            })
        })
        .collect();
    let not_passed = verdict.pass.get() == Some(&false) || reason == Some("verdict_failed");
    if not_passed && (!failed.is_empty() || not_judged.is_empty()) {
        push(
            &mut flags,
            "verdict_failed",
            if failed.is_empty() {
                "the test's verdict is Fail".into()
            } else {
                format!("the test's verdict is Fail (failed: {})", failed.join(", "))
            },
        );
    }
    if !not_judged.is_empty() {
        push(
            &mut flags,
            "not_judged",
            format!(
                "the test's verdict is not a pass: {} check(s) judged nothing ({})",
                not_judged.len(),
                not_judged.join("; ")
            ),
        );
    }
    if let Some(d) = test.duration_s.get().copied() {
        if d < MIN_MEANINGFUL_DURATION_S {
            push(
                &mut flags,
                "too_short",
                format!(
                    "only {d:.3} s were measured (less than {MIN_MEANINGFUL_DURATION_S} s): its rates are not meaningful"
                ),
            );
        }
    }
    flags
}

/// Flags of an imported Jetstress report: an "Overall Test Result" of Fail.
pub fn report_flags(overall_result: Option<&str>) -> Vec<Flag> {
    let mut flags = Vec::new();
    if let Some(r) = overall_result {
        if r.trim().to_ascii_lowercase().starts_with("fail") {
            push(
                &mut flags,
                "verdict_failed",
                format!("the report's Overall Test Result is {}", r.trim()),
            );
        }
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codes(v: serde_json::Value) -> Vec<&'static str> {
        flags_of(&v).into_iter().map(|f| f.code).collect()
    }

    fn flags_of(v: &serde_json::Value) -> Vec<Flag> {
        result_flags(&serde_json::from_value(v.clone()).expect("a summary of any object"))
    }

    #[test]
    fn complete_passing_result_has_no_flags() {
        let v = json!({"test": {"interrupted": false, "duration_s": 7200.0, "stop_reason": "completed"},
                       "verdict": {"pass": true, "checks": []}});
        assert!(codes(v).is_empty());
        // Hand-built or older results without these keys raise nothing.
        assert!(codes(json!({"test": {}})).is_empty());
    }

    #[test]
    fn interrupted_short_failed_result() {
        let v = json!({"test": {"interrupted": true, "duration_s": 0.001, "stop_reason": "interrupted"},
                       "verdict": {"pass": false, "checks": [
                           {"name": "completed_duration_s", "pass": false},
                           {"name": "db_read_avg_latency_ms", "pass": true}]}});
        let f = flags_of(&v);
        let c: Vec<_> = f.iter().map(|f| f.code).collect();
        assert_eq!(c, ["interrupted", "verdict_failed", "too_short"]);
        assert!(
            f[1].message.contains("completed_duration_s"),
            "{}",
            f[1].message
        );
        assert!(!f[1].message.contains("db_read_avg"), "{}", f[1].message);
        assert!(f[2].message.contains("0.001 s"), "{}", f[2].message);
    }

    #[test]
    fn stop_reasons_in_either_shape() {
        let v = json!({"test": {"stop_reason": "io_error: no space left on device"}});
        let f = flags_of(&v);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, "stopped");
        assert!(f[0].message.contains("no space left"), "{}", f[0].message);
        let v = json!({"stopped": {"reason": "io_error", "message": "EIO at offset 4096"}});
        let f = flags_of(&v);
        assert_eq!(f[0].code, "stopped");
        assert!(
            f[0].message.contains("io_error (EIO at offset 4096)"),
            "{}",
            f[0].message
        );
        assert_eq!(
            codes(json!({"stopped": {"reason": "verdict_failed"}})),
            ["verdict_failed"]
        );
        assert!(codes(json!({"stopped": {"reason": "completed"}})).is_empty());
    }

    /// Issue 24.7: a result.json that still says `running` is a test that never finished (the
    /// process was killed): flagged as such, never as a measurement nor as an early stop.
    #[test]
    fn a_result_still_running_is_unfinished() {
        let v = json!({"test": {"interrupted": false, "duration_s": 0.0},
                       "stopped": {"reason": "running", "message": "the test has not finished"},
                       "verdict": {"pass": false, "checks": []}});
        let f = flags_of(&v);
        let c: Vec<_> = f.iter().map(|f| f.code).collect();
        assert_eq!(c, ["unfinished", "verdict_failed", "too_short"]);
        assert!(f[0].message.contains("never finished"), "{}", f[0].message);
    }

    /// A check that judged nothing is flagged as such (with its reason), not as a failure; an
    /// interruption during shutdown says the measurement is whole; an error stop names its phase.
    #[test]
    fn not_judged_checks_and_stop_phases() {
        let v = json!({"stopped": {"reason": "verdict_failed", "message": "m"},
                       "verdict": {"pass": false, "checks": [
                           {"name": "db_read_latency_max_ms", "pass": false, "state": "not_judged",
                            "reason": "4 sample(s)"},
                           {"name": "db_read_latency_avg_ms", "pass": true, "state": "pass"}]}});
        let f = flags_of(&v);
        assert_eq!(f.iter().map(|f| f.code).collect::<Vec<_>>(), ["not_judged"]);
        assert!(
            f[0].message.contains("db_read_latency_max_ms: 4 sample(s)"),
            "{}",
            f[0].message
        );
        let v = json!({"test": {"interrupted": true},
                       "stopped": {"reason": "interrupted", "phase": "shutdown", "message": "m"},
                       "verdict": {"pass": true, "checks": [{"name": "x", "pass": true}]}});
        let f = flags_of(&v);
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("whole duration"), "{}", f[0].message);
        assert!(!f[0].message.contains("partial"), "{}", f[0].message);
        let v =
            json!({"stopped": {"reason": "integrity_error", "phase": "attain", "message": "m"}});
        let f = flags_of(&v);
        assert!(
            f[0].message.contains("in its attain phase"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn jetstress_fail() {
        assert_eq!(report_flags(Some("Fail")).len(), 1);
        assert!(report_flags(Some("Pass")).is_empty());
        assert!(report_flags(None).is_empty());
    }
}
