// The Explorer's page: the state at the path the location's hash names (`#/0/3/1`: the
// initial state, then each step's index among those offered), in the traces' words; the
// steps it offers, a refused one with its rejection and its rule; and the checker's
// properties, each linked to its spec ID's plain words. It asks `/.learn/PATH` for a state
// and `/.status` for the checker; everything it shows is set as text, never as markup.
'use strict';

const byId = (id) => document.getElementById(id);

/// An element with a class and text, or children.
function element(tag, className, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  node.append(...children);
  return node;
}

function link(href, text, className) {
  const a = element('a', className, text);
  a.href = href;
  return a;
}

/// The path in the hash, as action indices after the initial state's.
function currentPath() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter((p) => p !== '');
  return parts.length ? parts : ['0'];
}

/// A spec ID's link to its entry among the spec IDs in plain words.
function ruleLink(id) {
  return link('/glossary#' + id.toLowerCase(), id, 'rule');
}

function refusalWords(refusal) {
  return `refused: ${refusal.kind} (${refusal.rule})`;
}

function showRefusal(step) {
  const r = step.refusal;
  byId('refusal-action').textContent = step.action;
  byId('refusal-kind').textContent = r.kind;
  byId('refusal-message').textContent = r.message;
  const rule = byId('refusal-rule');
  rule.textContent = r.rule;
  rule.href = r.link;
  byId('refusal-words').textContent = r.words || '';
  byId('refusal').hidden = false;
}

/// One step offered by the state: a link when a state follows it, a button otherwise.
function nextItem(path, step) {
  const item = element('li', step.taken ? 'step' : 'step not-taken');
  item.dataset.index = step.index;
  if (step.taken) {
    item.append(link('#/' + path.concat([step.index]).join('/'), step.action));
  } else {
    const button = element('button', 'action', step.action);
    button.type = 'button';
    button.addEventListener('click', () => {
      if (step.refusal) showRefusal(step);
      else byId('outcome').textContent = `${step.action}: ${step.outcome}`;
    });
    item.append(button);
  }
  const why = step.refusal ? refusalWords(step.refusal) : step.taken ? '' : step.outcome;
  if (why) item.append(' ', element('span', 'why', why));
  return item;
}

function showTrail(path, trail) {
  const list = byId('trail');
  list.replaceChildren(element('li', '', link('#/' + path[0], 'initial state')));
  trail.forEach((step, i) => {
    const href = '#/' + path.slice(0, i + 2).join('/');
    list.append(element('li', '', link(href, step.action)));
  });
  const last = trail[trail.length - 1];
  byId('outcome').textContent = last ? `${last.action}: ${last.outcome}` : 'the initial state';
  if (last && last.refusal) showRefusal(last);
}

async function showState() {
  byId('refusal').hidden = true;
  const path = currentPath();
  const view = await (await fetch('/.learn/' + path.join('/'))).json();
  if (view.error) {
    byId('state').textContent = `no state at ${path.join('/')}: ${view.error}`;
    return;
  }
  byId('state').textContent = view.state;
  showTrail(path, view.trail);
  byId('next').replaceChildren(...view.next.map((step) => nextItem(path, step)));
}

/// A property's standing, from its expectation and whether the checker found a path to it.
function standing(expectation, found, done) {
  const wanted = expectation === 'Sometimes';
  if (found) return wanted ? 'example found' : 'COUNTEREXAMPLE found';
  if (!done) return 'searching';
  return wanted ? 'NO EXAMPLE found' : 'holds';
}

function propertyItem([expectation, name, found], done) {
  const [id, ...sentence] = name.split(' ');
  const item = element('li', 'property');
  item.append(element('span', 'standing', standing(expectation, found, done)), ' ',
    element('span', 'kind', expectation.toLowerCase()), ' ', ruleLink(id),
    ' ' + sentence.join(' '));
  if (found) item.append(' ', link('#/' + found, 'show the path', 'path'));
  return item;
}

async function refreshStatus() {
  const status = await (await fetch('/.status')).json();
  byId('status').textContent = `${status.state_count.toLocaleString()} states, ` +
    `${status.unique_state_count.toLocaleString()} unique, depth ${status.max_depth}` +
    (status.done ? ', done' : ', searching on demand');
  byId('properties').replaceChildren(...status.properties.map((p) => propertyItem(p, status.done)));
  if (!status.done) setTimeout(refreshStatus, 3000);
}

byId('run').addEventListener('click', async () => {
  await fetch('/.runtocompletion', { method: 'POST' });
  refreshStatus();
});
window.addEventListener('hashchange', showState);
showState();
refreshStatus();
