//! Storage design (disks and RAID per volume) and log replication bandwidth: the Role Requirements
//! Calculator's "Storage Design" and "Log Replication Requirements" steps. Pure arithmetic; each
//! function names its source or says "assumption" and why. `docs/sizing.md` explains them.

use serde::{Serialize, Serializer};

/// Disks of one RAID 5 or RAID 6 group (assumption: the calculator asks for a RAID group size;
/// 12 is a common array default, and parity is counted per group of this many disks).
pub const RAID_GROUP_DISKS: u64 = 12;

/// Active disks covered by one hot spare (assumption fitted to D2: 22 active disks, 2 spares).
pub const DISKS_PER_HOT_SPARE: u64 = 12;

/// Disks per server above which `size` warns (assumption: two 24-bay enclosures).
pub const DISKS_PER_SERVER_GUIDANCE: u64 = 48;

/// Share of a database's IOPS that are reads: 3:2 read:write (the calculator's ratio with DAG
/// copies, also used for the log-write estimate), so 60% reads and 40% writes.
pub const READ_FRACTION: f64 = 0.6;

/// Bytes in the GB of a disk label (decimal) and in the GiB the capacity figures use.
const GB: f64 = 1e9;
const GIB: f64 = 1_073_741_824.0;

/// A class of disk, with default capacity and random IOPS per disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiskClass {
    /// 7,200 rpm NL-SAS / SATA, 3.5" (both Dell papers: 4 TB NL-SAS 7.2K).
    #[default]
    Hdd7200,
    /// 10,000 rpm SAS, 2.5".
    Hdd10k,
    /// 15,000 rpm SAS.
    Hdd15k,
    /// SATA or SAS solid-state drive.
    Ssd,
    /// NVMe solid-state drive.
    Nvme,
}

impl DiskClass {
    /// Every class, as `--help` lists them.
    pub const ALL: [DiskClass; 5] = [
        DiskClass::Hdd7200,
        DiskClass::Hdd10k,
        DiskClass::Hdd15k,
        DiskClass::Ssd,
        DiskClass::Nvme,
    ];

    /// The CLI / input-file name.
    pub fn cli_name(self) -> &'static str {
        match self {
            DiskClass::Hdd7200 => "7.2k",
            DiskClass::Hdd10k => "10k",
            DiskClass::Hdd15k => "15k",
            DiskClass::Ssd => "ssd",
            DiskClass::Nvme => "nvme",
        }
    }

    /// Parses a CLI name.
    pub fn parse(name: &str) -> Option<DiskClass> {
        DiskClass::ALL.into_iter().find(|d| d.cli_name() == name)
    }

    /// A human label.
    pub fn label(self) -> &'static str {
        match self {
            DiskClass::Hdd7200 => "7,200 rpm NL-SAS/SATA",
            DiskClass::Hdd10k => "10,000 rpm SAS",
            DiskClass::Hdd15k => "15,000 rpm SAS",
            DiskClass::Ssd => "SAS/SATA SSD",
            DiskClass::Nvme => "NVMe SSD",
        }
    }

    /// Default capacity of one disk, GB as labelled (decimal).
    pub fn default_capacity_gb(self) -> f64 {
        match self {
            DiskClass::Hdd7200 => 4000.0,
            DiskClass::Hdd10k => 1200.0,
            DiskClass::Hdd15k => 600.0,
            DiskClass::Ssd => 1920.0,
            DiskClass::Nvme => 3840.0,
        }
    }

    /// Default random IOPS of one disk for Exchange's 32 KB database I/O.
    pub fn default_iops(self) -> f64 {
        match self {
            DiskClass::Hdd7200 => 75.0,
            DiskClass::Hdd10k => 125.0,
            DiskClass::Hdd15k => 175.0,
            DiskClass::Ssd => 5000.0,
            DiskClass::Nvme => 20000.0,
        }
    }

    /// Where the defaults come from.
    pub fn source(self) -> &'static str {
        match self {
            DiskClass::Hdd7200 => "capacity: the 4 TB 7.2K NL-SAS drives of both Dell EqualLogic papers; IOPS: 1 / (8.5 ms seek + 4.2 ms half rotation) = 79, rounded down to 75 (assumption, the usual planning figure)",
            DiskClass::Hdd10k => "assumption: 1 / (4 ms seek + 3 ms half rotation) = 143, planned at 125; 1.2 TB a common size",
            DiskClass::Hdd15k => "assumption: 1 / (3.5 ms seek + 2 ms half rotation) = 182, planned at 175; 600 GB as in D1's PS6110XV",
            DiskClass::Ssd => "assumption: 5,000 sustained mixed random IOPS, far below datasheet peaks; 1.92 TB a common size",
            DiskClass::Nvme => "assumption: 20,000 sustained mixed random IOPS, far below datasheet peaks; 3.84 TB a common size",
        }
    }
}

