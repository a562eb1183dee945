//! Deployments taken from vendors' published papers (named in each), as built-in examples for
//! `mbxstress size --example NAME` and as test fixtures. Each names its source.

use crate::{DatabaseLayout, Method, SizingInput};

/// A named example deployment.
#[derive(Debug, Clone)]
pub struct Example {
    /// Name for `--example`.
    pub name: &'static str,
    /// Where the numbers come from.
    pub source: &'static str,
    /// The sizing question.
    pub input: SizingInput,
}

/// Tintri VMstore Exchange 2013 best practices (T), "Example Parameters for Sizing": 16,000
/// mailboxes, 2 GB quota, 150 messages/day of 75 KB, 1 copy, 4 servers of 4 databases, AMD
/// Opteron 6380 (SPECint_rate2006 1120 on 16 cores, 2.5 GHz), sized for 35% peak CPU with the
/// Exchange 2010 / VMware guide.
pub fn tintri() -> Example {
    let mut input = SizingInput::new(Method::Exchange2010Vmware, 16_000, 150.0, 4);
    input.quota_mb = 2048;
    input.layout = DatabaseLayout::PerServer(4);
    input.cpu.specint_rate = Some(1120.0);
    input.cpu.specint_cores = Some(16);
    input.cpu.cores_per_server = Some(4);
    input.cpu.cpu_mhz = Some(2500.0);
    input.cpu.peak_cpu_pct = 35.0;
    Example {
        name: "tintri",
        source: "Tintri VMstore Exchange 2013 best practices, 'Example Parameters for Sizing' (16,000 users)",
        input,
    }
}

/// Dell EqualLogic PS6210E ESRP (D2): 5,000 mailboxes of 2 GB, 150 messages/day (0.1005 IOPS,
/// 0.12 with 20% headroom), 2 servers in one DAG with 2 copies, 6 databases per server.
pub fn dell_esrp() -> Example {
    let mut input = SizingInput::new(Method::Exchange2013, 5_000, 150.0, 2);
    input.copies = 2;
    input.layout = DatabaseLayout::PerServer(6);
    Example {
        name: "dell-esrp",
        source: "Dell EqualLogic PS6210E ESRP 5,000 mailboxes, sections 7 and 8 (Table 3)",
        input,
    }
}

/// Dell EqualLogic PS6110E Exchange 2013 sizing (D1): 5,000 users in 5 replicated databases,
/// `messages` per day (the paper evaluates 100, 200 and 300), no headroom.
pub fn dell_sizing(messages: f64) -> Example {
    let mut input = SizingInput::new(Method::Exchange2013, 5_000, messages, 2);
    input.copies = 2;
    input.layout = DatabaseLayout::PerServer(5);
    input.headroom_pct = 0.0;
    Example {
        name: "dell-sizing",
        source: "Dell EqualLogic PS6110E Exchange 2013 sizing, Tables 2-3 (5,000 users, 5 DBs)",
        input,
    }
}

/// Pure Storage 100,000-mailbox Jetstress test (P): 300 messages/day (0.2 IOPS per user, no
/// headroom), 8 servers of 4 databases; the same run at 80,000 mailboxes.
pub fn pure(mailboxes: u64) -> Example {
    let mut input = SizingInput::new(Method::Exchange2013, mailboxes, 300.0, 8);
    input.layout = DatabaseLayout::PerServer(4);
    input.headroom_pct = 0.0;
    Example {
        name: "pure",
        source: "Pure Storage 100,000 mailbox Jetstress paper, 'IOPS Sizing for Jetstress testing'",
        input,
    }
}

/// Every built-in example, by name.
pub fn all() -> Vec<Example> {
    vec![tintri(), dell_esrp(), dell_sizing(200.0), pure(100_000)]
}

/// Looks an example up by name.
pub fn by_name(name: &str) -> Option<Example> {
    all().into_iter().find(|e| e.name == name)
}
