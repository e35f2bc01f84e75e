//! The book's diagrams drawn in a real browser: headless Chromium (Debian's `chromium`) opens
//! the built book's pages and finds every ```mermaid block of their source drawn by Mermaid
//! as an SVG (the sequence diagrams of every scenario and counterexample, the lifecycle).
//! Needs the book built (`bash book/mermaid.sh && mdbook build book`, as `.ci/run` does
//! before); without the built book or Chromium the test says it skipped, and fails under
//! `RESUMABLE_REQUIRE_BOOK=1` (set by `.ci/run`).

#[path = "explorer/cdp.rs"]
mod cdp;

use std::path::{Path, PathBuf};

fn required() -> bool {
    std::env::var_os("RESUMABLE_REQUIRE_BOOK").is_some_and(|v| v == "1")
}

/// Skips (or, when required, fails) with the reason.
fn skip(reason: &str) {
    assert!(!required(), "RESUMABLE_REQUIRE_BOOK=1 but {reason}");
    eprintln!("skipped: {reason}");
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn every_mermaid_block_of_the_book_is_drawn() {
    let built = root().join("book/book");
    // Each page, and the Markdown source whose ```mermaid blocks it shows.
    let pages = [
        (
            "generated/sequence-diagrams.html",
            "book/src/generated/sequence-diagrams.md",
        ),
        ("spec/lifecycle.html", "spec/lifecycle.md"),
    ];
    if !built.join(pages[0].0).is_file() || !built.join("mermaid.min.js").is_file() {
        return skip(
            "the book is not built with Mermaid (bash book/mermaid.sh && mdbook build book)",
        );
    }
    let Some(chromium) = cdp::find_chromium() else {
        return skip("no chromium on the PATH (apt-get install -y chromium)");
    };
    let mut page = cdp::Browser::launch(&chromium);
    for (html, source) in pages {
        let text = std::fs::read_to_string(root().join(source)).expect("the page's source");
        let blocks = text.matches("```mermaid").count();
        assert!(blocks > 0, "{source} has no mermaid block");
        let path = built.join(html).canonicalize().expect("the built page");
        page.navigate(&format!("file://{}", path.display()));
        page.wait_for(
            &format!("{blocks} drawn diagrams on {html}"),
            &format!(
                "document.querySelectorAll('pre.mermaid svg').length === {blocks} \
                 && document.querySelectorAll('code.language-mermaid').length === 0"
            ),
        );
        // A drawing, not an error box: Mermaid draws a syntax error as an SVG too.
        let errors = page
            .eval("document.querySelectorAll('pre.mermaid svg[aria-roledescription=error]').length")
            .expect("evaluated");
        assert_eq!(errors, 0, "{html}: a diagram Mermaid could not read");
    }
}
