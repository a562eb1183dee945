//! Searches over a whole-number setting whose steps pass or fail: automatic tuning (the
//! smallest session count that meets the target within every threshold) and find-max (the
//! largest mailbox count that still passes). A [`Search`] is a pure strategy: it proposes the
//! next value, is told how the step went, and says when it is done. Running a step (a short
//! measured test) is the caller's job, so the strategy is tested without any I/O.
//!
//! The strategy, for both directions:
//! - **Ramp.** From the start value, jump towards the boundary: by a factor
//!   ([`SearchSpec::growth`]) or, when tuning goes up after a step that fell short of its target, by the
//!   estimate its achievement gives (a step that reached 40% of its target with 4 sessions
//!   suggests 12 with a 20% margin, since each session carries its share: Little's law at
//!   constant latency), bounded to the growth factor and at least one more than before.
//! - **Bisection** once a pass and a fail bracket the boundary (trying first the estimate a
//!   failed step's shortfall gives, when it falls inside the bracket), until the bracket is within
//!   [`SearchSpec::resolution`] of the answer (vdbench's curve-with-stop and a binary search
//!   are the same idea).
//! - **Bounds.** Values stay in `[min, max]`; reaching `max` without the boundary (or `min` in
//!   the other direction) ends the search with what was found. At most
//!   [`SearchSpec::max_steps`] steps are run.
//! - **Re-check** (find-max, [`Direction::LargestPassing`]): a failing step that would become
//!   the upper bound is run once more before it is trusted, and counts as passed if the second
//!   run passes. One unlucky step (a device still busy after preparation: 59 ms reads in a
//!   first step, 0.2-3.7 ms in every later one) would otherwise cap the answer below what the
//!   storage carries; the confirmation runs guard the answer against a lucky pass, this guards
//!   the bound against an unlucky fail. Only bounds more than [`RECHECK_ABOVE`] (10%) above the
//!   best pass are re-checked: a wrong failure closer than that costs the answer less than
//!   10%. Tuning does not re-check: a failure there only adds sessions.

/// find-max re-checks a failing bound more than this fraction above the best pass: a wrong
/// failure closer than that costs the answer less than 10%, and not re-checking it saves a step.
pub const RECHECK_ABOVE: f64 = 0.10;

/// Which side of the boundary the answer is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Steps pass from some value upwards; the answer is the smallest passing value (tuning:
    /// more sessions carry more load).
    SmallestPassing,
    /// Steps pass up to some value; the answer is the largest passing value (find-max: more
    /// mailboxes are more load).
    LargestPassing,
}

/// How a [`Search`] proceeds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchSpec {
    /// Which side the answer is on.
    pub direction: Direction,
    /// The first value tried (clamped to `[min, max]`).
    pub start: u64,
    /// The least value (at least 1).
    pub min: u64,
    /// The largest value.
    pub max: u64,
    /// Largest factor between one ramp step and the next (above 1).
    pub growth: f64,
    /// The search ends when the bracket around the boundary is at most this fraction of the
    /// answer wide (and never narrower than 1).
    pub resolution: f64,
    /// Most steps (re-checks of a failing bound not counted).
    pub max_steps: usize,
}

/// How one step went, as the search needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepOutcome {
    /// The value the step ran at.
    pub value: u64,
    /// Every check passed.
    pub pass: bool,
    /// Achieved over target (transactional IOPS), when the step had a target: a hint for the
    /// next value while ramping.
    pub achieved_ratio: Option<f64>,
}

/// Why a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchEnd {
    /// A pass and a fail bracket the boundary within the resolution.
    Converged,
    /// Every value tried passed up to the bound in the answer's direction (LargestPassing at
    /// `max`) or every value failed down to it (SmallestPassing: `max` failed too).
    Bound,
    /// The step budget ran out first.
    Steps,
}

/// A search in progress.
#[derive(Debug, Clone)]
pub struct Search {
    spec: SearchSpec,
    /// Largest value that passed (LargestPassing) / smallest that passed (SmallestPassing).
    pass: Option<u64>,
    /// The nearest failing value on the other side.
    fail: Option<u64>,
    next: Option<u64>,
    steps: usize,
    end: Option<SearchEnd>,
    /// The failing value being run again before it becomes the bound (find-max).
    recheck: Option<u64>,
    /// Re-checks run: they do not count against [`SearchSpec::max_steps`].
    rechecks: usize,
}

