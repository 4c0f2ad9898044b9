//! The results: sections of tables plus target verdicts, printed to the
//! terminal and rendered as `BENCHMARKS.md`.

use std::fmt::Write as _;

/// One table with its explanation.
#[derive(Debug, Default)]
pub struct Section {
    pub title: String,
    /// What was measured and how; printed above the table in the file.
    pub method: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Observations printed below the table.
    pub notes: Vec<String>,
    /// Position in the output (stable within equal values), so parts can
    /// run in whatever order is cheapest.
    pub order: u8,
}

impl Section {
    pub fn new(title: &str, method: &str, header: &[&str]) -> Self {
        Self {
            title: title.into(),
            method: method.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            ..Self::default()
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }
}

/// A target from the issue and whether this run met it.
#[derive(Debug)]
pub struct Verdict {
    pub target: String,
    pub measured: String,
    pub met: bool,
}

/// Numbers the closing "Scaling limits" text is computed from; each is
/// present only when the part that measures it ran.
#[derive(Debug, Default)]
pub struct Facts {
    pub kubectl_get_wall: Option<f64>,
    pub kubectl_get_cpu: Option<f64>,
    pub kubectl_peak_rss_kib: Option<u64>,
    pub https_get_wall: Option<f64>,
    /// API server + etcd CPU per kubectl call, from the throughput runs.
    pub server_cpu_per_call: Option<f64>,
    /// Best resources/s to Ready, and at how many workers.
    pub best_throughput: Option<(f64, usize)>,
    /// Whole-machine kubectl calls/s achieved at that best throughput.
    pub calls_per_second: Option<f64>,
    /// Idle with N resources at poll_ms 500.
    pub idle: Option<IdleFacts>,
    /// (resources, kubectl calls per checked resource) at the largest N.
    pub check_calls: Option<(usize, f64)>,
    /// (resources, p50, p95) reaction latency, seconds.
    pub latency: Vec<(usize, f64, f64)>,
    pub idle_decisions_per_second: Option<f64>,
    pub due_reconciles_per_second: Option<f64>,
    pub bytes_per_idle_resource: Option<f64>,
}

/// The idle-cost measurement, for the scaling-limits text.
#[derive(Debug, Clone, Copy)]
pub struct IdleFacts {
    pub n: usize,
    pub list_wall: f64,
    /// kubectl CPU per poll cycle, seconds.
    pub list_cpu: f64,
    /// Cores used on average: kubectl, API server + etcd, controller.
    pub kubectl_cores: f64,
    pub server_cores: f64,
    pub own_cores: f64,
}

/// Everything one run produced.
#[derive(Debug, Default)]
pub struct Report {
    pub sections: Vec<Section>,
    pub verdicts: Vec<Verdict>,
    pub facts: Facts,
}

impl Report {
    pub fn verdict(&mut self, target: &str, measured: String, met: bool) {
        self.verdicts.push(Verdict {
            target: target.into(),
            measured,
            met,
        });
    }
}

fn widths(header: &[String], rows: &[Vec<String>]) -> Vec<usize> {
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if i < w.len() {
                w[i] = w[i].max(cell.chars().count());
            }
        }
    }
    w
}

fn pad(s: &str, width: usize) -> String {
    let n = s.chars().count();
    format!("{s}{}", " ".repeat(width.saturating_sub(n)))
}

/// Aligned plain-text tables for the terminal.
pub fn terminal(report: &Report) -> String {
    let mut out = String::new();
    for s in &report.sections {
        let _ = writeln!(out, "\n== {} ==", s.title);
        let w = widths(&s.header, &s.rows);
        let line = |cells: &[String]| {
            cells
                .iter()
                .enumerate()
                .map(|(i, c)| pad(c, w.get(i).copied().unwrap_or(0)))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        };
        let _ = writeln!(out, "{}", line(&s.header));
        for row in &s.rows {
            let _ = writeln!(out, "{}", line(row));
        }
        for n in &s.notes {
            let _ = writeln!(out, "  * {n}");
        }
    }
    if !report.verdicts.is_empty() {
        let _ = writeln!(out, "\n== Targets ==");
        for v in &report.verdicts {
            let mark = if v.met { "MET   " } else { "MISSED" };
            let _ = writeln!(out, "{mark} {}: {}", v.target, v.measured);
        }
    }
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// A Markdown table.
pub fn markdown_table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let cells = |c: &[String]| {
        format!(
            "| {} |",
            c.iter()
                .map(|x| md_escape(x))
                .collect::<Vec<_>>()
                .join(" | ")
        )
    };
    let _ = writeln!(out, "{}", cells(header));
    let _ = writeln!(
        out,
        "|{}|",
        header.iter().map(|_| "---").collect::<Vec<_>>().join("|")
    );
    for row in rows {
        let _ = writeln!(out, "{}", cells(row));
    }
    out
}

/// The sections and verdicts as Markdown (the caller adds the header and
/// the scaling-limits text).
pub fn markdown_body(report: &Report) -> String {
    let mut out = String::new();
    if !report.verdicts.is_empty() {
        let _ = writeln!(out, "## Targets\n");
        let rows: Vec<Vec<String>> = report
            .verdicts
            .iter()
            .map(|v| {
                vec![
                    v.target.clone(),
                    v.measured.clone(),
                    if v.met { "met" } else { "**missed**" }.into(),
                ]
            })
            .collect();
        out.push_str(&markdown_table(
            &["target".into(), "measured".into(), "verdict".into()],
            &rows,
        ));
        out.push('\n');
    }
    for s in &report.sections {
        let _ = writeln!(out, "## {}\n", s.title);
        if !s.method.is_empty() {
            let _ = writeln!(out, "{}\n", s.method);
        }
        out.push_str(&markdown_table(&s.header, &s.rows));
        if !s.notes.is_empty() {
            out.push('\n');
            for n in &s.notes {
                let _ = writeln!(out, "- {n}");
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_and_escape() {
        let mut r = Report::default();
        let mut s = Section::new("T", "how", &["a", "long header"]);
        s.row(vec!["x|y".into(), "1".into()]);
        r.sections.push(s);
        r.verdict("t", "v".into(), true);
        let term = terminal(&r);
        assert!(term.contains("a    long header"));
        assert!(term.contains("MET"));
        let md = markdown_body(&r);
        assert!(md.contains("| x\\|y | 1 |"));
        assert!(md.contains("|---|---|"));
    }
}
