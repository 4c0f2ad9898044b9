//! Running a command with an optional document on stdin, capturing output.

use anyhow::{Context, Result};
use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `cmd` to completion, feeding `stdin` when given (else stdin is null),
/// and returns its output whatever the exit status.
pub fn output_with_stdin(mut cmd: Command, stdin: Option<&str>) -> Result<Output> {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().context("running kubectl")?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())
            .context("writing kubectl's stdin")?;
    }
    child.wait_with_output().context("waiting for kubectl")
}
