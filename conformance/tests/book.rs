//! Nothing the book or spec/ shows can drift from what the code prints. Every trace,
//! counterexample, table of rules and JSON example they show is made here, from the code:
//!
//! - files under `book/src/generated/`, which the book's chapters `{{#include}}`;
//! - regions of spec/ and book chapters between `<!-- generated: NAME ... -->` and
//!   `<!-- end generated: NAME -->`, so that spec/ reads on its own.
//!
//! The test fails when one differs from what the code makes now, and `UPDATE_BOOK=1` writes
//! them instead (then review the diff, as for a snapshot). The counterexamples come from the
//! snapshots `model/tests/counterexamples.rs` keeps of the checker's output, so a change in the
//! checker breaks that test first, then this one.

use resumable_conformance::rule::rule;
use resumable_conformance::{scenario, trace};
use resumable_kernel::{Rejection, RejectionKind, SpecId};
use resumable_model::checker::{self, Checkable, Options, Verdict};
use resumable_model::config::Config;
use resumable_model::reference::Reference;
use resumable_model::variant::Variant;
use resumable_model::world::World;
use resumable_model::Kernel;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    let full = root().join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What the book shows, keyed by the path (from the repository's root) of the file it lives in.
#[derive(Default)]
struct Shown {
    /// Whole files under book/src/generated/.
    files: BTreeMap<String, String>,
    /// Regions of hand-written files: (file, region name) to the region's text.
    regions: BTreeMap<(String, String), String>,
}

const GENERATED: &str = "book/src/generated";

fn scenario_stems() -> Vec<String> {
    jsonl_stems(&root().join("spec/scenarios"))
}

/// The names, sorted and without their extension, of the JSON-lines files in `dir`.
fn jsonl_stems(dir: &Path) -> Vec<String> {
    let mut stems: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{} is readable: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| p.file_stem().and_then(|s| s.to_str()).unwrap().to_string())
        .collect();
    stems.sort();
    stems
}

fn replay(stem: &str) -> trace::Trace {
    let bytes = read(&format!("spec/scenarios/{stem}.jsonl"));
    let parsed = scenario::parse(bytes.as_bytes()).unwrap_or_else(|e| panic!("{stem}: {e}"));
    trace::replay(&parsed).unwrap_or_else(|e| panic!("{stem}: {e}"))
}

/// The fields of a JSON object as written, in order: each key with its value's text. The
/// object is the code's own output, so it is well formed; keeping each value's text as printed
/// keeps the order of the fields, which a parsed `serde_json::Value` would sort.
fn top_level_fields(object: &str) -> Vec<(String, String)> {
    let (mut fields, mut depth, mut in_string, mut escaped) = (Vec::new(), 0, false, false);
    let mut start = 0;
    for (i, c) in object.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => {
                depth += 1;
                if depth == 1 {
                    start = i + 1;
                }
            }
            '}' | ']' | ',' if depth == 1 => {
                let field = &object[start..i];
                let (key, value) = field.split_once(':').expect("a key and its value");
                fields.push((key.trim().trim_matches('"').to_string(), value.to_string()));
                start = i + 1;
                if c != ',' {
                    depth -= 1;
                }
            }
            '}' | ']' => depth -= 1,
            _ => {}
        }
    }
    fields
}

/// A text block for Markdown.
fn fenced(lang: &str, body: &str) -> String {
    let body = body.trim_end_matches('\n');
    format!("```{lang}\n{body}\n```\n")
}

/// The body of an insta snapshot: what follows its second `---` line.
fn snapshot_body(path: &str) -> String {
    let text = read(path);
    let mut parts = text.splitn(3, "---\n");
    let (_, _, body) = (parts.next(), parts.next(), parts.next());
    body.unwrap_or_else(|| panic!("{path} is not an insta snapshot"))
        .to_string()
}

/// The link to a spec ID's entry in the glossary, from a page `up` levels below book/src/
/// (a table under generated/ is included by a chapter at the top, so its links are the
/// chapter's: 0).
fn id_link(id: SpecId, up: usize) -> String {
    let up = "../".repeat(up);
    format!("[{id}]({up}spec/glossary.md#{})", id.name().to_lowercase())
}

