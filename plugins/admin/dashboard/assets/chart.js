// Small inline SVG charts: a series of numbers as a line with its latest value.
import { el } from './form.js';

const NS = 'http://www.w3.org/2000/svg';
const W = 240;
const H = 48;

export function sparkline(values, label, kind = '') {
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('class', `spark ${kind}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  const max = Math.max(0, ...values);
  // The drawing's scale has a floor of 1 (an all-zero series is a flat line at the bottom); the caption says the real max.
  const scale = Math.max(1, max);
  const step = values.length > 1 ? W / (values.length - 1) : W;
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(H - 2 - (v / scale) * (H - 4)).toFixed(1)}`).join(' ');
  const line = document.createElementNS(NS, 'polyline');
  line.setAttribute('points', points || `0,${H - 2} ${W},${H - 2}`);
  svg.append(line);
  const last = values.at(-1) ?? 0;
  return el('figure', { class: 'spark-box' }, svg, el('figcaption', { text: `${label}: ${last} now, max ${max}` }));
}
