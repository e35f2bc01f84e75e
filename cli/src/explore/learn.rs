//! What the Explorer's page asks of the model itself, answered here rather than by
//! stateright's server: the page (`page/`), the spec IDs in plain words (`/glossary`, read
//! from spec/glossary.md, the book's Glossary chapter), and a state with its next steps
//! (`/.learn/0/3/1`, the path of action indices from the initial state): the state in the
//! traces' words (`World::view`), and for each next step what the lifecycle said to it. A
//! refused step carries its rejection, kind and message, and the rule it enforces
//! (`resumable_conformance::rule`, the mapping the traces use).

use resumable_kernel::Rejection;
use resumable_model::world::{Action, Choice, World, WorldState};
use resumable_model::Lifecycle;
use serde_json::{json, Value};
use stateright::Model;

/// The glossary, whose "Spec IDs in plain words" the `/glossary` page shows.
const GLOSSARY: &str = include_str!("../../../spec/glossary.md");

/// A reply of our own: its content type and body.
pub type Reply = (&'static str, Vec<u8>);

/// The answer to a `GET` of `path`, or `None` for a path that is not ours.
pub fn answer<L: Lifecycle>(world: &World<L>, path: &str) -> Option<Reply> {
    let page = |t, body: &str| Some((t, body.as_bytes().to_vec()));
    match path {
        "/" => page("text/html; charset=utf-8", include_str!("page/index.html")),
        "/explorer.js" => page(
            "text/javascript; charset=utf-8",
            include_str!("page/explorer.js"),
        ),
        "/explorer.css" => page("text/css; charset=utf-8", include_str!("page/explorer.css")),
        "/glossary" => Some(("text/html; charset=utf-8", glossary_page().into_bytes())),
        _ => {
            let indices = path.strip_prefix("/.learn")?;
            let body = match learn(world, indices) {
                Ok(value) => value,
                Err(why) => json!({ "error": why }),
            };
            Some(("application/json", body.to_string().into_bytes()))
        }
    }
}

/// The state at the end of the path `/0/3/1` (the initial state's index, then each action's
/// index among the actions of the state before it), and the steps it offers.
fn learn<L: Lifecycle>(world: &World<L>, indices: &str) -> Result<Value, String> {
    let mut parts = indices.split('/').filter(|p| !p.is_empty());
    let init: usize = parts
        .next()
        .unwrap_or("0")
        .parse()
        .map_err(|_| "a bad path")?;
    let mut state = (world.init_states().into_iter().nth(init)).ok_or("no such initial state")?;
    let mut trail = Vec::new();
    for part in parts {
        let i: usize = part.parse().map_err(|_| "a bad path")?;
        let action = *actions(world, &state).get(i).ok_or("no such action")?;
        let mut step = json!({
            "action": action.to_string(),
            "outcome": world.explain(&state, &action),
        });
        if let Some(refused) = refusal_of(world, &state, &action) {
            step["refusal"] = refused;
        }
        state = world
            .next_state(&state, action)
            .ok_or("that step is not taken: no state follows it")?;
        trail.push(step);
    }
    let next: Vec<Value> = (actions(world, &state).into_iter().enumerate())
        .map(|(i, action)| next_step(world, &state, i, action))
        .collect();
    Ok(json!({ "state": world.view(&state), "trail": trail, "next": next }))
}

fn actions<L: Lifecycle>(world: &World<L>, state: &WorldState<L::Run>) -> Vec<Action> {
    let mut actions = Vec::new();
    world.actions(state, &mut actions);
    actions
}

/// One next step: whether it leads to a state, what the world said of it, and, if the
/// lifecycle refused it, the rejection and its rule.
fn next_step<L: Lifecycle>(
    world: &World<L>,
    state: &WorldState<L::Run>,
    index: usize,
    action: Action,
) -> Value {
    let taken = world.next_state(state, action).is_some();
    let mut step = json!({
        "index": index,
        "action": action.to_string(),
        "taken": taken,
        "outcome": world.explain(state, &action),
    });
    if let Some(refused) = refusal_of(world, state, &action) {
        step["refusal"] = refused;
    }
    step
}

/// The lifecycle's rejection of a step action, as the page shows it; `None` for an action
/// it accepts or is not asked about. An intent the driver plans against its record (a
/// proposal under a recorded call's id, a resume from an old config, a second question) is
/// answered before any step (`World::explain`): the lifecycle is never asked, so it refuses
/// nothing.
fn refusal_of<L: Lifecycle>(
    world: &World<L>,
    state: &WorldState<L::Run>,
    action: &Action,
) -> Option<Value> {
    if let Action::Step {
        choice: Choice::Agent(intent),
        ..
    } = action
    {
        if intent.planned_by_driver() {
            return None;
        }
    }
    match world.verdict_of(state, action)? {
        Ok(_) => None,
        Err(rejection) => Some(refusal(&rejection)),
    }
}

/// A rejection as the page shows it: its kind, its message, the rule it enforces, that
/// rule's plain words and where the glossary has them.
pub fn refusal(rejection: &Rejection) -> Value {
    let kind = rejection.kind();
    let rule = resumable_conformance::rule::rule(kind).name();
    json!({
        "kind": kind.name(),
        "message": rejection.to_string(),
        "rule": rule,
        "words": spec_ids().find(|e| e.id == rule).map(|e| e.words),
        "link": format!("/glossary#{}", rule.to_ascii_lowercase()),
    })
}

/// One entry of the glossary's "Spec IDs in plain words".
struct Entry {
    id: String,
    anchor: String,
    section: String,
    words: String,
}

/// The glossary's spec IDs, from its lines `- <a id="res-2"></a>**RES-2** ([lifecycle.md
/// 5](lifecycle.md#...)): words`.
fn spec_ids() -> impl Iterator<Item = Entry> {
    GLOSSARY.lines().filter_map(|line| {
        let rest = line.strip_prefix("- <a id=\"")?;
        let (anchor, rest) = rest.split_once("\"></a>**")?;
        let (id, rest) = rest.split_once("** (")?;
        let (section, words) = rest.split_once("): ")?;
        Some(Entry {
            id: id.to_string(),
            anchor: anchor.to_string(),
            section: plain(section),
            words: plain(words),
        })
    })
}

/// Markdown to plain text, as far as the glossary's entries use it: links keep their text,
/// emphasis and code marks go.
fn plain(markdown: &str) -> String {
    let mut out = String::new();
    let mut rest = markdown;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .split_once("](")
            .and_then(|(t, r)| Some((t, r.split_once(')')?.1)))
        {
            Some((text, tail)) => {
                out.push_str(text);
                rest = tail;
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.replace("**", "").replace('`', "")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page of spec IDs in plain words, each under its anchor (`#res-2`), as the book's
/// Glossary chapter has them.
fn glossary_page() -> String {
    let mut items = String::new();
    for e in spec_ids() {
        items.push_str(&format!(
            "<li id=\"{}\"><b>{}</b> <span class=\"section\">({})</span>: {}</li>\n",
            escape(&e.anchor),
            escape(&e.id),
            escape(&e.section),
            escape(&e.words)
        ));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Spec IDs in plain words</title><link rel=\"stylesheet\" href=\"/explorer.css\">\
         </head><body class=\"glossary\"><h1>Spec IDs in plain words</h1>\n<p>Every rule, \
         invariant and property the Explorer names, from <code>spec/glossary.md</code>: the \
         book's Glossary chapter (<code>mdbook build book</code>, then \
         <code>book/book/spec/glossary.html</code>) has the same entries under the same \
         anchors. <a href=\"/\">Back to the Explorer</a>.</p>\n<ul>\n{items}</ul></body></html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_a_rejection_enforces_has_plain_words_in_the_glossary() {
        let ids: Vec<String> = spec_ids().map(|e| e.id).collect();
        for kind in resumable_kernel::RejectionKind::ALL {
            let rule = resumable_conformance::rule::rule(kind).name();
            assert!(ids.iter().any(|id| id == rule), "{rule} has no entry");
        }
        let res2 = spec_ids().find(|e| e.id == "RES-2").unwrap();
        assert_eq!(
            (res2.anchor.as_str(), res2.section.as_str()),
            ("res-2", "lifecycle.md 5")
        );
        assert!(
            res2.words.starts_with("At most one resume wins"),
            "{}",
            res2.words
        );
        assert!(!res2.words.contains("](") && !res2.words.contains('`'));
    }

    #[test]
    fn markdown_links_keep_their_text() {
        assert_eq!(
            plain("see [lifecycle.md 4.1](lifecycle.md#41) and `x`"),
            "see lifecycle.md 4.1 and x"
        );
        assert_eq!(plain("a [b c"), "a [b c");
    }
}