fn traces(shown: &mut Shown) {
    for stem in scenario_stems() {
        let text = replay(&stem).to_text();
        shown
            .files
            .insert(format!("{GENERATED}/traces/{stem}.txt"), text);
    }
    // scenario-format.md's legend and excerpt: the seed's notation and its steps 6 and 7.
    let seed = replay("seed");
    let file = "spec/scenario-format.md".to_string();
    shown.regions.insert(
        (file.clone(), "legend".into()),
        fenced("text", trace::NOTATION),
    );
    let excerpt: String = seed.steps[5..7].iter().map(|s| s.to_text()).collect();
    shown.regions.insert(
        (file.clone(), "seed-steps-6-7".into()),
        fenced("text", excerpt.trim_start_matches('\n')),
    );
    let json = seed.steps[6]
        .to_json_line(&seed.header.scenario)
        .expect("the step serialises");
    let mut pretty = String::from("{\n");
    let fields = top_level_fields(json.trim_end());
    for (n, (key, raw)) in fields.iter().enumerate() {
        let raw = if ["input", "run"].contains(&key.as_str()) {
            "\"...\""
        } else {
            raw
        };
        let comma = if n + 1 < fields.len() { "," } else { "" };
        let _ = writeln!(pretty, "  \"{key}\": {raw}{comma}");
    }
    pretty.push('}');
    shown
        .regions
        .insert((file, "seed-step-7-json".into()), fenced("json", &pretty));
}

fn counterexamples(shown: &mut Shown) {
    let mut page = String::from(
        "# The counterexample traces\n\n\
         Generated: each is the shortest counterexample the checker finds for a broken variant, \
         as `cargo run --release -- check --variant NAME` prints it, kept as a snapshot by \
         `model/tests/counterexamples.rs` and copied here by `conformance/tests/book.rs`. \
         Each variant's story is in [What goes wrong](../spec/counterexamples.md).\n",
    );
    for variant in Variant::ALL {
        let name = variant.name();
        let body = snapshot_body(&format!("model/tests/snapshots/{name}.snap"));
        let breaks: Vec<String> = variant.targets().iter().map(|id| id_link(*id, 1)).collect();
        let _ = write!(
            page,
            "\n## {name}\n\n{}; breaks {}. [Its story](../spec/counterexamples.md#{name}).\n\n\
             ```sh\ncargo run --release -- check --variant {name}\n```\n\n{}",
            variant.description(),
            breaks.join(", "),
            fenced("text", &body)
        );
        shown
            .files
            .insert(format!("{GENERATED}/counterexamples/{name}.txt"), body);
    }
    shown
        .files
        .insert(format!("{GENERATED}/counterexample-traces.md"), page);
}

/// Every rejection kind with the rule it enforces (`resumable_conformance::rule`).
fn rules(shown: &mut Shown) {
    let mut table = String::from("| rejection | rule it enforces |\n|---|---|\n");
    for kind in RejectionKind::ALL {
        let _ = writeln!(table, "| `{}` | {} |", kind.name(), id_link(rule(kind), 0));
    }
    shown.files.insert(format!("{GENERATED}/rules.md"), table);
}

fn properties(shown: &mut Shown) {
    let world = World::new(Kernel, Config::default()).expect("the default world is valid");
    let list = world.property_list().expect("the properties are partnered");
    let mut table = String::from("| spec ID | kind | property |\n|---|---|---|\n");
    for (key, p) in list.iter() {
        let kind = format!("{:?}", p.expectation).to_lowercase();
        let _ = writeln!(table, "| {} | {kind} | `{}` |", id_link(key, 0), p.name);
    }
    shown
        .files
        .insert(format!("{GENERATED}/properties.md"), table);
}

