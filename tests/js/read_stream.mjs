// Sends one message to a Nova session with the AI SDK's own client (DefaultChatTransport, what useChat
// uses) and rebuilds the assistant message with readUIMessageStream. Prints one JSON object: every chunk
// type seen, the rebuilt message's parts, and any error the SDK reported.
//
// A tool call that waits for approval (`tool-approval-request`) is answered with the next of the
// comma-separated decisions (once, session or deny) through POST /api/sessions/{id}/approvals/{call}.
//
//   node read_stream.mjs <base-url> <token> <session-id> <prompt> [decisions]
import { DefaultChatTransport, readUIMessageStream } from 'ai';

const [base, token, sessionId, prompt, decisionList = ''] = process.argv.slice(2);
const errors = [];
const chunkTypes = [];
const decisions = decisionList ? decisionList.split(',') : [];
const approvals = [];

async function answer(chunk) {
  const decision = decisions.shift() ?? 'deny';
  const response = await fetch(
    `${base}/api/sessions/${encodeURIComponent(sessionId)}/approvals/${encodeURIComponent(chunk.toolCallId)}`,
    { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision }) });
  approvals.push({ toolCallId: chunk.toolCallId, approvalId: chunk.approvalId, decision, status: response.status });
}

const transport = new DefaultChatTransport({
  api: `${base}/api/sessions/${encodeURIComponent(sessionId)}/messages`,
  headers: { authorization: `Bearer ${token}` },
});

const chunks = await transport.sendMessages({
  chatId: sessionId,
  trigger: 'submit-message',
  messageId: undefined,
  abortSignal: undefined,
  messages: [{ id: 'user-1', role: 'user', parts: [{ type: 'text', text: prompt }] }],
});

// Count every chunk on its way to the SDK's message builder.
const counted = chunks.pipeThrough(new TransformStream({
  async transform(chunk, controller) {
    chunkTypes.push(chunk.type);
    controller.enqueue(chunk);
    if (chunk.type === 'tool-approval-request') await answer(chunk);
  },
}));

let message;
for await (const snapshot of readUIMessageStream({
  stream: counted,
  onError: (error) => errors.push(String(error)),
  terminateOnError: true,
})) {
  message = snapshot;
}

console.log(JSON.stringify({
  chunkTypes,
  errors,
  approvals,
  messageId: message?.id,
  role: message?.role,
  parts: message?.parts ?? [],
}));
