// Runs the page's progress.js in Node's VM with a minimal DOM (no packages needed) and feeds it the
// stream parts a retried turn carries. Prints one JSON object for the Python test to judge.
//
//   node progress_check.mjs <path/to/progress.js>
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

class Node {
  constructor(tag) { this.tag = tag; this.children = []; this.parent = null; this.textContent = ''; this.className = ''; this.attrs = {}; }
  append(child) { child.parent = this; this.children.push(child); }
  remove() { if (this.parent) this.parent.children = this.parent.children.filter((c) => c !== this); this.parent = null; }
  setAttribute(k, v) { this.attrs[k] = v; }
}
const observers = [];
const body = new Node('body');
body.dataset = { busy: 'true' };
let clock = 1000;
const timers = new Map();
const context = {
  document: { body, createElement: (tag) => new Node(tag) },
  performance: { now: () => clock },
  setInterval: (fn) => { const id = timers.size + 1; timers.set(id, fn); return id; },
  clearInterval: (id) => timers.delete(id),
  MutationObserver: class { constructor(fn) { this.fn = fn; observers.push(this); } observe() {} },
};
vm.createContext(context);
vm.runInContext(readFileSync(process.argv[2], 'utf8') + '\nglobalThis.novaProgress = novaProgress;', context);
const progress = context.novaProgress;
const answer = new Node('div');
const texts = () => answer.children.map((c) => `${c.className}: ${c.textContent}`);
const tick = (ms) => { clock += ms; for (const fn of timers.values()) fn(); };
const seen = {};

progress.chunk({ type: 'data-nova-waiting', data: { waiting: true, attempt: 1, waitedS: 0 } }, answer);
tick(3250);
seen.waiting = texts();
progress.chunk({ type: 'data-nova-retry', data: { text: 'retrying in 2.0 s (attempt 2 of 4): 529 overloaded' } }, answer);
seen.afterRetry = texts();
progress.chunk({ type: 'data-nova-waiting', data: { waiting: true, attempt: 2, waitedS: 0 } }, answer);
tick(400);
seen.secondWait = texts();
progress.chunk({ type: 'text-delta', id: 't', delta: 'hi' }, answer);
seen.answered = texts();
seen.timersLeft = timers.size;
progress.chunk({ type: 'data-nova-waiting', data: { waiting: true, attempt: 1, waitedS: 0 } }, answer);
body.dataset.busy = 'false';
for (const o of observers) o.fn();
seen.afterStop = texts();
console.log(JSON.stringify(seen));
