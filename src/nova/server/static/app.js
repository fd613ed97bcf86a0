// Nova's web page: sessions, a streaming chat over the AI SDK UI message stream, and the context bar.
// Plain browser JavaScript with no dependencies, so the page works offline from the installed package.
'use strict';

const WARN_PERCENT = 80;      // the same levels as the terminal UI (nova/tui/gauge.py)
const CRITICAL_PERCENT = 95;
const MIN_COMPACTING_MS = 1500; // a fast compaction still shows long enough to be seen

const $ = (id) => document.getElementById(id);
const state = { sessionId: null, controller: null, following: null, compactingSince: 0, compactingTimer: null };

// The browser is signed in by an HttpOnly cookie (nova/server/browser_login.py): the page never holds
// the token, and its calls carry the cookie because they go to this same origin. A 401 means the
// sign-in ended (the server's token changed, the browser was restarted): back to the sign-in form.
async function api(path, options = {}) {
  const response = await fetch(path, {
    ...options,
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', ...(options.headers || {}) },
  });
  if (response.status === 401) {
    window.location.assign('/');
    throw new Error('signed out: sign in again');
  }
  if (!response.ok) {
    let detail = response.statusText;
    try { detail = (await response.json()).detail || detail; } catch (_) { /* not JSON */ }
    throw new Error(`${response.status}: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`);
  }
  return response;
}

function showError(error) {
  $('error').textContent = error ? String(error.message || error) : '';
  $('error').hidden = !error;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === 'class') node.className = value; else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

// -- the context bar --------------------------------------------------------------------------------
function setContext(figure) {
  const percent = Number(figure.percent) || 0;
  $('ctx-percent').textContent = `${percent.toFixed(1)}%`;
  $('ctx-tokens').textContent = `${Number(figure.used).toLocaleString('en-US')} / ` +
    `${Number(figure.limit).toLocaleString('en-US')} tokens`;
  $('bar-fill').style.width = `${Math.min(100, percent)}%`;
  $('context-bar').className = percent >= CRITICAL_PERCENT ? 'critical' : percent >= WARN_PERCENT ? 'warn' : 'ok';
  $('context-bar').dataset.percent = percent.toFixed(1);
}

function setCompacting(on) {
  clearTimeout(state.compactingTimer);
  if (on) {
    state.compactingSince = Date.now();
    $('compacting').hidden = false;
    document.body.dataset.compactionsSeen = String(Number(document.body.dataset.compactionsSeen || 0) + 1);
    return;
  }
  const left = MIN_COMPACTING_MS - (Date.now() - state.compactingSince);
  state.compactingTimer = setTimeout(() => { $('compacting').hidden = true; }, Math.max(0, left));
}

async function refreshContext() {
  if (!state.sessionId) return;
  const report = await (await api(`/api/sessions/${encodeURIComponent(state.sessionId)}/context`)).json();
  setContext(report);
  setSessionFigures(report);  // session_figures.js: model, cost, cache hit rate
  if (report.compacting) setCompacting(true);
  const m = report.manifest;
  drawContextPicture(m);  // context_picture.js: the window as one bar, above the table
  if (m) {
    // The compiler's manifest: every segment of the view, why it is there, and what was left out.
    // Its tokens add up to the figure on the bar.
    $('manifest-status').textContent = `${m.used.toLocaleString()} tokens in ${m.segments.length} segments` +
      (m.dropped.length ? `; ${m.dropped.length} left out for budget or conflict` : '') + '.';
    $('segments-head').replaceChildren(...['segment', 'kind', 'class', 'tokens', 'share', 'source', 'reason']
      .map((h) => el('th', {}, h)));
    const share = (t) => (m.used ? (100 * t / m.used).toFixed(1) + '%' : '');
    const rows = m.segments.map((s) => el('tr', {},
      el('td', {}, s.id), el('td', {}, s.kind || ''), el('td', {}, s.class), el('td', {}, s.tokens.toLocaleString('en-US')),
      el('td', {}, share(s.tokens)), el('td', {}, s.source), el('td', {}, s.reason)));
    const dropped = m.dropped.map((d) => el('tr', { class: 'dropped' },
      el('td', {}, d.id), el('td', {}, 'left out'), el('td', {}, ''), el('td', {}, ''), el('td', {}, ''),
      el('td', {}, d.source || ''), el('td', {}, d.reason || '')));
    $('segments').replaceChildren(...rows, ...dropped);
    return;
  }
  $('manifest-status').textContent = `Manifest ${report.manifest_status}. ` +
    'The breakdown below is an estimate per message; the bar shows the one context figure.';
  $('segments-head').replaceChildren(...['segment', 'class', 'tokens', 'reason'].map((h) => el('th', {}, h)));
  const rows = report.segments.map((s) => el('tr', {},
    el('td', {}, s.id), el('td', {}, s.class), el('td', {}, String(s.tokens)), el('td', {}, s.reason || '')));
  $('segments').replaceChildren(...rows);
}

