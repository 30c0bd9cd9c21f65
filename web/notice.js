// The notice bar: the one place the page tells the customer what happened (errors as alerts).

import { el, h } from './dom.js';

/** Shows the latest notice. kind: info | success | error. `code`: the API's error code, kept
 *  on the notice (data-code); `action`: {label, run}, a button offering the obvious next step. */
export function notify(text, kind = 'info', { code, action } = {}) {
  // role=alert makes errors interrupt; everything else is announced politely.
  el.message.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  el.message.setAttribute('aria-live', kind === 'error' ? 'assertive' : 'polite');
  el.message.dataset.kind = kind;
  if (code) el.message.dataset.code = code;
  else delete el.message.dataset.code;
  el.message.replaceChildren(
    h('span', { class: 'message-icon', 'aria-hidden': 'true' }, { info: 'ℹ', success: '✓', error: '!' }[kind] ?? 'ℹ'),
    h('span', { class: 'message-text' },
      h('strong', {}, { info: 'Note: ', success: 'Done: ', error: 'Problem: ' }[kind] ?? ''), text,
      action ? h('button', { type: 'button', class: 'secondary notice-action', onclick: () => { clearNotice(); action.run(); } }, action.label) : null),
  );
  el.dismiss.hidden = false;
}

export function clearNotice() {
  el.dismiss.hidden = true;
  el.message.replaceChildren();
  delete el.message.dataset.kind;
  el.message.setAttribute('role', 'status');
  el.message.setAttribute('aria-live', 'polite');
}