impl Serialize for DiskClass {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.cli_name())
    }
}

/// Protection of a volume's disks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Raid {
    /// RAID 1 / RAID 10 (mirrors): write penalty 2, half the disks usable.
    #[default]
    Raid10,
    /// RAID 5: write penalty 4, one parity disk per group.
    Raid5,
    /// RAID 6: write penalty 6, two parity disks per group.
    Raid6,
    /// No RAID, one disk per volume (Microsoft supports it with 3 or more highly available copies).
    Jbod,
}

impl Raid {
    /// Every level, as `--help` lists them.
    pub const ALL: [Raid; 4] = [Raid::Raid10, Raid::Raid5, Raid::Raid6, Raid::Jbod];

    /// The CLI / input-file name.
    pub fn cli_name(self) -> &'static str {
        match self {
            Raid::Raid10 => "raid10",
            Raid::Raid5 => "raid5",
            Raid::Raid6 => "raid6",
            Raid::Jbod => "jbod",
        }
    }

    /// Parses a CLI name (`raid1` is RAID 10's two-disk case).
    pub fn parse(name: &str) -> Option<Raid> {
        if name == "raid1" {
            return Some(Raid::Raid10);
        }
        Raid::ALL.into_iter().find(|r| r.cli_name() == name)
    }

    /// Disk I/Os per host write: RAID 1/10 2, RAID 5 4, RAID 6 6, JBOD 1 (the standard
    /// read-modify-write penalties the calculator applies).
    pub fn write_penalty(self) -> u32 {
        match self {
            Raid::Raid10 => 2,
            Raid::Raid5 => 4,
            Raid::Raid6 => 6,
            Raid::Jbod => 1,
        }
    }

    /// Disks needed to give `data` disks of usable capacity: mirrors double it, RAID 5/6 add
    /// 1/2 parity disks per group of [`RAID_GROUP_DISKS`]. Never below the level's minimum.
    pub fn disks_for_data(self, data: u64) -> u64 {
        let data = data.max(1);
        match self {
            Raid::Raid10 => 2 * data,
            Raid::Raid5 => data + data.div_ceil(RAID_GROUP_DISKS - 1),
            Raid::Raid6 => (data + 2 * data.div_ceil(RAID_GROUP_DISKS - 2)).max(4),
            Raid::Jbod => data,
        }
    }

    /// Disks that hold data among `disks` (the rest are mirrors or parity).
    pub fn data_disks(self, disks: u64) -> u64 {
        match self {
            Raid::Raid10 => disks / 2,
            Raid::Raid5 => disks.saturating_sub(disks.div_ceil(RAID_GROUP_DISKS)),
            Raid::Raid6 => disks.saturating_sub(2 * disks.div_ceil(RAID_GROUP_DISKS)),
            Raid::Jbod => disks,
        }
    }

    /// Rounds a disk count up to one the level can build (mirrors in pairs; RAID 6 at least 4).
    pub fn round_disks(self, disks: u64) -> u64 {
        let disks = disks.max(1);
        match self {
            Raid::Raid10 => disks.div_ceil(2) * 2,
            Raid::Raid5 => disks.max(3),
            Raid::Raid6 => disks.max(4),
            Raid::Jbod => disks,
        }
    }
}

impl Serialize for Raid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.cli_name())
    }
}

/// Host IOPS that `disks` disks of `disk_iops` serve under RAID `raid` at the 3:2 read:write mix:
/// `disks x disk_iops / (reads + writes x penalty)`.
pub fn host_iops_capability(raid: Raid, disks: u64, disk_iops: f64, read_fraction: f64) -> f64 {
    let cost = read_fraction + (1.0 - read_fraction) * raid.write_penalty() as f64;
    disks as f64 * disk_iops / cost
}

/// Disk I/Os per second behind `host_iops` host I/Os: reads + writes x the write penalty.
pub fn backend_iops(raid: Raid, host_iops: f64, read_fraction: f64) -> f64 {
    host_iops * read_fraction + host_iops * (1.0 - read_fraction) * raid.write_penalty() as f64
}

/// The disks of one kind of volume (databases, or logs) on one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VolumeDisks {
    /// RAID level.
    pub raid: Raid,
    /// Disk I/Os per host write.
    pub write_penalty: u32,
    /// Space the volumes need, GiB.
    pub required_gib: f64,
    /// Host IOPS the volumes need.
    pub required_host_iops: f64,
    /// Share of reads in those IOPS.
    pub read_fraction: f64,
    /// Disk IOPS behind them (reads + writes x penalty).
    pub required_disk_iops: f64,
    /// Disks that give the space.
    pub disks_by_capacity: u64,
    /// Disks that give the IOPS.
    pub disks_by_iops: u64,
    /// The larger of the two.
    pub disks: u64,
    /// "capacity", "iops", or "both" (equal): which requirement set `disks`.
    pub decided_by: &'static str,
    /// Usable space of `disks`, GiB.
    pub usable_gib: f64,
    /// Space used, percent of usable.
    pub capacity_used_pct: f64,
    /// Host IOPS `disks` serve.
    pub host_iops_capability: f64,
    /// Spare IOPS: capability / required - 1, percent (none when nothing is required).
    pub iops_headroom_pct: Option<f64>,
}

