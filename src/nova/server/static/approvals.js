// Approvals on the web page: a tool call that waits for the user shows what it does and three buttons,
// Allow once / Allow for session / Deny, answered through POST /api/sessions/{id}/approvals/{call_id}.
// A denied call is marked denied, live from the stream and when a recorded session is opened. Each
// question shows the diff a file change would make and when it is denied unanswered; a timeout says so.
// A waiting call is part of the session's state on the server: a page reloaded, or switched back to the
// session, asks it again from GET /api/sessions/{id} and follows the turn until it ends.
// Loaded before app.js in the same inline script: it uses app.js's `api`, `el` and `state`, and app.js
// calls `approvalChunk` for the stream's chunks it does not handle itself and `markDenied` on history.
'use strict';

const APPROVAL_ANSWERS = [
  ['once', 'Allow once', 'allowed once'],
  ['session', 'Allow for session', 'allowed for this session'],
  ['deny', 'Deny', 'denied'],
];

// The stream's approval chunks: `tool-approval-request` (the AI SDK's own, with what the call does in
// `approvalDescriptor`), `tool-output-denied` and Nova's `data-nova-denied` (why). Returns whether it
// handled the chunk.
function approvalChunk(chunk, tools, node) {
  if (chunk.type === 'tool-approval-request') {
    const box = approvalBox(chunk);
    const details = tools.get(chunk.toolCallId);
    if (details) details.after(box); else node.append(box);
    box.querySelector('button').focus();
    return true;
  }
  if (chunk.type === 'tool-output-denied') {
    const details = tools.get(chunk.toolCallId);
    if (details) markDenied(details);
    settleBox(chunk.toolCallId, 'deny');
    return true;
  }
  if (chunk.type === 'data-nova-approval-timeout') {
    settleBox(chunk.data.toolCallId, 'timeout', `timed out after ${chunk.data.timeoutS} s: denied`);
    return true;
  }
  if (chunk.type === 'data-nova-denied') {
    const details = tools.get(chunk.data.toolCallId);
    if (details) details.append(el('pre', { class: 'output' }, chunk.data.reason));
    return true;
  }
  return false;
}

function approvalBox(chunk) {
  const what = chunk.approvalDescriptor || {};
  const box = el('div', { class: 'approval', role: 'group', 'data-call': chunk.toolCallId },
    el('div', { class: 'approval-what' }, `Approve ${what.summary || chunk.toolCallId}?`),
    el('div', { class: 'approval-why' }, `Asked because ${what.reason || 'the rules ask for this call'}` +
      (what.timeoutS ? ` · denied if not answered in ${Math.round(what.timeoutS)} s` : '')));
  if (what.diff) box.append(diffBlock(what.diff));
  if (what.deadline) {
    box.append(el('div', { class: 'approval-deadline', 'data-deadline': String(what.deadline) },
      deadlineText(what.deadline)));
  }
  const buttons = el('div', { class: 'approval-buttons' });
  for (const [decision, label] of APPROVAL_ANSWERS) {
    const button = el('button', { type: 'button', 'data-decision': decision }, label);
    if (decision === 'session' && what.grant) button.title = `Allows ${what.grant} while this session is open`;
    button.addEventListener('click', () => answerApproval(box, chunk.toolCallId, decision));
    buttons.append(button);
  }
  box.append(buttons);
  return box;
}

async function answerApproval(box, callId, decision) {
  for (const button of box.querySelectorAll('button')) button.disabled = true;
  try {
    await api(`/api/sessions/${encodeURIComponent(state.sessionId)}/approvals/${encodeURIComponent(callId)}`,
      { method: 'POST', body: JSON.stringify({ decision }) });
    settleBox(callId, decision);
  } catch (error) {
    // 409: answered elsewhere or timed out (the stream says which way it went).
    box.dataset.state = 'failed';
    box.append(el('div', { class: 'approval-why' }, String(error.message || error)));
  }
}

function settleBox(callId, decision, text) {
  const box = document.querySelector(`.approval[data-call="${CSS.escape(callId)}"]`);
  if (!box || box.dataset.state === 'answered') return;
  const shown = APPROVAL_ANSWERS.find(([d]) => d === decision);
  box.dataset.state = 'answered';
  box.dataset.decision = decision;
  box.querySelector('.approval-deadline')?.remove();
  box.querySelector('.approval-buttons').replaceChildren(el('span',
    { class: `approval-answer ${decision === 'timeout' ? 'deny' : decision}` }, text || (shown ? shown[2] : decision)));
}

// The unified diff a file change would make, one line a row, coloured by what it does (text only).
function diffBlock(diff) {
  const block = el('pre', { class: 'approval-diff' });
  for (const line of diff.replace(/\n$/, '').split('\n')) {
    const kind = line.startsWith('+++') || line.startsWith('---') ? 'file' : line.startsWith('@@') ? 'hunk'
      : line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : 'same';
    block.append(el('span', { class: `diff-${kind}` }, line));
  }
  return block;
}

function deadlineText(deadline) {
  const left = Math.max(0, Math.round(deadline - Date.now() / 1000));
  const at = new Date(deadline * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  return `denied at ${at} if not answered (${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')} left)`;
}

setInterval(() => {
  for (const line of document.querySelectorAll('.approval:not([data-state]) .approval-deadline')) {
    line.textContent = deadlineText(Number(line.dataset.deadline));
  }
}, 1000);

// -- a page that was not there when the call asked -------------------------------------------------
const FOLLOW_MS = 1000;

// The session state's waiting calls, asked under their tool calls (or at the end of the conversation).
function showPending(pending, tools) {
  for (const p of pending || []) {
    if (document.querySelector(`.approval[data-call="${CSS.escape(p.call_id)}"]`)) continue;
    const conversation = document.getElementById('conversation');
    const node = conversation.querySelector('.msg.assistant:last-child') || messageNode('assistant');
    approvalChunk({ type: 'tool-approval-request', approvalId: p.approval_id, toolCallId: p.call_id,
      approvalDescriptor: { tool: p.tool, summary: p.summary, reason: p.reason, rule: p.rule, grant: p.grant,
        timeoutS: p.timeout_s, deadline: p.deadline, diff: p.diff } }, tools, node);
  }
}

// The turn's stream went to the page that started it: this one reads the session's state until the
// turn ends, drawing it again when its messages or waiting calls change. Switching sessions stops it.
async function followTurn(id, detail) {
  const mine = {};
  state.following = mine;
  setBusy(true);
  const seen = (d) => JSON.stringify([d.messages.length, d.pending_approvals.map((p) => p.call_id), d.session.running]);
  let last = seen(detail);
  try {
    while (detail.session.running) {
      await new Promise((resolve) => setTimeout(resolve, FOLLOW_MS));
      if (state.following !== mine || state.sessionId !== id) return;
      detail = await (await api(`/api/sessions/${encodeURIComponent(id)}`)).json();
      if (state.following !== mine || state.sessionId !== id) return;
      if (seen(detail) !== last) {
        last = seen(detail);
        showSession(detail);
      }
    }
  } finally {
    if (state.following === mine) {
      state.following = null;
      setBusy(false);
    }
  }
  await Promise.all([refreshContext(), loadSessions()]);
}

// A call the permission rules refused (it never ran): a red "denied" mark on its summary line.
function markDenied(details, reason) {
  if (details.classList.contains('denied')) return;
  details.classList.add('denied');
  details.querySelector('summary').append(el('span', { class: 'denied-mark', title: reason || 'refused' }, 'denied'));
}
