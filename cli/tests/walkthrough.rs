//! The README's runtime walkthrough ("A runtime"), run as written: every command of its first
//! `sh` block, in order, in a fresh directory, with this build's binary for
//! `cargo run --release --`. Each command must exit 0, and each comment line under a command
//! (the output the README shows) must be in what the command printed, up to the parts that
//! differ from run to run (dates, key ids, elisions). The one change: the tool service
//! listens on a free port instead of 7411, and the commands are given that address.

use resumable_testkit::process::{listening, Background};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const EXE: &str = env!("CARGO_BIN_EXE_resumable");

/// The README's walkthrough block: the lines of the first `sh` block after "## A runtime".
fn walkthrough() -> Vec<String> {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let text = std::fs::read_to_string(readme).unwrap();
    let section = &text[text.find("\n## A runtime\n").expect("the section")..];
    let block = &section[section.find("```sh\n").expect("its sh block") + 6..];
    let block = &block[..block.find("```").expect("the block's end")];
    block.lines().map(str::to_string).collect()
}

/// What of a shown output line must be in the real output: up to the first part that
/// differs between runs (a date, a parenthesised detail, an elision), with spaces squeezed.
fn fixed_part(shown: &str) -> String {
    let cut = ["(", "...", " 20"]
        .iter()
        .filter_map(|m| shown.find(m))
        .min()
        .unwrap_or(shown.len());
    squeeze(&shown[..cut])
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One command's words, its stdout file if redirected, and whether it runs in the background.
fn parse(line: &str) -> (Vec<String>, Option<String>, bool) {
    let line = line.find("  #").map_or(line, |at| &line[..at]);
    let rest = line
        .trim()
        .strip_prefix("cargo run --release -- ")
        .unwrap_or_else(|| panic!("not a command of the binary: {line:?}"));
    let mut words: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
    let background = words.last().is_some_and(|w| w == "&");
    if background {
        words.pop();
    }
    let out = match words.iter().position(|w| w == ">") {
        Some(at) => {
            let file = words.get(at + 1).cloned();
            words.truncate(at);
            file
        }
        None => None,
    };
    (words, out, background)
}

#[test]
fn the_readmes_runtime_walkthrough_runs_as_written_and_prints_what_it_shows() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("resumable-cli-walkthrough-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // The tool service started in the background, stopped by `kill %1` or when dropped.
    let mut service: Option<Background> = None;
    let mut address: Option<String> = None;
    let mut last: Option<(String, String)> = None;
    let mut commands = 0;
    let mut checked = 0;
    for line in walkthrough() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(shown) = trimmed.strip_prefix('#') {
            let (command, printed) = last.as_ref().expect("output shown under a command");
            let wanted = fixed_part(shown);
            if !wanted.is_empty() {
                assert!(
                    squeeze(printed).contains(&wanted),
                    "{command}: the README shows {wanted:?}, it printed:\n{printed}"
                );
                checked += 1;
            }
            continue;
        }
        if trimmed == "kill %1" {
            // Dropping a `Background` stops its process, as `kill %1` does.
            drop(service.take().expect("a background service to stop"));
            continue;
        }
        let (mut words, out, background) = parse(trimmed);
        if let Some(address) = &address {
            for w in &mut words {
                *w = w.replace("127.0.0.1:7411", address);
            }
        }
        commands += 1;
        if background {
            assert_eq!(words[0], "tool-service", "{trimmed}");
            let mut command = Command::new(EXE);
            command.args(&words).args(["--listen", "127.0.0.1:0"]);
            let (process, listens_on) = listening(command.current_dir(&dir));
            service = Some(process);
            address = Some(listens_on);
            continue;
        }
        let output = Command::new(EXE)
            .args(&words)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let printed = String::from_utf8_lossy(&output.stdout).to_string();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{trimmed}: {:?}\n{printed}{stderr}",
            output.status
        );
        if let Some(file) = out {
            std::fs::write(dir.join(file), &output.stdout).unwrap();
        }
        last = Some((trimmed.to_string(), printed));
    }
    assert!(service.is_none(), "the walkthrough stops its service");
    assert!(
        commands >= 10,
        "{commands} commands: the block was not found whole"
    );
    assert!(checked >= 8, "{checked} shown lines checked");
    let _ = std::fs::remove_dir_all(&dir);
}