// -- the conversation -------------------------------------------------------------------------------
function messageNode(role) {
  const node = el('div', { class: `msg ${role}` }, el('div', { class: 'role' }, role));
  $('conversation').append(node);
  return node;
}

function addText(node, text) {
  const block = el('div', { class: 'text' }, text);
  node.append(block);
  return block;
}

function toolNode(node, name, input) {
  const details = el('details', { class: 'tool' },
    el('summary', {}, `${name}(${summarize(input)})`), el('pre', { class: 'input' }, JSON.stringify(input, null, 2)));
  node.append(details);
  return details;
}

const DENIED_PREFIX = 'Permission denied:';
function setToolOutput(details, output, isError) {
  if (!details) return;
  const text = typeof output === 'string' ? output : JSON.stringify(output, null, 2);
  if (isError) details.classList.add('error');
  // A refused call comes back as an error result that says so (the agent loop's "Permission denied: …").
  if (isError && text.startsWith(DENIED_PREFIX)) markDenied(details, text.slice(DENIED_PREFIX.length).trim()); // approvals.js
  details.append(el('pre', { class: 'output' }, text));
}

function summarize(input) {
  const text = Object.entries(input || {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ');
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

function scrollDown() { $('conversation').scrollTop = $('conversation').scrollHeight; }

function renderRecorded(messages) {
  $('conversation').replaceChildren();
  const tools = new Map();
  for (const message of messages) {
    const results = message.parts.filter((p) => p.kind === 'tool_result');
    if (message.role === 'user' && results.length) {
      for (const r of results) {
        const details = tools.get(r.tool_use_id);
        if (details) setToolOutput(details, r.content, r.is_error);
        if (details && r.denied) markDenied(details); // approvals.js
      }
      continue;
    }
    const node = messageNode(message.role);
    for (const part of message.parts) {
      if (part.kind === 'text' && part.text) addText(node, part.text);
      else if (part.kind === 'summary') node.append(el('div', { class: 'notice' }, 'Earlier conversation summarized.'));
      else if (part.kind === 'tool_use') tools.set(part.id, toolNode(node, part.name, part.input));
    }
  }
  scrollDown();
  return tools;
}

// A session as its state says: the recorded conversation and the calls waiting for an answer.
function showSession(detail) {
  showPending(detail.pending_approvals, renderRecorded(detail.messages)); // approvals.js
  scrollDown();
}

// -- the stream: Vercel AI SDK UI message stream, protocol v1 ------------------------------------
async function* readEvents(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (data === '[DONE]') return;
      if (data) yield JSON.parse(data);
    }
  }
}

async function send(text) {
  showError(null);
  messageNode('user').append(el('div', { class: 'text' }, text));
  const node = messageNode('assistant');
  const texts = new Map();
  const tools = new Map();
  setBusy(true);
  const controller = new AbortController();
  state.controller = controller;
  try {
    const response = await api(`/api/sessions/${encodeURIComponent(state.sessionId)}/messages`, {
      method: 'POST', body: JSON.stringify({ text }), signal: controller.signal,
    });
    for await (const chunk of readEvents(response.body)) {
      novaProgress.chunk(chunk, node); // progress.js: the wait for the model, and retries
      switch (chunk.type) {
        case 'text-start': texts.set(chunk.id, addText(node, '')); break;
        case 'text-delta': texts.get(chunk.id).textContent += chunk.delta; break;
        case 'tool-input-available': tools.set(chunk.toolCallId, toolNode(node, chunk.toolName, chunk.input)); break;
        case 'tool-output-available': setToolOutput(tools.get(chunk.toolCallId), chunk.output, false); break;
        case 'tool-output-error': setToolOutput(tools.get(chunk.toolCallId), chunk.errorText, true); break;
        case 'data-nova-context': setContext(chunk.data); break;
        case 'data-nova-compaction-start':
          setCompacting(true);
          node.append(el('div', { class: 'notice' }, `Compacting ${chunk.data.messageCount} messages…`));
          break;
        case 'data-nova-compaction-end':
          setCompacting(false);
          // The receipt in the CLI line's words when there is one (nova.context.receipt.receipt_line).
          node.append(el('div', { class: 'notice receipt' }, !chunk.data.ok
            ? `Compaction ${chunk.data.declined ? 'declined' : 'failed'}: ${chunk.data.error}`
            : chunk.data.receiptText ? `compaction done ${chunk.data.receiptText}`
            : `Compacted: ${chunk.data.tokensBefore.toLocaleString('en-US')} → ${chunk.data.tokensAfter.toLocaleString('en-US')} tokens.`));
          break;
        case 'error': showError(chunk.errorText); break;
        default: approvalChunk(chunk, tools, node); break; // approvals.js; else start, finish, text-end …
      }
      scrollDown();
    }
  } catch (error) {
    if (error.name !== 'AbortError') showError(error);
  } finally {
    // Unless another session was opened meanwhile (which took the page over): it is done here.
    if (state.controller === controller) {
      state.controller = null;
      setBusy(false);
      await Promise.all([refreshContext(), loadSessions()]).catch(showError);
    }
  }
}

function setBusy(busy) {
  document.body.dataset.busy = String(busy);
  $('send').disabled = busy;
  $('stop').hidden = !busy;
}

// -- sessions ---------------------------------------------------------------------------------------
async function loadSessions() {
  const sessions = await (await api('/api/sessions')).json();
  const items = sessions.map((s) => {
    const title = s.title || s.id;
    const count = `${s.message_count} message${s.message_count === 1 ? '' : 's'}`;
    const item = el('li', { 'data-id': s.id, title },
      el('span', { class: 'title' }, title),
      el('small', {}, `${new Date(s.updated_at * 1000).toLocaleString([], { dateStyle: 'short', timeStyle: 'short' })} · ${count}`));
    if (s.id === state.sessionId) {
      item.classList.add('active');
      $('session-title').textContent = title;  // a new session gets its title with its first message
    }
    item.addEventListener('click', () => openSession(s.id).catch(showError));
    return item;
  });
  $('sessions').replaceChildren(...items);
}

async function openSession(id) {
  state.sessionId = id;
  // In the address, so a reload opens the same session (and asks again what waits in it).
  history.replaceState(null, '', `#${encodeURIComponent(id)}`);
  // What this page streams or follows now stops being drawn here; the turn goes on on the server,
  // and coming back to its session follows it from the session's state.
  if (state.controller) {
    state.controller.abort();
    state.controller = null;
  }
  if (state.following) state.following = null;
  setBusy(false);
  const detail = await (await api(`/api/sessions/${encodeURIComponent(id)}`)).json();
  $('session-title').textContent = detail.session.title || id;
  showSession(detail);
  await Promise.all([refreshContext(), loadSessions()]);
  // A turn running with no stream on this page (reloaded, or started elsewhere): follow it here.
  if (detail.session.running) followTurn(id, detail).catch(showError); // approvals.js
}

async function newSession(title) {
  const created = await (await api('/api/sessions', { method: 'POST', body: JSON.stringify({ title }) })).json();
  await openSession(created.id);
  return created.id;
}

// -- wiring -----------------------------------------------------------------------------------------
$('new-session').addEventListener('click', () => newSession('').catch(showError));
$('composer').addEventListener('submit', async (event) => {
  event.preventDefault();
  const text = $('prompt').value.trim();
  if (!text || document.body.dataset.busy === 'true') return;
  $('prompt').value = '';
  try {
    if (!state.sessionId) await newSession('');  // the server names it after this first message
    await send(text);
  } catch (error) { showError(error); }
});
$('prompt').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey) { event.preventDefault(); $('composer').requestSubmit(); }
});
$('stop').addEventListener('click', () => {
  if (state.sessionId) api(`/api/sessions/${encodeURIComponent(state.sessionId)}/cancel`, { method: 'POST' }).catch(showError);
});
$('sign-out').addEventListener('click', () => {
  api('/logout', { method: 'POST' }).then(() => window.location.assign('/')).catch(showError);
});
$('toggle-context').addEventListener('click', () => {
  const view = $('context-view');
  view.hidden = !view.hidden;
  $('toggle-context').setAttribute('aria-expanded', String(!view.hidden));
  if (!view.hidden) refreshContext().catch(showError);
});

const opened = decodeURIComponent(window.location.hash.slice(1));
loadSessions()
  .then(() => (opened && document.querySelector(`#sessions li[data-id="${CSS.escape(opened)}"]`) ? openSession(opened) : null))
  .then(() => { document.body.dataset.ready = 'true'; })
  .catch(showError);
