// Sends one message to a Nova session with the AI SDK's own client (DefaultChatTransport, what useChat
// uses) and rebuilds the assistant message with readUIMessageStream. Prints one JSON object: every chunk
// type seen, the rebuilt message's parts, and any error the SDK reported.
//
//   node read_stream.mjs <base-url> <token> <session-id> <prompt>
import { DefaultChatTransport, readUIMessageStream } from 'ai';

const [base, token, sessionId, prompt] = process.argv.slice(2);
const errors = [];
const chunkTypes = [];

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
  transform(chunk, controller) {
    chunkTypes.push(chunk.type);
    controller.enqueue(chunk);
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
  messageId: message?.id,
  role: message?.role,
  parts: message?.parts ?? [],
}));
