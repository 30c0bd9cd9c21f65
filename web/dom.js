// The page's elements, found once by id, and the DOM helpers every view uses: `h` builds
// elements without parsing HTML, `focusHeading` moves focus to what just appeared.

const $ = (id) => document.getElementById(id);
export const el = {
  eventName: $('event-name'), eventMeta: $('event-meta'), message: $('message'),
  customer: $('customer'), customerHint: $('customer-hint'),
  queueHeading: $('queue-heading'), status: $('status'), statusText: $('status-text'),
  position: $('position'), eta: $('eta'), line: $('line'), progressWrap: $('progress-wrap'), progress: $('progress'),
  join: $('join'), leave: $('leave'),
  seats: $('seats'), seatsHeading: $('seats-heading'), seatmap: $('seatmap'), overview: $('overview'),
  sectionView: $('section-view'), sectionHeading: $('section-heading'), sectionAvailability: $('section-availability'),
  back: $('back'), rowsPager: $('rows-pager'), rowsPrev: $('rows-prev'), rowsNext: $('rows-next'),
  rowsPage: $('rows-page'), rowsStatus: $('rows-status'), rowsEnd: $('rows-end'),
  rowsPrevEnd: $('rows-prev-end'), rowsNextEnd: $('rows-next-end'),
  selection: $('selection'), hold: $('hold'), refresh: $('refresh'), seatsUpdated: $('seats-updated'),
  holdMinutes: $('hold-minutes'),
  order: $('order'), orderHeading: $('order-heading'), orderDetails: $('order-details'),
  countdown: $('countdown'), orderState: $('order-state'), pay: $('pay'), release: $('release'),
  ticketSection: $('ticket-section'), ticketHeading: $('ticket-heading'), ticketWait: $('ticket-wait'),
  ticket: $('ticket'), again: $('again'), dismiss: $('dismiss'),
};

/** Builds an element: h('p', {class: 'x', dataset: {a: 1}}, 'text', child). Never parses HTML. */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function focusHeading(heading) {
  // Move keyboard and screen-reader focus to the part of the page that just appeared.
  requestAnimationFrame(() => {
    heading.scrollIntoView({ block: 'start' });
    heading.focus({ preventScroll: true });
  });
}