/// Sizes the disks of one kind of volume. `required_gib` and `required_host_iops` must be finite
/// and non-negative; `disk_gb` and `disk_iops` positive (checked by input validation).
pub fn volume_disks(
    raid: Raid,
    required_gib: f64,
    required_host_iops: f64,
    read_fraction: f64,
    disk_gb: f64,
    disk_iops: f64,
) -> Option<VolumeDisks> {
    let disk_gib = disk_gb * GB / GIB;
    let data_disks = to_count((required_gib / disk_gib - 1e-9).ceil())?;
    let disks_by_capacity = raid.disks_for_data(data_disks);
    let need = backend_iops(raid, required_host_iops, read_fraction);
    let disks_by_iops = raid.round_disks(to_count((need / disk_iops - 1e-9).ceil())?);
    let (disks, decided_by) = match disks_by_iops.cmp(&disks_by_capacity) {
        std::cmp::Ordering::Greater => (disks_by_iops, "iops"),
        std::cmp::Ordering::Equal => (disks_by_capacity, "both"),
        std::cmp::Ordering::Less => (disks_by_capacity, "capacity"),
    };
    let usable_gib = raid.data_disks(disks) as f64 * disk_gib;
    let capability = host_iops_capability(raid, disks, disk_iops, read_fraction);
    Some(VolumeDisks {
        raid,
        write_penalty: raid.write_penalty(),
        required_gib,
        required_host_iops,
        read_fraction,
        required_disk_iops: need,
        disks_by_capacity,
        disks_by_iops,
        disks,
        decided_by,
        usable_gib,
        capacity_used_pct: if usable_gib > 0.0 {
            required_gib / usable_gib * 100.0
        } else {
            0.0
        },
        host_iops_capability: capability,
        iops_headroom_pct: (required_host_iops > 0.0)
            .then(|| (capability / required_host_iops - 1.0) * 100.0),
    })
}

/// Hot spares for `active` disks: one per started [`DISKS_PER_HOT_SPARE`] (D2: 22 -> 2).
pub fn hot_spares(active: u64) -> u64 {
    active.div_ceil(DISKS_PER_HOT_SPARE)
}

fn to_count(v: f64) -> Option<u64> {
    (v.is_finite() && (0.0..9.0e15).contains(&v)).then_some(v.max(0.0) as u64)
}

/// Mbit/s (decimal) that `mib` MiB per hour take on the wire (no compression, no protocol
/// overhead: an assumption stated in docs/sizing.md).
pub fn mbit_per_s_from_mib_per_hour(mib: f64) -> f64 {
    mib * 1_048_576.0 * 8.0 / 3600.0 / 1e6
}

