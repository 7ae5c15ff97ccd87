//! The report: markdown tables printed as they are measured, and the same
//! text written to the results file at the end.

use std::fmt::Write as _;
use std::path::Path;

#[derive(Default)]
pub struct Report {
    text: String,
    targets: Vec<(String, String, bool)>,
}

impl Report {
    fn emit(&mut self, text: &str) {
        print!("{text}");
        self.text.push_str(text);
    }

    pub fn paragraph(&mut self, text: &str) {
        self.emit(&format!("{text}\n\n"));
    }

    pub fn section(&mut self, title: &str, what: &str, header: &[&str]) {
        let mut text = format!("### {title}\n\n{what}\n\n|");
        for cell in header {
            let _ = write!(text, " {cell} |");
        }
        text.push_str("\n|");
        for _ in header {
            text.push_str("---|");
        }
        text.push('\n');
        self.emit(&text);
    }

    pub fn row(&mut self, cells: &[String]) {
        let mut text = String::from("|");
        for cell in cells {
            let _ = write!(text, " {cell} |");
        }
        text.push('\n');
        self.emit(&text);
    }

    pub fn end_section(&mut self) {
        self.emit("\n");
    }

    /// Records a target: what it asks, what was measured, whether it was met.
    pub fn target(&mut self, target: &str, measured: String, met: bool) {
        self.targets.push((target.to_string(), measured, met));
    }

    /// Prints the targets table and writes the whole report to `path` (a
    /// partial or quick run writes nothing: the file keeps the last full run).
    pub fn finish(mut self, path: Option<&Path>) {
        self.section("Targets", "Each measured in this run.", &["target", "measured", "met"]);
        for (target, measured, met) in std::mem::take(&mut self.targets) {
            self.row(&[target, measured, if met { "yes" } else { "**no**" }.to_string()]);
        }
        self.end_section();
        match path {
            Some(path) => {
                std::fs::write(path, &self.text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
                println!("written to {}", path.display());
            }
            None => println!("a partial or quick run: the results file is left as it was"),
        }
    }
}
