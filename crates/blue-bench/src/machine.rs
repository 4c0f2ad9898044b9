//! What the numbers were measured on: machine, build, commit and load.

use std::fs;
use std::process::Command;

use crate::measure::field;
use crate::report::{markdown_table, Block};

/// Facts about the machine and the build, read once at the start.
#[derive(Debug)]
pub struct Machine {
    pub cores: usize,
    pub cpu_model: String,
    pub kernel: String,
    pub memory: String,
    pub date: String,
    pub commit: String,
    pub rustc: String,
    pub kubectl: String,
    pub load_start: String,
}

fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The 1/5/15-minute load averages.
pub fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "?".into())
}

impl Machine {
    pub fn gather() -> Self {
        let read = |path| fs::read_to_string(path).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = field(&cpuinfo, "model name").unwrap_or("unknown").into();
        let meminfo = read("/proc/meminfo");
        let kib = field(&meminfo, "MemTotal:").and_then(|v| v.split(' ').next()?.parse().ok());
        let memory = kib.map_or("?".into(), |kib: f64| {
            format!("{:.1} GiB", kib / 1024.0 / 1024.0)
        });
        // Uncommitted changes to tracked files (also other engineers' work in
        // progress) are compiled into the bench, so name them.
        let dirty: Vec<String> = command_line("git", &["diff", "--name-only", "HEAD"])
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        let commit = command_line("git", &["rev-parse", "--short", "HEAD"])
            .map(|c| match dirty.len() {
                0 => c,
                n if n <= 8 => format!("{c} plus uncommitted changes to {}", dirty.join(", ")),
                n => format!("{c} plus uncommitted changes to {n} files"),
            })
            .unwrap_or_else(|| "unknown".into());
        Self {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model,
            kernel: fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "?".into()),
            memory,
            date: command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_default(),
            commit,
            rustc: command_line("rustc", &["--version"]).unwrap_or_else(|| "?".into()),
            kubectl: command_line(
                &std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into()),
                &["version", "--client", "-o", "yaml"],
            )
            .and_then(|yaml| Some(field(&yaml, "gitVersion:")?.to_string()))
            .unwrap_or_else(|| "?".into()),
            load_start: loadavg(),
        }
    }
}

impl Machine {
    /// The `machine` block: what ran, on what, under which load.
    pub fn block(&self, command: &str, seconds: f64, other: String) -> Block {
        let mut rows: Vec<Vec<String>> = vec![
            vec!["command".into(), format!("`{command}`")],
            vec!["date".into(), self.date.clone()],
            vec!["commit".into(), self.commit.clone()],
            vec!["CPU".into(), format!("{} x {}", self.cores, self.cpu_model)],
            vec!["memory".into(), self.memory.clone()],
            vec!["kernel".into(), self.kernel.clone()],
            vec!["build".into(), format!("{}, {}", build(), self.rustc)],
            vec!["kubectl".into(), self.kubectl.clone()],
            vec![
                "API server".into(),
                "kube-apiserver 1.20.2 + etcd 3.4 on loopback (`xtask` control plane)".into(),
            ],
            vec![
                "load average (1/5/15 min)".into(),
                format!("{} at start, {} at end", self.load_start, loadavg()),
            ],
        ];
        rows.push(vec!["other processes".into(), other]);
        rows.push(vec!["duration".into(), format!("{seconds:.0} s")]);
        Block {
            key: "machine",
            title: "Machine and run".into(),
            body: markdown_table(&["".into(), "".into()], &rows),
        }
    }

    /// The block of a part that writes its own: when and under which load
    /// it ran, and its rows of measure, measured, target and whether it
    /// was met (`None`: no target).
    pub fn part_block(
        &self,
        (key, title): (&'static str, &str),
        took: std::time::Duration,
        rows: Vec<(String, String, &str, Option<bool>)>,
    ) -> Block {
        let verdict = |met| match met {
            Some(true) => "met",
            Some(false) => "**missed**",
            None => "-",
        };
        let rows: Vec<Vec<String>> = (rows.into_iter())
            .map(|(what, value, target, met)| vec![what, value, target.into(), verdict(met).into()])
            .collect();
        let header = ["measure", "measured", "target", "verdict"].map(String::from);
        let (secs, table) = (took.as_secs_f64(), markdown_table(&header, &rows));
        Block {
            key,
            title: title.into(),
            body: format!(
                "{secs:.0} s in all; {}, commit {}, load {} at start, {} at end.\n\n{table}",
                self.date,
                self.commit,
                self.load_start,
                loadavg()
            ),
        }
    }
}

fn build() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release (`cargo run --release`)"
    }
}