/// Copies of a database held in each of `sites` datacenters when `copies` are spread evenly,
/// the active copy's site first (it gets the remainder): 4 copies over 2 sites -> [2, 2];
/// 3 over 2 -> [2, 1].
pub fn copies_per_site(copies: u32, sites: u32) -> Vec<u32> {
    let sites = sites.max(1);
    (0..sites)
        .map(|s| copies / sites + u32::from(s < copies % sites))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_penalties() {
        assert_eq!(Raid::Raid10.write_penalty(), 2);
        assert_eq!(Raid::Raid5.write_penalty(), 4);
        assert_eq!(Raid::Raid6.write_penalty(), 6);
        assert_eq!(Raid::Jbod.write_penalty(), 1);
        assert_eq!(Raid::parse("raid1"), Some(Raid::Raid10));
        for r in Raid::ALL {
            assert_eq!(Raid::parse(r.cli_name()), Some(r));
        }
        for d in DiskClass::ALL {
            assert_eq!(DiskClass::parse(d.cli_name()), Some(d));
        }
    }

    #[test]
    fn raid_geometry() {
        assert_eq!(Raid::Raid10.disks_for_data(11), 22);
        assert_eq!(Raid::Raid10.data_disks(22), 11);
        // RAID 5 groups of 12: 11 data + 1 parity.
        assert_eq!(Raid::Raid5.disks_for_data(11), 12);
        assert_eq!(Raid::Raid5.disks_for_data(12), 14);
        assert_eq!(Raid::Raid5.data_disks(12), 11);
        // RAID 6 groups of 12: 10 data + 2 parity; 24 disks in two groups hold 20.
        assert_eq!(Raid::Raid6.disks_for_data(20), 24);
        assert_eq!(Raid::Raid6.data_disks(24), 20);
        assert_eq!(Raid::Raid6.disks_for_data(1), 4);
        assert_eq!(Raid::Jbod.disks_for_data(7), 7);
        assert_eq!(Raid::Raid10.round_disks(11), 12);
        // Rounding never loses data disks.
        for raid in Raid::ALL {
            for data in 1..200 {
                assert!(
                    raid.data_disks(raid.disks_for_data(data)) >= data,
                    "{raid:?} {data}"
                );
            }
        }
    }

    /// D2 (Dell PS6210E ESRP): 24 drives of 3,717.12 GB, 22 active + 2 hot spares, RAID 10.
    /// Raw 81,776.64 GB; mirrored usable 40,888 GB (the paper's 40,407 GB formatted is after the
    /// array's own metadata).
    #[test]
    fn dell_esrp_array() {
        assert_eq!(hot_spares(22), 2);
        assert_eq!(22 + hot_spares(22), 24);
        let raw: f64 = 22.0 * 3717.12;
        assert!((raw - 81_776.64).abs() < 1e-6);
        let usable = Raid::Raid10.data_disks(22) as f64 * 3717.12;
        assert!((usable - 40_888.32).abs() < 1e-6);
        assert!(usable >= 40_407.0 && usable / 40_407.0 < 1.02);
        // 22 x 75 IOPS under RAID 10 at 3:2 serve 1,650 / 1.4 = 1,179 host IOPS: the paper
        // measured 1,057 database + 76 log I/Os per second (1,133) against a 600 IOPS target.
        let cap = host_iops_capability(Raid::Raid10, 22, 75.0, READ_FRACTION);
        assert!((cap - 1650.0 / 1.4).abs() < 1e-9);
        assert!(cap > 1056.71 + 75.52 && cap < 1.1 * (1056.71 + 75.52));
    }

    /// D1 (Dell PS6110E sizing): 24 x 4 TB NL-SAS 7.2K in RAID 6 (96 TB raw). In groups of 12,
    /// 20 disks hold data. The 200-message test (5,000 users x 0.134 = 670 IOPS) needs 670 x
    /// (0.6 + 0.4 x 6) = 2,010 disk IOPS, 27 disks at 75: the array passed with 24 because its
    /// write cache absorbs RAID 6 writes; the disk model is deliberately conservative.
    #[test]
    fn dell_sizing_array() {
        assert_eq!(24.0 * 4.0, 96.0);
        assert_eq!(Raid::Raid6.data_disks(24), 20);
        let need = backend_iops(Raid::Raid6, 5000.0 * 0.134, READ_FRACTION);
        assert!((need - 2010.0).abs() < 1e-9);
        let v = volume_disks(
            Raid::Raid6,
            5.0 * 2048.0,
            670.0,
            READ_FRACTION,
            4000.0,
            75.0,
        )
        .expect("sizes");
        assert_eq!(v.disks_by_iops, 27);
        assert_eq!(v.decided_by, "iops");
    }

    #[test]
    fn volume_disks_pick_the_larger() {
        // 10 TiB on 4 TB disks (3,725 GiB each): 3 data disks -> 6 in RAID 10; 600 IOPS ->
        // 600 x 1.4 = 840 disk IOPS -> 12 disks. IOPS wins.
        let v = volume_disks(Raid::Raid10, 10_240.0, 600.0, READ_FRACTION, 4000.0, 75.0)
            .expect("sizes");
        assert_eq!(v.disks_by_capacity, 6);
        assert_eq!(v.disks_by_iops, 12);
        assert_eq!((v.disks, v.decided_by), (12, "iops"));
        let headroom = v.iops_headroom_pct.expect("iops required");
        assert!((headroom - (12.0 * 75.0 / 1.4 / 600.0 - 1.0) * 100.0).abs() < 1e-9);
        // A big quota: capacity wins.
        let v = volume_disks(Raid::Raid10, 100_000.0, 600.0, READ_FRACTION, 4000.0, 75.0)
            .expect("sizes");
        assert_eq!(v.decided_by, "capacity");
        assert_eq!(v.disks, 2 * 27);
        assert!(v.capacity_used_pct <= 100.0);
    }

    #[test]
    fn bandwidth_and_sites() {
        // 3,600 MiB in an hour is 1 MiB/s = 8.388608 Mbit/s.
        assert!((mbit_per_s_from_mib_per_hour(3600.0) - 8.388_608).abs() < 1e-9);
        assert_eq!(copies_per_site(4, 2), vec![2, 2]);
        assert_eq!(copies_per_site(3, 2), vec![2, 1]);
        assert_eq!(copies_per_site(2, 1), vec![2]);
        assert_eq!(copies_per_site(2, 2), vec![1, 1]);
    }
}
