//! The Explorer's page in a real browser, read as a learner reads it: headless Chromium
//! (Debian's `chromium`), driven over its DevTools protocol, loads the page `resumable
//! explore` serves and finds the state in the traces' words (not a `Debug` dump), a refused
//! step's rejection and the rule it enforces, and a property's link to its spec ID's plain
//! words. Without Chromium the test says it skipped, and fails under
//! `RESUMABLE_REQUIRE_CHROMIUM=1` (set by `.ci/run`).

#[path = "explorer/cdp.rs"]
mod cdp;
#[path = "explorer/server.rs"]
mod server;

use cdp::Browser;

/// The browser, or `None` when it is absent and not required.
fn browser() -> Option<Browser> {
    match cdp::find_chromium() {
        Some(chromium) => Some(Browser::launch(&chromium)),
        None if std::env::var_os("RESUMABLE_REQUIRE_CHROMIUM").is_some_and(|v| v == "1") => {
            panic!(
                "RESUMABLE_REQUIRE_CHROMIUM=1 but no chromium on the PATH: install it \
                 (apt-get install -y chromium)"
            )
        }
        None => {
            eprintln!("skipped: no chromium on the PATH (apt-get install -y chromium)");
            None
        }
    }
}

#[test]
fn the_explorer_page_shows_the_state_a_refused_step_and_a_propertys_rule() {
    let Some(mut page) = browser() else { return };
    let server = server::start(2_000);
    let home = format!("http://127.0.0.1:{}/", server.port);
    page.navigate(&home);

    // The initial state, as a trace words it: the run, its phase, what it waits on, the store.
    page.wait_for(
        "the state",
        "document.getElementById('state').textContent.includes('waits on')",
    );
    let state = page.text("#state");
    for line in [
        "run 0: running at r0",
        "  waits on: the agent's next move",
        "  store: r0, 0 audit records, 0 checkpoints; resource v0",
        "workers: idle, idle",
        "in flight: 0",
    ] {
        assert!(
            state.lines().any(|l| l == line),
            "no line {line:?} in:\n{state}"
        );
    }
    assert!(
        !state.contains("WorldState") && !state.contains('{'),
        "a Debug dump:\n{state}"
    );

    // A refused step: after the run suspended for c1 (its step, then its commit), a suspend
    // for c2 is offered, not taken, and shows its rejection and rule when selected.
    page.navigate(&format!("{home}#/0/0/0"));
    page.wait_for("the suspended run", "document.getElementById('state').textContent.includes('waits on: a decision from alice on c1')");
    let refused = "[...document.querySelectorAll('#next li.not-taken')]\
                   .find(li => li.textContent.includes('with suspend for approval of c2'))";
    page.wait_for("a refused suspend", &format!("!!{refused}"));
    let why = page
        .eval(&format!("{refused}.querySelector('.why').textContent"))
        .unwrap();
    assert_eq!(why, "refused: already_suspended (SUS-2)");
    page.eval(&format!("{refused}.querySelector('button').click()"))
        .unwrap();
    page.wait_for("the refusal", "!document.getElementById('refusal').hidden");
    assert!(page
        .text("#refusal-action")
        .ends_with("steps run 0 with suspend for approval of c2"));
    assert_eq!(page.text("#refusal-kind"), "already_suspended");
    assert_eq!(
        page.text("#refusal-message"),
        "already suspended (pending_approval)"
    );
    assert_eq!(page.text("#refusal-rule"), "SUS-2");
    let words = page.text("#refusal-words");
    assert!(
        words.starts_with("A run waits for one thing at a time"),
        "{words}"
    );
    let href = page
        .eval("document.getElementById('refusal-rule').getAttribute('href')")
        .unwrap();
    assert_eq!(href, "/glossary#sus-2");

    // A property's spec ID links to its entry, which reads as the glossary does.
    page.wait_for(
        "the properties",
        "document.querySelectorAll('#properties a.rule').length > 0",
    );
    let first = "document.querySelector('#properties a.rule')";
    let id = page.eval(&format!("{first}.textContent")).unwrap();
    assert_eq!(id, "RES-2", "the first property's spec ID");
    page.eval(&format!("{first}.click()")).unwrap();
    page.wait_for(
        "RES-2's entry",
        "location.pathname === '/glossary' && location.hash === '#res-2' \
         && document.getElementById('res-2').textContent.includes('At most one resume wins')",
    );
}
