// Progress on the page while the model keeps a turn waiting: a line at the end of the answer says
// "waiting for the model · 3.2 s" from the moment a request is sent until its first token, and each
// retry leaves a notice with its delay and reason ("retrying in 2.0 s (attempt 2 of 4): 529 overloaded"),
// the same words as the terminal. Fed by app.js's stream loop: novaProgress.chunk(chunk, node).
'use strict';

const novaProgress = (() => {
  const SPIN = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';
  let since = null;
  let timer = null;
  let line = null;

  function draw() {
    if (!line || since === null) return;
    const now = performance.now();
    const frame = SPIN[Math.floor(now / 100) % SPIN.length];
    line.textContent = `${frame} waiting for the model · ${((now - since) / 1000).toFixed(1)} s`;
  }

  function start(node) {
    stop();
    since = performance.now();
    line = document.createElement('div');
    line.className = 'notice waiting';
    line.setAttribute('role', 'status');
    node.append(line);
    draw();
    timer = setInterval(draw, 100);
  }

  function stop() {
    if (timer !== null) clearInterval(timer);
    if (line) line.remove();
    since = null;
    timer = null;
    line = null;
  }

  function retry(node, data) {
    stop();
    const notice = document.createElement('div');
    notice.className = 'notice retry';
    notice.textContent = data.text;
    node.append(notice);
  }

  // The turn ended however it ended (a stopped or failed fetch too): app.js clears body[data-busy].
  new MutationObserver(() => {
    if (document.body.dataset.busy !== 'true') stop();
  }).observe(document.body, { attributes: true, attributeFilter: ['data-busy'] });

  return {
    chunk(chunk, node) {
      switch (chunk.type) {
        case 'data-nova-waiting':
          if (chunk.data.waiting) start(node); else stop();
          break;
        case 'data-nova-retry': retry(node, chunk.data); break;
        case 'text-delta': case 'tool-input-available': case 'finish': case 'error': stop(); break;
        default: break;
      }
    },
    get waiting() { return line !== null; },
  };
})();
