//! The machine as an input, like time ([`crate::Clock`]): the host counters a test records
//! (CPU busy, available memory, the process's peak resident memory) come from a [`Machine`]. The
//! real one reads the operating system; a simulated device's ([`crate::sim::SimQueue`]) reads
//! nothing, so a simulated run's result does not depend on the computer that ran it.

/// A source of host counters. `None`: not known.
pub trait Machine: Send + Sync {
    /// Cumulative (busy, total) CPU ticks of the whole system.
    fn cpu_ticks(&self) -> Option<(u64, u64)>;
    /// Memory available for new work, bytes.
    fn available_memory_bytes(&self) -> Option<u64>;
    /// Peak resident memory of this process so far, bytes.
    fn peak_resident_memory_bytes(&self) -> Option<u64>;
}

/// The computer this runs on.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealMachine;

impl Machine for RealMachine {
    fn cpu_ticks(&self) -> Option<(u64, u64)> {
        crate::platform::system_cpu_ticks()
    }

    fn available_memory_bytes(&self) -> Option<u64> {
        crate::platform::available_memory_bytes()
    }

    fn peak_resident_memory_bytes(&self) -> Option<u64> {
        crate::platform::peak_resident_memory_bytes()
    }
}

/// A machine whose counters are unknown: the simulated device's.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoMachine;

impl Machine for NoMachine {
    fn cpu_ticks(&self) -> Option<(u64, u64)> {
        None
    }

    fn available_memory_bytes(&self) -> Option<u64> {
        None
    }

    fn peak_resident_memory_bytes(&self) -> Option<u64> {
        None
    }
}
