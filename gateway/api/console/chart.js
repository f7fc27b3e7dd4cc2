// One chart of one vital: the line (broken where the device was silent), the person's normal
// band, grey stretches without readings, and event markers that the caption also names (colour
// is never the only signal). The person page's day and the daily report's charts both use it.
import { EVENT_WORDS, el } from "./cards.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 600;
const H = 140;
const PAD = 6;

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

export function fmt(v) { return String(Math.round(v * 10) / 10); }

const MARK_STYLE = { hard_sos: ["#b3261e", ""], fall_detected: ["#1b1f24", ""],
  anomaly: ["#6b2fa0", "2 3"] }; // the rest amber, dashed: the caption names every mark

function ticks(t0, t1, tz) {
  // A whole day (the report's, in the household's zone): its clock every 6 hours. Otherwise
  // the first and last reading's times, in the reader's own zone.
  if (!tz) return [t0, t1].map((t) => el("span", { text: new Date(t * 1000).toLocaleTimeString() }));
  const clock = (t) => new Date(t * 1000).toLocaleTimeString("en-GB", { hour: "2-digit",
    minute: "2-digit", timeZone: tz });
  return [0, 1, 2, 3, 4].map((k) => el("span", { text: k === 4 ? "24:00" : clock(t0 + (k * (t1 - t0)) / 4) }));
}

export function chart(u, points, band, marks, span = {}) {
  // points: [[ts, value or null]] (null: the device was silent, the line breaks there);
  // band: [low, high] or null; marks: [{ts, type, label}]; span: {start, end, gaps, tz} for a
  // whole day (the report's charts), else the chart spans its points. Times in epoch s.
  // The report page's PNGs and this draw the same chart dict (the report's charts.json).
  const fig = el("figure", { class: "chart", "data-vital": u.name });
  const label = u.label[0].toUpperCase() + u.label.slice(1);
  const normal = band ? `; normal ${fmt(band[0])} to ${fmt(band[1])} ${u.unit}` : "";
  const known = (points || []).filter((p) => p[1] !== null && p[1] !== undefined);
  if (known.length < 2) {
    fig.append(el("figcaption", { text: `${label} (${u.unit}): not enough readings for a chart${normal}` }));
    return fig;
  }
  const vals = known.map((p) => p[1]);
  let lo = Math.min(...vals, ...(band || []));
  let hi = Math.max(...vals, ...(band || []));
  if (hi === lo) { hi += 1; lo -= 1; }
  const t0 = span.start ?? known[0][0];
  const t1 = span.end ?? known[known.length - 1][0];
  const width = Math.max(1, t1 - t0);
  const x = (t) => PAD + ((t - t0) / width) * (W - 2 * PAD);
  const y = (v) => H - PAD - ((v - lo) / (hi - lo)) * (H - 2 * PAD);
  const shown = marks.filter((e) => e.ts >= t0 && e.ts <= t1);
  const gaps = (span.gaps || []).filter((g) => g.end > t0 && g.start < t1);
  const words = (e) => e.label || EVENT_WORDS[e.type] || e.type;
  const summary = `${label} from ${new Date(t0 * 1000).toLocaleString()}: ${fmt(Math.min(...vals))}`
    + ` to ${fmt(Math.max(...vals))} ${u.unit}${normal}; ${shown.length} event(s) marked`
    + (gaps.length ? `; ${gaps.length} stretch(es) without readings` : "");
  const pic = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": summary,
    preserveAspectRatio: "none", class: "chart-svg" });
  if (band) {
    pic.append(svg("rect", { class: "band", x: PAD, width: W - 2 * PAD, y: y(band[1]),
      height: Math.max(1, y(band[0]) - y(band[1])), fill: "#e6f4ea" }));
  }
  for (const g of gaps) {
    const a = x(Math.max(g.start, t0));
    const gap = svg("rect", { class: "gap", x: a, width: Math.max(1, x(Math.min(g.end, t1)) - a),
      y: 0, height: H, fill: "#d5d8dd" });
    const title = svg("title", {});
    title.textContent = `No readings from ${g.device || "a device"}, `
      + `${new Date(g.start * 1000).toLocaleTimeString()} to ${new Date(g.end * 1000).toLocaleTimeString()}`;
    gap.append(title);
    pic.append(gap);
  }
  for (const e of shown) {
    const [stroke, dash] = MARK_STYLE[e.type] || ["#8a5a00", "4 3"];
    const line = svg("line", { class: "marker", x1: x(e.ts), x2: x(e.ts), y1: 0, y2: H,
      stroke, "stroke-width": 2, "stroke-dasharray": dash, "data-type": e.type });
    const title = svg("title", {});
    title.textContent = `${words(e)}, ${new Date(e.ts * 1000).toLocaleTimeString()}`;
    line.append(title);
    pic.append(line);
  }
  // One line per run of readings: a silent device breaks the line rather than bridging it.
  let run = [];
  const flush = () => {
    if (run.length === 1) { // a reading alone between silences: a short dash, not nothing
      const [px, py] = run[0].split(",").map(Number);
      run = [`${(px - 3).toFixed(1)},${py}`, `${(px + 3).toFixed(1)},${py}`];
    }
    if (run.length) {
      pic.append(svg("polyline", { points: run.join(" "), fill: "none", stroke: "#0b57d0",
        "stroke-width": 2, "vector-effect": "non-scaling-stroke" }));
    }
    run = [];
  };
  for (const [t, v] of points) {
    if (v === null || v === undefined) flush();
    else run.push(`${x(t).toFixed(1)},${y(v).toFixed(1)}`);
  }
  flush();
  const named = [...new Set(shown.map(words))];
  fig.append(el("figcaption", { text: `${label} (${u.unit}), ${fmt(Math.min(...vals))}–`
    + `${fmt(Math.max(...vals))}${normal}. Marked: ${named.length ? named.join(", ") : "no events"}.`
    + (gaps.length ? ` Grey: ${gaps.length} stretch(es) without readings.` : "") }), pic,
  el("p", { class: "axis", "aria-hidden": "true" }, ...ticks(t0, t1, span.tz)));
  return fig;
}