/// check-output.md's JSON example: the report `check --variant no-revision-check --format
/// json` gives, abridged (its violated property alone, the first two steps of its trace, each
/// state's first line) and with the figures of the machine it ran on (time, memory) fixed.
fn check_json(shown: &mut Shown) {
    let variant = Variant::NoRevisionCheck;
    let config = Config::exposing(variant);
    let world = World::new(
        Reference {
            variant: Some(variant),
        },
        config,
    )
    .expect("the exposing world is valid");
    let options = Options {
        threads: 1,
        ..Options::default()
    };
    let mut report = checker::check(world, &options).expect("the check runs");
    assert_eq!(report.outcome.exit_code(), 1, "the variant is caught");
    // What the command line fills in, as `check` does.
    report.model = variant.name().to_string();
    let full = checker::subject::config_json(&config);
    let mut kept: serde_json::Map<String, serde_json::Value> = (full.as_object().cloned())
        .expect("an object")
        .into_iter()
        .filter(|(k, _)| ["runs", "workers", "crashes", "approvers"].contains(&k.as_str()))
        .collect();
    kept.insert("...".into(), "...".into());
    report.config = kept.into();
    // The figures of the machine.
    report.options.max_memory_mib = Some(8192.0);
    report.stats.elapsed_secs = 0.05;
    report.stats.states_per_second = 289440.0;
    report.stats.peak_memory_mib = Some(4.9);
    report.properties.retain(|p| p.verdict == Verdict::Violated);
    for p in &mut report.properties {
        let trace = p
            .counterexample
            .as_mut()
            .expect("a violation has its trace");
        trace.trace.truncate(2);
        for step in &mut trace.trace {
            let first = step.state.lines().next().unwrap_or_default();
            step.state = format!("{first}\n...");
        }
    }
    let pretty = report.to_json();
    shown.regions.insert(
        ("spec/check-output.md".into(), "json-example".into()),
        fenced("json", &pretty),
    );
}

/// The exercises' traces, for their answers: each exercise as `replay` prints it (the
/// verdicts a learner predicts), and each solution of a "fix the driver" exercise.
fn exercises(shown: &mut Shown) {
    for sub in ["", "answers/"] {
        for stem in jsonl_stems(&root().join("book/exercises").join(sub)) {
            let bytes = read(&format!("book/exercises/{sub}{stem}.jsonl"));
            let parsed = scenario::parse(bytes.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
            let text = trace::replay(&parsed).expect("it replays").to_text();
            let folder = if sub.is_empty() {
                "exercises"
            } else {
                "solutions"
            };
            shown
                .files
                .insert(format!("{GENERATED}/{folder}/{stem}.txt"), text);
        }
    }
}

/// Who sends an input: the agent, a tool (or its status query), an approver, the operator, or
/// the driver itself (a restart, the clock, a cancel, a callback), read off its serde form.
fn sender(input: &serde_json::Value) -> &'static str {
    match input["kind"].as_str().unwrap_or_default() {
        "suspend" | "dispatch" | "complete" | "fail" => "Agent",
        "tool_result" => "Tool",
        "resume" => match input["decision"]["decision"].as_str().unwrap_or_default() {
            "approve" | "deny" | "batch" => "Approver",
            "reconcile" => "Tool",
            "intervene" => "Operator",
            _ => "Driver",
        },
        _ => "Driver",
    }
}

/// A scenario's trace as a Mermaid sequence diagram: each input from its sender to the kernel,
/// and the kernel's answer: a rejection with its rule, or what the driver writes to the store
/// (audit record, checkpoint) and sends to the tool (dispatch, query).
fn sequence(t: &trace::Trace) -> String {
    use resumable_kernel::Effect;
    let mut lines = Vec::new();
    for step in &t.steps {
        let input = serde_json::to_value(step.input).expect("an input serialises");
        let from = sender(&input);
        let mut what = input["kind"].as_str().unwrap_or_default().replace('_', " ");
        if let Some(d) = input["decision"]["decision"].as_str() {
            what = format!("{what} {d}");
        }
        lines.push(format!(
            "{from}->>Kernel: {}. t{} {what}",
            step.number, input["at"]
        ));
        match &step.verdict {
            Err(r) => {
                lines.push(format!(
                    "Kernel--x{from}: rejected {} [{}]",
                    r.kind().name(),
                    rule(r.kind())
                ));
            }
            Ok(effects) => {
                let mut stored = vec!["run and audit record".to_string()];
                let mut sent = Vec::new();
                for e in effects.iter() {
                    match e {
                        Effect::PersistCheckpoint(_) => stored.push("checkpoint".to_string()),
                        Effect::History(_) => {}
                        Effect::Audit(_) => {}
                        Effect::Dispatch(d) => {
                            sent.push(format!("dispatch {} attempt {}", d.call_id, d.attempt))
                        }
                        Effect::Query(d) => {
                            sent.push(format!("query {} attempt {}", d.call_id, d.attempt))
                        }
                    }
                }
                lines.push(format!(
                    "Kernel->>Driver: accepted, r{}",
                    step.run.revision().0
                ));
                lines.push(format!("Driver->>Store: {}", stored.join(", ")));
                lines.extend(sent.into_iter().map(|s| format!("Driver->>Tool: {s}")));
            }
        }
    }
    // Only the parties the scenario involves, always in this order.
    let mut out = String::from("sequenceDiagram\n");
    for party in [
        "Agent", "Approver", "Operator", "Driver", "Kernel", "Store", "Tool",
    ] {
        if lines.iter().any(|l| l.contains(party)) {
            let _ = writeln!(out, "    participant {party}");
        }
    }
    for line in lines {
        let _ = writeln!(out, "    {line}");
    }
    out
}

