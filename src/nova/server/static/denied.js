// A tool call that was refused (a deny rule, a refused approval, a run that cannot ask) is marked
// "denied" on its summary line, with the reason on hover; app.js calls it for a result that says so.
'use strict';

function markDenied(details, reason) {
  if (!details || details.classList.contains('denied')) return;
  details.classList.add('denied');
  const badge = el('span', { class: 'denied-badge', title: reason || 'refused' }, 'denied');
  details.querySelector('summary').prepend(badge, ' ');
}
