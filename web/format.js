// How money, times, waits and counts read: formatting only, nothing here knows the page.

const formatters = new Map();
function currencyFormatter(currency, display = 'symbol') {
  const key = `${currency}|${display}`;
  if (!formatters.has(key)) {
    let f;
    try {
      f = new Intl.NumberFormat(undefined, { style: 'currency', currency, currencyDisplay: display });
    } catch {
      f = null; // unknown currency code
    }
    formatters.set(key, f);
  }
  return formatters.get(key);
}

/** Amounts are integers in the currency's minor units (KRW has none: 150000 is 150,000 won). */
export function money(amount, currency, display = 'symbol') {
  const f = currencyFormatter(currency, display);
  if (!f) return `${amount} ${currency}`;
  const digits = f.resolvedOptions().maximumFractionDigits;
  return f.format(amount / 10 ** digits);
}

export const timeFormat = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' });
export const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export function describeEta(seconds) {
  if (seconds < 60) return 'less than a minute';
  if (seconds < 3600) {
    const m = Math.round(seconds / 60);
    return `about ${m} minute${m === 1 ? '' : 's'}`;
  }
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.round((seconds % 3600) / 60);
  return `about ${hours} h ${minutes} min`;
}

export function mmss(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  return `${String(Math.floor(total / 60)).padStart(2, '0')}:${String(total % 60).padStart(2, '0')}`;
}

export const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
export const listIds = (ids) => ids.join(', ');