/// A sequence diagram for every scenario, on one page.
fn diagrams(shown: &mut Shown) {
    let mut page = String::from(
        "# Sequence diagrams\n\n\
         Generated from each scenario's replay by `conformance/tests/book.rs`: every input from \
         who sends it to the kernel, and the kernel's answer, a rejection with the rule it \
         enforces, or, accepted, what the driver writes to the store and then sends to the \
         tool (a call goes out only after the write that commands it: WAL-1). The diagrams are \
         Mermaid; where the page does not draw them, they read as text.\n",
    );
    for stem in scenario_stems() {
        let t = replay(&stem);
        let _ = write!(
            page,
            "\n## {stem}\n\n{}\n\n```mermaid\n{}```\n",
            t.header.description,
            sequence(&t)
        );
    }
    shown
        .files
        .insert(format!("{GENERATED}/sequence-diagrams.md"), page);
}

/// scenario-format.md's malformed scenarios: each refused as `replay s.jsonl` reports it.
fn malformed(shown: &mut Shown) {
    let header = r#"{"scenario": "s", "format": 1, "shows": ["EXP-1"], "description": "d", "run": {"tenant": "t", "session": "s", "run": "r", "definition": "d", "operator": "ops", "reconcile_window": 10, "created_at": 0}}"#;
    let call = r#""call": {"call_id": "c", "tool": "t", "args": {"text": "a"}, "key": "k", "contract": {"dedupes": true, "query_fences": false, "max_attempts": 1, "extra": 1}}"#;
    let approve = r#""decision": {"decision": "approve", "call_id": "c", "args": {"text": "a"}, "requester": "agent", "approver": "alice", "expires_at": 9}"#;
    let cases: Vec<Vec<u8>> = vec![
        format!("{header}\n{{\"at\": 1, \"kind\": \"expire\"").into_bytes(),
        format!("{header}\n{{\"at\": \"one\", \"kind\": \"expire\"}}").into_bytes(),
        format!("{header}\n{{\"at\": 1, \"kind\": \"explode\"}}").into_bytes(),
        format!("{header}\n{{\"at\": 1, \"kind\": \"dispatch\", {call}}}").into_bytes(),
        b"\xff\n".to_vec(),
        Vec::new(),
        b"{\"at\": 1, \"kind\": \"expire\"}\n".to_vec(),
        format!(
            "{header}\n{{\"at\": 1, \"kind\": \"resume\", \"checkpoint\": \"latest\", {approve}}}"
        )
        .into_bytes(),
        format!("{header}\n{{\"at\": 1, \"kind\": \"expire\", \"at\": 2}}").into_bytes(),
        vec![b'a'; 70_000],
    ];
    let mut lines = String::new();
    for bytes in cases {
        let error = match scenario::parse(&bytes) {
            Err(e) => e,
            Ok(parsed) => trace::replay(&parsed).expect_err("a malformed scenario"),
        };
        let _ = writeln!(lines, "error: s.jsonl:{error}");
    }
    shown.regions.insert(
        ("spec/scenario-format.md".into(), "malformed".into()),
        fenced("text", &lines),
    );
}

