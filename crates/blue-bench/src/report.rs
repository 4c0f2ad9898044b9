//! The results: sections of tables plus target verdicts, printed to the
//! terminal and written into `BENCHMARKS.md` as generated blocks, between
//! which the explanations are written by hand.

use std::fmt::Write as _;

/// One table and what this run observed about it.
#[derive(Debug, Default)]
pub struct Section {
    /// Names the section's block in `BENCHMARKS.md`.
    pub key: &'static str,
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Observations printed below the table.
    pub notes: Vec<String>,
    /// Position in the output (stable within equal values), so parts can
    /// run in whatever order is cheapest.
    pub order: u8,
}

impl Section {
    /// `header`: the column names, separated by ` | `.
    pub fn new(key: &'static str, title: &str, header: &str) -> Self {
        Self {
            key,
            title: title.into(),
            header: header.split(" | ").map(String::from).collect(),
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

#[derive(Debug, Default)]
pub struct Report {
    pub sections: Vec<Section>,
    pub verdicts: Vec<Verdict>,
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

/// The blocks as the terminal shows them: one renderer for both.
pub fn terminal(report: &Report) -> String {
    let blocks = blocks(report).into_iter();
    blocks
        .map(|b| format!("\n== {} ==\n{}", b.title, b.body))
        .collect()
}

pub fn markdown_table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let cells = |c: &[String]| {
        let escaped: Vec<String> = c.iter().map(|x| x.replace('|', "\\|")).collect();
        format!("| {} |", escaped.join(" | "))
    };
    let _ = writeln!(out, "{}", cells(header));
    let _ = writeln!(out, "|{}|", vec!["---"; header.len()].join("|"));
    for row in rows {
        let _ = writeln!(out, "{}", cells(row));
    }
    out
}

/// A generated part of `BENCHMARKS.md`: `<!-- bench:KEY -->` ... `<!-- /bench:KEY -->`.
pub struct Block {
    pub key: &'static str,
    /// The heading a new block is appended under.
    pub title: String,
    pub body: String,
}

/// The verdicts and the sections' tables and notes as blocks.
pub fn blocks(report: &Report) -> Vec<Block> {
    let mut out = Vec::new();
    if !report.verdicts.is_empty() {
        let rows: Vec<Vec<String>> = report
            .verdicts
            .iter()
            .map(|v| {
                let verdict = if v.met { "met" } else { "**missed**" };
                vec![v.target.clone(), v.measured.clone(), verdict.into()]
            })
            .collect();
        let header = ["target".into(), "measured".into(), "verdict".into()];
        out.push(Block {
            key: "targets",
            title: "Targets".into(),
            body: markdown_table(&header, &rows),
        });
    }
    for s in &report.sections {
        let mut body = markdown_table(&s.header, &s.rows);
        if !s.notes.is_empty() {
            body.push('\n');
            for n in &s.notes {
                let _ = writeln!(body, "- {n}");
            }
        }
        out.push(Block {
            key: s.key,
            title: s.title.clone(),
            body,
        });
    }
    out
}

/// `doc` with each of `blocks` replaced in place, or appended under its
/// title when `doc` has none by that key yet (for a human to explain). The
/// hand-written text around the blocks is kept as it is.
pub fn with_blocks(doc: &str, blocks: &[Block]) -> String {
    let mut out = doc.to_string();
    for b in blocks {
        let open = format!("<!-- bench:{} -->", b.key);
        let close = format!("<!-- /bench:{} -->", b.key);
        let block = format!("{open}\n{}{close}", b.body);
        match (out.find(&open), out.find(&close)) {
            (Some(s), Some(e)) if e > s => out.replace_range(s..e + close.len(), &block),
            _ => {
                let before = out.trim_end();
                let gap = if before.is_empty() { "" } else { "\n\n" };
                out = format!("{before}{gap}## {}\n\n{block}\n", b.title);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_escape_and_the_terminal_shows_the_blocks() {
        let mut r = Report::default();
        let mut s = Section::new("t", "T", "a | long header");
        s.row(vec!["x|y".into(), "1".into()]);
        r.sections.push(s);
        r.verdict("t", "v".into(), true);
        let term = terminal(&r);
        assert!(term.contains("== T ==\n| a | long header |"));
        assert!(term.contains("| t | v | met |"));
        let blocks = blocks(&r);
        assert_eq!(blocks[0].key, "targets");
        assert!(blocks[1].body.contains("| x\\|y | 1 |"));
        assert!(blocks[1].body.contains("|---|---|"));
    }

    #[test]
    fn blocks_are_replaced_in_place_or_appended_and_prose_is_kept() {
        let block = |key, body: &str| Block {
            key,
            title: "New".into(),
            body: body.into(),
        };
        let doc = "# B\n\nProse.\n<!-- bench:a -->\nold\n<!-- /bench:a -->\nMore prose.\n";
        let out = with_blocks(doc, &[block("a", "new\n"), block("b", "fresh\n")]);
        assert_eq!(
            out,
            "# B\n\nProse.\n<!-- bench:a -->\nnew\n<!-- /bench:a -->\nMore prose.\n\n\
             ## New\n\n<!-- bench:b -->\nfresh\n<!-- /bench:b -->\n"
        );
        assert!(with_blocks("", &[block("b", "x\n")]).starts_with("## New"));
    }
}
