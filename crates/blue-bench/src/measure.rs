//! Small measuring tools: statistics, process memory and CPU accounting.

use std::fs;
use std::time::Instant;

use nix::sys::resource::{getrusage, UsageWho};

use blue_envtest::procfs::{all, stat_fields};

/// Median of `values` (mean of the middle two for an even count); 0 when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The value of the first `key: value` line of `text` (leading blanks and
/// blanks around the `:` ignored): `/proc` files, kubeconfig, YAML.
pub fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let rest = text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(key))?;
    Some(rest.trim_start().trim_start_matches(':').trim())
}

/// A `key:   123 kB` line (`VmRSS:`, `VmHWM:`) of `pid`'s status, in KiB;
/// 0 once it is gone.
pub fn pid_status_kib(pid: u32, key: &str) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = field(&status, key).and_then(|v| v.split_whitespace().next()?.parse().ok());
    kib.unwrap_or(0)
}

/// Linux reports `/proc` CPU times in USER_HZ ticks, which the kernel ABI
/// fixes at 100 per second for userspace regardless of CONFIG_HZ.
const TICKS_PER_SECOND: f64 = 100.0;

/// utime + stime of `pid` (all its threads), seconds; `None` once it is gone.
pub fn pid_cpu_seconds(pid: u32) -> Option<f64> {
    ticks(pid, 11..=12)
}

/// The sum of `/proc/PID/stat` fields `range` (after the command name), seconds.
fn ticks(pid: u32, range: std::ops::RangeInclusive<usize>) -> Option<f64> {
    let fields = stat_fields(pid)?;
    let ticks: Option<u64> = range.map(|i| fields.get(i)?.parse::<u64>().ok()).sum();
    Some(ticks? as f64 / TICKS_PER_SECOND)
}

/// The live descendants of `root` (children, grandchildren...), e.g. an
/// operator's `kubectl proxy`.
pub fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = all()
        .into_iter()
        .filter_map(|(pid, _)| Some((pid, stat_fields(pid)?.get(1)?.parse().ok()?)))
        .collect();
    let mut found = Vec::new();
    let mut todo = vec![root];
    while let Some(pid) = todo.pop() {
        for (child, parent) in &parents {
            if *parent == pid {
                found.push(*child);
                todo.push(*child);
            }
        }
    }
    found
}

/// CPU seconds of `root` and every descendant: the live ones' own time and
/// the time of children they already reaped (`cutime + cstime`), so a
/// process tree's use is counted whether its kubectl children still run or
/// have exited.
pub fn tree_cpu_seconds(root: u32) -> f64 {
    std::iter::once(root)
        .chain(descendants(root))
        .filter_map(|pid| ticks(pid, 11..=14))
        .sum()
}

/// Busy CPU time of the whole machine (all cores), seconds: every `/proc/stat`
/// counter except idle and iowait.
fn machine_busy_seconds() -> f64 {
    let stat = fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu = stat.lines().next().unwrap_or_default().split_whitespace();
    let ticks = cpu.skip(1).filter_map(|x| x.parse::<u64>().ok()).take(8);
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let busy: u64 = ticks
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, x)| x)
        .sum();
    busy as f64 / TICKS_PER_SECOND
}

/// User and system CPU seconds of `who`; 0 when unreadable.
fn rusage_seconds(who: UsageWho) -> f64 {
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    getrusage(who).map_or(0.0, |u| secs(u.user_time()) + secs(u.system_time()))
}

/// Where CPU time went between two points: this process (harness threads),
/// its reaped children (the measured operators, once stopped:
/// `getrusage(RUSAGE_CHILDREN)` counts children only once waited for) and
/// everything else on the machine.
#[derive(Clone, Copy, Debug)]
pub struct CpuSnapshot {
    at: Instant,
    own: f64,
    children: f64,
    machine: f64,
}

/// The difference of two [`CpuSnapshot`]s, seconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuUse {
    pub wall: f64,
    /// Other processes on the machine (other engineers' builds and tests).
    pub other: f64,
    /// Every process on the machine.
    pub busy: f64,
}

impl CpuSnapshot {
    /// Reads the counters now.
    pub fn take() -> Self {
        Self {
            at: Instant::now(),
            own: rusage_seconds(UsageWho::RUSAGE_SELF),
            children: rusage_seconds(UsageWho::RUSAGE_CHILDREN),
            machine: machine_busy_seconds(),
        }
    }

    /// CPU used since `self`.
    pub fn since(&self) -> CpuUse {
        let now = Self::take();
        let own = now.own - self.own;
        let children = now.children - self.children;
        let machine = now.machine - self.machine;
        CpuUse {
            wall: now.at.duration_since(self.at).as_secs_f64(),
            other: (machine - own - children).max(0.0),
            busy: machine,
        }
    }
}

/// `1234567` -> `1,234,567`.
pub fn thousands(n: f64) -> String {
    let n = n.round() as i128;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::from(if n < 0 { "-" } else { "" });
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Seconds as `850 µs`, `12.3 ms` or `4.56 s`.
pub fn secs(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// Milliseconds, no unit switching (for latency tables).
pub fn ms(s: f64) -> String {
    format!("{:.1} ms", s * 1e3)
}

/// CPU seconds over wall seconds, as a percentage of one core.
pub fn core_pct(cpu: f64, wall: f64) -> String {
    if wall <= 0.0 {
        return "-".into();
    }
    format!("{:.0}%", 100.0 * cpu / wall)
}

#[cfg(test)]
mod tests {
    use super::*;
    use blue_e2e::stats::percentile;

    #[test]
    fn median_and_percentiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 10.0);
        assert_eq!(percentile(&v, 95.0), 19.0);
        assert_eq!(percentile(&v, 100.0), 20.0);
    }

    #[test]
    fn formatting() {
        assert_eq!(thousands(1_234_567.0), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(-1_000.4), "-1,000");
        assert_eq!(secs(0.000_85), "850.0 µs");
        assert_eq!(secs(0.0123), "12.3 ms");
        assert_eq!(secs(4.561), "4.56 s");
    }

    #[test]
    fn own_cpu_and_rss_are_readable() {
        assert!(pid_cpu_seconds(std::process::id()).is_some());
        let own = pid_cpu_seconds(std::process::id()).unwrap();
        assert!(tree_cpu_seconds(std::process::id()) >= own);
        assert!(pid_status_kib(std::process::id(), "VmRSS:") > 0);
        assert_eq!(pid_status_kib(std::process::id(), "NoSuchKey:"), 0);
        assert_eq!(
            field("model name\t: AMD EPYC\n", "model name"),
            Some("AMD EPYC")
        );
        assert_eq!(
            field("  gitVersion: v1.32.4\n", "gitVersion:"),
            Some("v1.32.4")
        );
        let child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let found = descendants(std::process::id()).contains(&child.id());
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        assert!(found);
    }
}
