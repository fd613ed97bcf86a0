// "What's in context" opens with a picture: the window as one stacked bar, a slice per manifest segment
// grouped by kind (system, tools, rules, memory, history, summary, observations), then what is free.
// Hovering a slice names the segment, its tokens and why it is there. The slices' tokens sum to the
// figure in the caption: the manifest's `picture.figure` (the window, or the view if it is past it),
// the same numbers `nova context --json` prints.
'use strict';

const PICTURE_KINDS = ['system', 'tools', 'rules', 'memory', 'history', 'summary', 'observations'];

function drawContextPicture(manifest) {
  const figure = $('context-picture');
  if (!manifest || !manifest.picture) { figure.hidden = true; return; }
  const total = manifest.picture.figure;
  const parts = new Map(manifest.picture.parts.map((p) => [p.kind, p.tokens]));
  const width = (tokens) => `${total ? (100 * tokens / total) : 0}%`;
  const fmt = (n) => Number(n).toLocaleString('en-US');
  const slices = [];
  for (const kind of PICTURE_KINDS) {
    for (const s of manifest.segments.filter((seg) => seg.kind === kind)) {
      const slice = el('div', {
        class: `slice kind-${kind}`, 'data-kind': kind, 'data-segment': s.id, 'data-tokens': String(s.tokens),
        title: `${s.id} (${kind}) — ${fmt(s.tokens)} tokens\n${s.reason}`,
      });
      slice.style.width = width(s.tokens);
      slices.push(slice);
    }
  }
  const free = parts.get('free') || 0;
  const freeSlice = el('div', { class: 'slice kind-free', 'data-kind': 'free', 'data-tokens': String(free),
    title: `free — ${fmt(free)} tokens of the ${fmt(manifest.window)}-token window` });
  freeSlice.style.width = width(free);
  slices.push(freeSlice);
  // Where compaction starts: a mark on the bar at the threshold.
  const mark = el('div', { class: 'threshold', title: `compaction threshold: ${fmt(manifest.limit)} tokens` });
  mark.style.left = width(Math.min(manifest.limit, total));
  $('picture-bar').replaceChildren(...slices, mark);
  $('picture-bar').dataset.figure = String(total);
  $('picture-bar').setAttribute('aria-label', `${fmt(manifest.used)} of ${fmt(total)} tokens used`);
  $('picture-caption').textContent = `${fmt(manifest.used)} of ${fmt(total)} tokens in the window ` +
    `(${fmt(free)} free; compaction at ${fmt(manifest.limit)})`;
  $('picture-legend').replaceChildren(...[...PICTURE_KINDS, 'free'].filter((k) => parts.get(k)).map((kind) =>
    el('li', { 'data-kind': kind }, el('span', { class: `swatch kind-${kind}` }), `${kind} ${fmt(parts.get(kind))}`)));
  figure.hidden = false;
}
