//! The simulated device both tuning and find-max tests run their steps on: one database, one
//! clock, one fresh log folder per step.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use mbx_config::RunConfig;
use mbx_engine::result::RunResult;
use mbx_engine::{run_plan, EngineError, InstanceSpec, LogStart, Observer, Plan, RunEvent};
use mbx_io::sim::{LatencyModel, SimClock, SimDevice, SimQueue};

const PAGES: u64 = 8192;

#[allow(dead_code)]
#[derive(Default)]
pub struct Lines(pub Vec<String>);
impl Observer for Lines {
    fn on_event(&mut self, e: RunEvent<'_>) {
        if let RunEvent::Log(l) = e {
            self.0.push(l.to_string());
        }
    }
}

fn database(dev: &SimDevice) -> PathBuf {
    crate::simdb::database(dev, "/sim/db/tune.edb", 7, PAGES, "Instance.1", "/sim/logs").db_path
}

/// Runs steps on one simulated device and clock, each with its own log folder (a fresh log,
/// as after a clean shutdown), the device model fixed.
pub struct Sim {
    dev: SimDevice,
    pub clock: Arc<SimClock>,
    db: PathBuf,
    model: LatencyModel,
    runs: u32,
}

impl Sim {
    pub fn new(model: LatencyModel) -> Sim {
        let dev = SimDevice::new();
        let db = database(&dev);
        Sim {
            dev,
            clock: Arc::new(SimClock::new()),
            db,
            model,
            runs: 0,
        }
    }

    pub fn step(
        &mut self,
        cfg: &RunConfig,
        plan: &Plan,
        obs: &mut dyn Observer,
    ) -> Result<RunResult, EngineError> {
        self.runs += 1;
        let spec = InstanceSpec {
            name: "Instance.1".into(),
            db_path: self.db.clone(),
            log_dir: PathBuf::from(format!("/sim/logs/{}", self.runs)),
            database_id: 7,
            data_pages: PAGES,
            log: LogStart {
                next_generation: 1,
                ..LogStart::default()
            },
        };
        let queue = SimQueue::new(
            self.dev.clone(),
            self.clock.clone(),
            mbx_engine::queue_depth(cfg, 1),
            self.model.clone(),
            u64::from(self.runs),
        );
        run_plan(
            cfg,
            plan,
            vec![spec],
            Box::new(queue),
            obs,
            &AtomicBool::new(false),
        )
    }
}

pub fn config(target: f64) -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.profile.databases = 1;
    cfg.profile.mailboxes = 1000;
    cfg.profile.iops_per_mailbox = target / 1000.0;
    cfg.threads = 0;
    cfg.sample_interval_s = 5.0;
    cfg.tuning.step_s = 10.0;
    cfg.tuning.window_s = 1.0;
    cfg.tuning.max_steps = 10;
    cfg.tuning.start = 2;
    cfg
}

#[allow(dead_code)]
pub fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}