fn everything() -> Shown {
    let mut shown = Shown::default();
    traces(&mut shown);
    malformed(&mut shown);
    diagrams(&mut shown);
    exercises(&mut shown);
    counterexamples(&mut shown);
    rules(&mut shown);
    properties(&mut shown);
    check_json(&mut shown);
    shown
}

const START: &str = "<!-- generated: ";
const END: &str = "<!-- end generated: ";

/// The regions of a file: name to (byte range of the region's text).
fn regions_of(path: &str, text: &str) -> BTreeMap<String, std::ops::Range<usize>> {
    let mut out = BTreeMap::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(START) {
        let start = from + i;
        let rest = &text[start + START.len()..];
        let name: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
        let body = start
            + text[start..]
                .find('\n')
                .unwrap_or_else(|| panic!("{path}: `{START}{name}` ends the file"))
            + 1;
        let end_marker = format!("{END}{name} -->");
        let end = body
            + text[body..]
                .find(&end_marker)
                .unwrap_or_else(|| panic!("{path}: region {name} has no `{end_marker}`"));
        assert!(
            out.insert(name.clone(), body..end).is_none(),
            "{path}: region {name} twice"
        );
        from = end + end_marker.len();
    }
    out
}

/// Files whose regions are generated: every Markdown file of spec/ and book/src/ that has one.
fn files_with_regions() -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["spec", "book/src"] {
        let mut stack = vec![root().join(dir)];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).expect("a readable directory") {
                let path = entry.expect("an entry").path();
                let meta = std::fs::symlink_metadata(&path).expect("metadata");
                if meta.is_dir() {
                    stack.push(path);
                } else if meta.is_file() && path.extension().is_some_and(|x| x == "md") {
                    let text = std::fs::read_to_string(&path).expect("UTF-8");
                    if text.contains(START) {
                        let rel = path.strip_prefix(root()).expect("under the root");
                        out.push(rel.to_string_lossy().into_owned());
                    }
                }
            }
        }
    }
    out.sort();
    out
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn the_book_and_spec_show_what_the_code_prints() {
    let shown = everything();
    let update = std::env::var_os("UPDATE_BOOK").is_some_and(|v| v == "1");
    let mut stale = Vec::new();

    // Whole files, and no file under generated/ that nothing makes.
    for (path, want) in &shown.files {
        let full = root().join(path);
        if std::fs::read_to_string(&full).ok().as_deref() != Some(want.as_str()) {
            stale.push(path.clone());
            if update {
                std::fs::create_dir_all(full.parent().unwrap()).unwrap();
                std::fs::write(&full, want).unwrap();
            }
        }
    }
    for path in files_under(&root().join(GENERATED)) {
        let rel = path
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !shown.files.contains_key(&rel) {
            stale.push(format!("{rel} (made by nothing)"));
            if update {
                std::fs::remove_file(&path).unwrap();
            }
        }
    }

    // Regions: each one named exists, and each one that exists is named.
    let mut wanted: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::new();
    for ((file, name), text) in &shown.regions {
        wanted.entry(file).or_default().insert(name, text);
    }
    let mut files: Vec<String> = files_with_regions();
    files.extend(wanted.keys().map(|f| f.to_string()));
    files.sort();
    files.dedup();
    for file in files {
        let text = read(&file);
        let found = regions_of(&file, &text);
        let want = wanted.get(file.as_str()).cloned().unwrap_or_default();
        for name in found.keys().filter(|n| !want.contains_key(n.as_str())) {
            stale.push(format!("{file}: region {name} (made by nothing)"));
        }
        let mut updated = text.clone();
        // From the last region to the first, so that earlier ranges stay valid.
        let mut ranges: Vec<(&String, &std::ops::Range<usize>)> = found.iter().collect();
        ranges.sort_by_key(|(_, r)| std::cmp::Reverse(r.start));
        for (name, range) in ranges {
            let Some(body) = want.get(name.as_str()) else {
                continue;
            };
            if text[range.clone()] != **body {
                stale.push(format!("{file}: region {name}"));
                updated.replace_range(range.clone(), body);
            }
        }
        if let Some(name) = want.keys().find(|n| !found.contains_key(**n)) {
            panic!("{file} has no region {name}: add `{START}{name} -->` and `{END}{name} -->`");
        }
        if update && updated != text {
            std::fs::write(root().join(&file), updated).unwrap();
        }
    }

    assert!(
        update || stale.is_empty(),
        "what the book or spec/ shows differs from what the code prints; regenerate with \
         UPDATE_BOOK=1 cargo test -p resumable-conformance --test book, then review the \
         diff:\n  {}",
        stale.join("\n  ")
    );
}

