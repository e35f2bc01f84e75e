//! ARCHITECTURE.md stays true where a test can tell: its code map names every source file of
//! the workspace's crates, and its dependency invariants are what the manifests declare.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The crates whose sources the code map describes, by folder.
const CRATES: &[&str] = &[
    "kernel",
    "model",
    "conformance",
    "audit",
    "driver",
    "runtime",
    "cli",
    "testkit",
];

/// Every `.rs` file under `dir`, as paths relative to the workspace root.
fn sources(dir: &Path, found: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let rel = path.strip_prefix(root()).expect("under the root");
            found.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The code map's entries: each bullet of the "Code map" section, its lines joined.
fn code_map(architecture: &str) -> Vec<String> {
    let start = architecture
        .find("## Code map")
        .expect("ARCHITECTURE.md has a code map");
    let section = &architecture[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    let mut bullets: Vec<String> = Vec::new();
    for line in section[..end].lines() {
        if let Some(rest) = line.strip_prefix("- ") {
            bullets.push(rest.to_string());
        } else if let Some(last) = bullets.last_mut() {
            last.push(' ');
            last.push_str(line.trim());
        }
    }
    bullets
}

/// Whether the code map names `file`: in an entry that names its crate's sources
/// (`crate/src/`), by its path or a tail of it of two parts or more in backticks
/// (`step/batch.rs`), or by its name alone in an entry that names its folder (`a/src/b/` or
/// its module file `a/src/b.rs`); a crate's `lib.rs` or `main.rs`, or a test module
/// `tests.rs`, by its folder alone.
fn named(bullets: &[String], file: &str) -> bool {
    let (dir, name) = file.rsplit_once('/').expect("a file in a folder");
    let krate = file.split('/').next().expect("a crate folder");
    let parts: Vec<&str> = file.split('/').collect();
    let tails: Vec<String> = (0..parts.len() - 1)
        .map(|i| format!("`{}`", parts[i..].join("/")))
        .collect();
    let dir_parts: Vec<&str> = dir.split('/').collect();
    let folders: Vec<String> = (0..dir_parts.len())
        .flat_map(|i| {
            let tail = dir_parts[i..].join("/");
            [format!("`{tail}/`"), format!("`{tail}.rs`")]
        })
        .collect();
    bullets.iter().any(|b| {
        let folder = b.contains(&format!("{dir}/")) || folders.iter().any(|f| b.contains(f));
        b.contains(&format!("{krate}/src/"))
            && (b.contains(file)
                || tails.iter().any(|t| b.contains(t.as_str()))
                || (folder
                    && (b.contains(&format!("`{name}`"))
                        || matches!(name, "tests.rs" | "lib.rs" | "main.rs"))))
    })
}

#[test]
fn the_code_map_names_every_source_file() {
    let bullets = code_map(&read("ARCHITECTURE.md"));
    let mut files = Vec::new();
    for krate in CRATES {
        sources(&root().join(krate).join("src"), &mut files);
    }
    assert!(files.len() > 100, "only {} source files found", files.len());
    let missing: Vec<&String> = files.iter().filter(|f| !named(&bullets, f)).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not name {} source files: {missing:#?}",
        missing.len()
    );
}

#[test]
fn the_code_map_check_fails_for_a_file_it_does_not_name() {
    let bullets = code_map(
        "## Code map\n\n- `kernel/src/step.rs`: the step. `step/batch.rs`: batches.\n\
         - `model/src/world.rs`, `world/`: the world (`state.rs`).\n\n## Next\n- `x/src/y.rs`\n",
    );
    assert!(named(&bullets, "kernel/src/step.rs"));
    assert!(named(&bullets, "model/src/world/state.rs"));
    assert!(!named(&bullets, "model/src/world/tool.rs"));
    assert!(!named(&bullets, "kernel/src/run.rs"));
    // An entry after the code map's section is not part of it.
    assert!(!named(&bullets, "x/src/y.rs"));
}

/// The names of a manifest's `[dependencies]` (not its dev- or build-dependencies).
fn dependencies(krate: &str) -> BTreeSet<String> {
    let manifest = read(&format!("{krate}/Cargo.toml"));
    let mut names = BTreeSet::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]";
            continue;
        }
        if inside && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.', ' ']).next().expect("a key");
            names.insert(name.trim().to_string());
        }
    }
    names
}

