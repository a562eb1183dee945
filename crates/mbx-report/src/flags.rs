//! Why a result is not a complete, passing measurement. `esrp`, `compare`, `import` and `report`
//! flag such a result wherever they use it, so an interrupted run's "1000 IOPS over 0.001 s" is
//! never summed or compared as if it were a real figure.

use serde::Serialize;

/// A measured duration below this many seconds is too short for its rates to mean anything.
pub const MIN_MEANINGFUL_DURATION_S: f64 = 1.0;

/// One reason a result is not a complete, passing measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flag {
    /// Stable identifier: "interrupted", "stopped", "unfinished", "verdict_failed" or
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

/// Flags of an mbxstress `result.json` (as JSON, so that results written by older and newer
/// versions are read alike): `test.interrupted`, a stop reason other than "completed"
/// (`test.stop_reason`, or `stopped.reason` and `stopped.message`; "running": a test that never
/// finished), `verdict.pass` false, and a measured `test.duration_s` under
/// [`MIN_MEANINGFUL_DURATION_S`]. Absent keys raise no flag.
pub fn result_flags(v: &serde_json::Value) -> Vec<Flag> {
    let mut flags = Vec::new();
    let test = &v["test"];
    if test["interrupted"].as_bool() == Some(true) {
        push(
            &mut flags,
            "interrupted",
            "the test was interrupted before the end of its duration: a partial result".into(),
        );
    }
    let reason = test["stop_reason"]
        .as_str()
        .or_else(|| v["stopped"]["reason"].as_str())
        .map(str::trim)
        .filter(|r| !r.is_empty() && !r.eq_ignore_ascii_case("completed"));
    if let Some(reason) = reason {
        let detail = v["stopped"]["message"]
            .as_str()
            .map(str::trim)
            .filter(|m| !m.is_empty() && *m != reason)
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        match reason {
            "interrupted" => push(
                &mut flags,
                "interrupted",
                format!("the test was interrupted before the end of its duration{detail}: a partial result"),
            ),
            "verdict_failed" => {}
            "running" => push(
                &mut flags,
                "unfinished",
                "the test never finished: its result.json still says `running` (written as the test started, it is replaced as the test ends; the process was killed, ran out of memory or lost power): not a measurement".into(),
            ),
            _ => push(
                &mut flags,
                "stopped",
                format!("the test stopped early: {reason}{detail}"),
            ),
        }
    }
    let verdict_failed =
        v["verdict"]["pass"].as_bool() == Some(false) || reason == Some("verdict_failed");
    if verdict_failed {
        let failed: Vec<&str> = v["verdict"]["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["pass"].as_bool() == Some(false))
            .filter_map(|c| c["name"].as_str())
            .collect();
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
    if let Some(d) = test["duration_s"].as_f64() {
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
        result_flags(&v).into_iter().map(|f| f.code).collect()
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
        let f = result_flags(&v);
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
        let f = result_flags(&v);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, "stopped");
        assert!(f[0].message.contains("no space left"), "{}", f[0].message);
        let v = json!({"stopped": {"reason": "io_error", "message": "EIO at offset 4096"}});
        let f = result_flags(&v);
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
        let f = result_flags(&v);
        let c: Vec<_> = f.iter().map(|f| f.code).collect();
        assert_eq!(c, ["unfinished", "verdict_failed", "too_short"]);
        assert!(f[0].message.contains("never finished"), "{}", f[0].message);
    }

    #[test]
    fn jetstress_fail() {
        assert_eq!(report_flags(Some("Fail")).len(), 1);
        assert!(report_flags(Some("Pass")).is_empty());
        assert!(report_flags(None).is_empty());
    }
}