#[test]
fn a_region_is_read_between_its_markers() {
    let text = "a\n<!-- generated: x (made by a test) -->\nbody\n<!-- end generated: x -->\nb\n";
    let found = regions_of("t.md", text);
    assert_eq!(&text[found["x"].clone()], "body\n");
}

#[test]
fn the_rules_table_names_the_rule_of_a_kind() {
    let shown = everything_cheap();
    let table = &shown.files[&format!("{GENERATED}/rules.md")];
    let sample = Rejection::StaleRevision {
        current: resumable_kernel::Revision(2),
        got: resumable_kernel::Revision(1),
    };
    let row = format!(
        "| `{}` | [RES-3](spec/glossary.md#res-3) |",
        sample.kind().name()
    );
    assert!(table.contains(&row), "{table}");
}

/// The pieces that need no model check.
fn everything_cheap() -> Shown {
    let mut shown = Shown::default();
    rules(&mut shown);
    shown
}

/// The chapters a learner reads: every Markdown file at the top of book/src but the summary.
fn chapters() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(root().join("book/src"))
        .expect("book/src is readable")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .filter(|p| p.file_name().is_some_and(|n| n != "SUMMARY.md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).expect("UTF-8"))
        })
        .collect();
    out.sort();
    out
}

/// Every chapter but the introduction names the spec IDs it teaches on its `**Teaches:**`
/// paragraph, each linked to its glossary entry; together they teach every ID there is.
#[test]
fn every_chapter_names_the_ids_it_teaches_and_together_they_teach_them_all() {
    let mut taught = std::collections::BTreeSet::new();
    for (name, text) in chapters() {
        if ["introduction.md", "exercises.md"].contains(&name.as_str()) {
            continue;
        }
        let start = text
            .find("**Teaches:** ")
            .unwrap_or_else(|| panic!("{name} names no IDs it teaches (**Teaches:** ...)"));
        let paragraph = text[start..].split("\n\n").next().unwrap_or_default();
        for link in paragraph.split('[').skip(1) {
            let (id, target) = (link.split_once("]("))
                .and_then(|(id, rest)| Some((id, rest.split_once(')')?.0)))
                .unwrap_or_else(|| panic!("{name}: `[{link}` is not a link [ID](target)"));
            let spec_id = resumable_conformance::spec_id(id)
                .unwrap_or_else(|| panic!("{name}: {id} is no spec ID"));
            assert_eq!(
                target,
                format!("spec/glossary.md#{}", id.to_lowercase()),
                "{name}: {id} links elsewhere than its glossary entry"
            );
            taught.insert(spec_id);
        }
    }
    let untaught: Vec<SpecId> = SpecId::ALL
        .into_iter()
        .filter(|id| !taught.contains(id))
        .collect();
    assert!(untaught.is_empty(), "no chapter teaches {untaught:?}");
}

/// Every `{{#include PATH}}` of a chapter names a file that exists, so a renamed scenario or
/// trace cannot leave a chapter showing nothing.
#[test]
fn every_file_a_chapter_includes_exists() {
    let mut dirs = vec![root().join("book/src")];
    let mut missing = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable directory") {
            let path = entry.expect("an entry").path();
            let meta = std::fs::symlink_metadata(&path).expect("metadata");
            if meta.is_dir() && !path.ends_with("generated") {
                dirs.push(path);
                continue;
            }
            if !(meta.is_file() && path.extension().is_some_and(|x| x == "md")) {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("UTF-8");
            for (i, _) in text.match_indices("{{#include ") {
                let rest = &text[i + "{{#include ".len()..];
                let target = rest.split("}}").next().unwrap_or_default().trim();
                let file = target.split(':').next().unwrap_or_default();
                if !path.parent().unwrap().join(file).is_file() {
                    missing.push(format!("{}: {target}", path.display()));
                }
            }
        }
    }
    assert!(missing.is_empty(), "includes of no file: {missing:#?}");
}