#[test]
fn each_crate_depends_only_on_what_the_architecture_invariants_allow() {
    let allowed: &[(&str, &[&str])] = &[
        ("kernel", &["sha2", "thiserror", "serde", "serde_json"]),
        (
            "audit",
            &["resumable-kernel", "serde", "serde_json", "sha2", "hmac"],
        ),
        (
            "driver",
            &[
                "resumable-kernel",
                "resumable-audit",
                "serde",
                "serde_json",
                "thiserror",
            ],
        ),
    ];
    for (krate, names) in allowed {
        let found = dependencies(krate);
        assert!(!found.is_empty(), "{krate}: no [dependencies] read");
        let extra: Vec<&String> = found
            .iter()
            .filter(|n| !names.contains(&n.as_str()))
            .collect();
        assert!(
            extra.is_empty(),
            "{krate} depends on {extra:?}, which ARCHITECTURE.md's invariants do not allow"
        );
    }
    // The runtime links the kernel, the audit crate and the driver core, never the model or
    // conformance.
    let runtime = dependencies("runtime");
    for forbidden in ["resumable-model", "resumable-conformance", "stateright"] {
        assert!(
            !runtime.contains(forbidden),
            "the runtime depends on {forbidden}"
        );
    }
    for needed in ["resumable-kernel", "resumable-audit", "resumable-driver"] {
        assert!(
            runtime.contains(needed),
            "the runtime does not depend on {needed}"
        );
    }
}

/// The sources under `dir`, each with its text.
fn texts(dir: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    sources(&root().join(dir), &mut files);
    files
        .into_iter()
        .map(|f| {
            let text = read(&f);
            (f, text)
        })
        .collect()
}

/// The files of `texts` in which any of `words` stands, with the word.
fn offenders(texts: &[(String, String)], words: &[&str]) -> Vec<(String, String)> {
    texts
        .iter()
        .flat_map(|(f, t)| {
            words
                .iter()
                .filter(|w| t.contains(**w))
                .map(move |w| (f.clone(), w.to_string()))
        })
        .collect()
}

/// What reading a clock or doing I/O names in Rust's standard library.
const CLOCK_AND_IO: &[&str] = &[
    "std::time",
    "SystemTime",
    "Instant::",
    "std::fs",
    "std::net",
    "std::env",
    "std::process",
    "std::thread",
];

#[test]
fn the_kernel_and_the_driver_core_read_no_clock_and_do_no_io() {
    for dir in ["kernel/src", "driver/src"] {
        let found = offenders(&texts(dir), CLOCK_AND_IO);
        assert!(
            found.is_empty(),
            "{dir} reads a clock or does I/O: {found:?}"
        );
    }
    // The check sees such a use where there is one.
    let runtime = offenders(&texts("runtime/src"), CLOCK_AND_IO);
    assert!(
        !runtime.is_empty(),
        "the runtime, which does I/O, shows none"
    );
}

#[test]
fn the_reference_machine_never_calls_the_kernels_step() {
    let mut reference = texts("model/src/reference");
    reference.extend(
        texts("model/src")
            .into_iter()
            .filter(|(f, _)| f.ends_with("/reference.rs")),
    );
    assert!(
        reference.len() > 3,
        "the reference machine's files were not found"
    );
    let found = offenders(&reference, &["resumable_kernel::step", "kernel::step("]);
    assert!(
        found.is_empty(),
        "the reference calls the kernel's step: {found:?}"
    );
    for (file, text) in &reference {
        for import in text.split("use resumable_kernel::{").skip(1) {
            let list = import.split('}').next().unwrap_or_default();
            let names: Vec<&str> = list.split([',', ' ', '\n']).map(str::trim).collect();
            assert!(
                !names.contains(&"step") && !names.contains(&"Transition"),
                "{file} imports the kernel's step"
            );
        }
    }
}
