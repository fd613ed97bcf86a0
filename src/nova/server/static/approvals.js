// Approvals on the web page: a tool call that waits for the user shows what it does and three buttons,
// Allow once / Allow for session / Deny, answered through POST /api/sessions/{id}/approvals/{call_id}.
// A denied call is marked denied, live from the stream and when a recorded session is opened.
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

function settleBox(callId, decision) {
  const box = document.querySelector(`.approval[data-call="${CSS.escape(callId)}"]`);
  if (!box || box.dataset.state === 'answered') return;
  const shown = APPROVAL_ANSWERS.find(([d]) => d === decision);
  box.dataset.state = 'answered';
  box.dataset.decision = decision;
  box.querySelector('.approval-buttons').replaceChildren(el('span', { class: `approval-answer ${decision}` },
    shown ? shown[2] : decision));
}

// A call the permission rules refused (it never ran): a red "denied" mark on its summary line.
function markDenied(details, reason) {
  if (details.classList.contains('denied')) return;
  details.classList.add('denied');
  details.querySelector('summary').append(el('span', { class: 'denied-mark', title: reason || 'refused' }, 'denied'));
}