impl Search {
    /// A search that starts at `spec.start`.
    pub fn new(spec: SearchSpec) -> Search {
        let min = spec.min.max(1);
        let max = spec.max.max(min);
        let spec = SearchSpec {
            min,
            max,
            growth: if spec.growth.is_finite() && spec.growth > 1.0 {
                spec.growth
            } else {
                2.0
            },
            resolution: if spec.resolution.is_finite() && spec.resolution >= 0.0 {
                spec.resolution
            } else {
                0.0
            },
            max_steps: spec.max_steps.max(1),
            ..spec
        };
        Search {
            next: Some(spec.start.clamp(min, max)),
            spec,
            pass: None,
            fail: None,
            steps: 0,
            end: None,
            recheck: None,
            rechecks: 0,
        }
    }

    /// True when the step [`Search::next`] proposes re-runs a failed one (see the module
    /// documentation, "Re-check").
    pub fn is_recheck(&self) -> bool {
        self.recheck.is_some() && self.recheck == self.next
    }

    /// The value to run next, or `None` when the search is over.
    pub fn next(&self) -> Option<u64> {
        self.next
    }

    /// The answer so far: the best passing value.
    pub fn answer(&self) -> Option<u64> {
        self.pass
    }

    /// Why the search ended (`None` while it goes on).
    pub fn end(&self) -> Option<SearchEnd> {
        self.end
    }

    /// Steps recorded.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Records how the step at [`Search::next`] went and chooses the one after it.
    pub fn record(&mut self, o: StepOutcome) {
        if self.is_recheck() {
            self.rechecks += 1;
        }
        self.steps += 1;
        let budget_spent = self.steps.saturating_sub(self.rechecks) >= self.spec.max_steps;
        let smallest = self.spec.direction == Direction::SmallestPassing;
        // The best pass is the smallest (or largest) passing value; the bracket's fail is the
        // nearest failing one on the other side.
        if o.pass {
            let better = match self.pass {
                None => true,
                Some(p) => (smallest && o.value < p) || (!smallest && o.value > p),
            };
            if better {
                self.pass = Some(o.value);
            }
        } else {
            let nearer = match self.fail {
                None => true,
                Some(f) => (smallest && o.value > f) || (!smallest && o.value < f),
            };
            let far = self
                .pass
                .is_none_or(|p| o.value as f64 > p as f64 * (1.0 + RECHECK_ABOVE));
            if nearer && !smallest && far && self.recheck != Some(o.value) {
                // A new upper bound: run it once more before trusting it.
                self.recheck = Some(o.value);
                // The re-check is not a search step: it does not spend the budget, so it can
                // run even after the last step.
                self.next = Some(o.value);
                return;
            }
            if nearer {
                self.fail = Some(o.value);
            }
        }
        self.recheck = None;
        self.next = self.choose(o);
        if self.next.is_some() && budget_spent {
            self.next = None;
            self.end = Some(SearchEnd::Steps);
        }
    }

    fn choose(&mut self, last: StepOutcome) -> Option<u64> {
        let s = self.spec;
        let smallest = s.direction == Direction::SmallestPassing;
        match (self.pass, self.fail) {
            (Some(p), Some(f)) => {
                let (lo, hi) = (p.min(f), p.max(f));
                let width = hi - lo;
                let tolerance = ((p as f64) * s.resolution).floor().max(1.0) as u64;
                if width <= tolerance {
                    self.end = Some(SearchEnd::Converged);
                    return None;
                }
                // A failed step's shortfall estimates the boundary (Little's law); use it when
                // it falls inside the bracket, else halve the bracket.
                let guess = match last.achieved_ratio {
                    Some(r) if smallest && !last.pass && r.is_finite() && r > 0.0 && r < 1.0 => {
                        Some((last.value as f64 / r).ceil() as u64)
                    }
                    _ => None,
                };
                let next = match guess {
                    Some(g) if g > lo && g < hi => g,
                    _ => lo + width / 2,
                };
                // Progress: the next step is strictly inside the bracket, which narrows.
                assert!(
                    next > lo && next < hi,
                    "search: step {next} outside the bracket ({lo}, {hi})"
                );
                Some(next)
            }
            // Ramping towards the boundary: up while too little passes (smallest: sessions
            // failing; largest: mailboxes passing), down otherwise.
            (pass, fail) => {
                let up = if smallest {
                    fail.is_some()
                } else {
                    pass.is_some()
                };
                let v = last.value;
                let bound = if up { s.max } else { s.min };
                if v == bound {
                    self.end = Some(SearchEnd::Bound);
                    return None;
                }
                let factor = match last.achieved_ratio {
                    // A step that fell short says how far off it was: aim a little past it.
                    Some(r) if up && smallest && r.is_finite() && r > 0.0 && r < 1.0 => {
                        (1.2 / r).clamp(1.0, s.growth)
                    }
                    _ if up => s.growth,
                    _ => 1.0 / s.growth,
                };
                let next = (v as f64 * factor).round();
                let next = if up {
                    (next as u64).max(v.saturating_add(1)).min(s.max)
                } else {
                    (next.max(0.0) as u64).min(v.saturating_sub(1)).max(s.min)
                };
                assert!(next != v, "search: the ramp stays at {v}");
                Some(next)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(spec: SearchSpec, pass: impl Fn(u64) -> (bool, Option<f64>)) -> (Search, Vec<u64>) {
        let mut s = Search::new(spec);
        let mut tried = Vec::new();
        while let Some(v) = s.next() {
            tried.push(v);
            let (p, r) = pass(v);
            s.record(StepOutcome {
                value: v,
                pass: p,
                achieved_ratio: r,
            });
        }
        (s, tried)
    }

    fn tuning(start: u64) -> SearchSpec {
        SearchSpec {
            direction: Direction::SmallestPassing,
            start,
            min: 1,
            max: 1024,
            growth: 4.0,
            resolution: 0.0,
            max_steps: 20,
        }
    }

    #[test]
    fn tuning_finds_the_smallest_passing_count_exactly() {
        // Each session carries 100 IOPS; the target is 1,750: 18 sessions are needed.
        for start in [1, 4, 16, 64, 1024] {
            let (s, tried) = run(tuning(start), |n| {
                let ratio = (n as f64 * 100.0 / 1750.0).min(1.3);
                (n >= 18, Some(ratio))
            });
            assert_eq!(s.answer(), Some(18), "start {start}: {tried:?}");
            assert_eq!(s.end(), Some(SearchEnd::Converged), "{tried:?}");
            // Ramping from below uses the shortfall; from far above, factors of 4 then halving.
            let most = if start <= 64 { 7 } else { 10 };
            assert!(tried.len() <= most, "start {start}: {tried:?}");
        }
    }

    #[test]
    fn tuning_without_hints_still_converges() {
        let (s, tried) = run(tuning(2), |n| (n >= 37, None));
        assert_eq!(s.answer(), Some(37), "{tried:?}");
        // Ramp 2, 8, 32, 128 then bisection of (32, 128].
        assert_eq!(&tried[..4], &[2, 8, 32, 128]);
    }

    #[test]
    fn an_unreachable_target_ends_at_the_bound_with_no_answer() {
        let (s, tried) = run(tuning(16), |_| (false, Some(0.1)));
        assert_eq!(s.answer(), None);
        assert_eq!(s.end(), Some(SearchEnd::Bound));
        assert_eq!(tried.last(), Some(&1024));
    }

    #[test]
    fn find_max_brackets_the_capacity_within_the_resolution() {
        let spec = find_max_spec();
        for capacity in [1u64, 700, 1000, 5000, 123_456] {
            let (s, tried) = run(spec, |m| (m <= capacity, None));
            let a = s.answer();
            if capacity < spec.min.max(1) {
                assert_eq!(a, None);
                continue;
            }
            let a = a.expect("an answer");
            assert!(a <= capacity, "{capacity}: {a} {tried:?}");
            assert!(
                a as f64 >= capacity as f64 * 0.98 - 1.0,
                "{capacity}: {a} {tried:?}"
            );
        }
    }

    fn find_max_spec() -> SearchSpec {
        SearchSpec {
            direction: Direction::LargestPassing,
            start: 1000,
            min: 1,
            max: 10_000_000,
            growth: 2.0,
            resolution: 0.02,
            max_steps: 30,
        }
    }

    /// How many times each value was tried, in order of first try.
    fn tries(tried: &[u64]) -> Vec<(u64, usize)> {
        let mut out: Vec<(u64, usize)> = Vec::new();
        for &v in tried {
            match out.iter_mut().find(|(x, _)| *x == v) {
                Some((_, n)) => *n += 1,
                None => out.push((v, 1)),
            }
        }
        out
    }

    #[test]
    fn find_max_re_checks_a_failing_bound_and_goes_on_when_the_re_run_passes() {
        // The storage carries 3,000 mailboxes, but the first step fails by chance (a device
        // still busy after preparation). Without the re-check the answer stayed below 1,000.
        let calls = std::cell::Cell::new(0);
        let (s, tried) = run(find_max_spec(), |m| {
            calls.set(calls.get() + 1);
            (calls.get() > 1 && m <= 3000, None)
        });
        assert_eq!(&tried[..3], &[1000, 1000, 2000], "{tried:?}");
        let a = s.answer().expect("an answer");
        assert!(
            a <= 3000 && a as f64 >= 3000.0 * 0.98 - 1.0,
            "{a}: {tried:?}"
        );
        assert_eq!(s.end(), Some(SearchEnd::Converged));
    }

    #[test]
    fn a_failing_bound_is_trusted_after_one_re_check() {
        for capacity in [700u64, 5000, 123_456] {
            let (s, tried) = run(find_max_spec(), |m| (m <= capacity, None));
            let a = s.answer().expect("an answer");
            assert!(a <= capacity && a as f64 >= capacity as f64 * 0.98 - 1.0);
            // Failing values ran twice, back to back, while more than 10% above the best pass;
            // every other value once.
            let mut best = 0;
            let mut i = 0;
            while i < tried.len() {
                let v = tried[i];
                let rechecked = v > capacity && (best == 0 || v as f64 > best as f64 * 1.1);
                let n = if rechecked { 2 } else { 1 };
                assert_eq!(&tried[i..i + n], &vec![v; n][..], "{v}: {tried:?}");
                if v <= capacity {
                    best = best.max(v);
                }
                i += n;
            }
            for w in tried.windows(3) {
                assert!(!(w[0] == w[1] && w[1] == w[2]), "{tried:?}");
            }
        }
        // The cost: two steps here. From 1,000 to a capacity of 5,000: ramp 1,000, 2,000, 4,000,
        // 8,000 (re-checked: 100% above 4,000), then bisection to within 2%: 6,000 re-checked
        // (50% above), 5,500 not (10%).
        let (_, tried) = run(find_max_spec(), |m| (m <= 5000, None));
        assert_eq!(
            tried,
            [1000, 2000, 4000, 8000, 8000, 6000, 6000, 5000, 5500, 5250, 5125, 5062]
        );
    }

    #[test]
    fn re_checks_do_not_spend_the_step_budget() {
        let spec = SearchSpec {
            max_steps: 5,
            ..find_max_spec()
        };
        // 1,000, 2,000, 4,000 pass; 8,000 fails (re-checked); 6,000 fails (re-checked): five
        // search steps, seven runs.
        let (s, tried) = run(spec, |m| (m <= 5000, None));
        assert_eq!(tried, [1000, 2000, 4000, 8000, 8000, 6000, 6000]);
        assert_eq!(s.end(), Some(SearchEnd::Steps));
        assert_eq!(s.answer(), Some(4000));
    }

    #[test]
    fn tuning_never_re_checks() {
        let (_, tried) = run(tuning(2), |n| (n >= 37, None));
        for (v, n) in tries(&tried) {
            assert_eq!(n, 1, "{v}: {tried:?}");
        }
    }

    #[test]
    fn the_step_budget_ends_the_search_with_the_best_so_far() {
        let spec = SearchSpec {
            max_steps: 3,
            ..tuning(1)
        };
        let (s, tried) = run(spec, |n| (n >= 100, None));
        assert_eq!(tried, vec![1, 4, 16]);
        assert_eq!(s.end(), Some(SearchEnd::Steps));
        assert_eq!(s.answer(), None);
    }

    #[test]
    fn a_first_step_that_passes_makes_tuning_go_down() {
        let (s, tried) = run(tuning(16), |n| (n >= 2, Some(1.3)));
        assert_eq!(s.answer(), Some(2), "{tried:?}");
        assert_eq!(tried[0], 16);
        assert!(tried[1] < 16);
    }
}
