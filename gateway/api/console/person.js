// The person page: a day of each vital against the person's normal band with the day's
// events marked, today's medication doses, appointments, and the daily reports.
import { EVENT_WORDS, el } from "./cards.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 600;
const H = 140;
const PAD = 6;
const MARKED = new Set(["soft_sos", "hard_sos", "sos_end", "alert_updated", "fall_detected",
  "alert_escalated", "sos_acknowledged"]);

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

function fmt(v) { return String(Math.round(v * 10) / 10); }

export function chart(u, points, band, events) {
  // points: [[ts, value]], band: [low, high] or undefined, events: [{ts, type}] (epoch s).
  const fig = el("figure", { class: "chart", "data-vital": u.name });
  const label = u.label[0].toUpperCase() + u.label.slice(1);
  const normal = band ? `; normal ${fmt(band[0])} to ${fmt(band[1])} ${u.unit}` : "";
  if (!points || points.length < 2) {
    fig.append(el("figcaption", { text: `${label} (${u.unit}): not enough readings for a chart${normal}` }));
    return fig;
  }
  const vals = points.map((p) => p[1]);
  let lo = Math.min(...vals, ...(band || []));
  let hi = Math.max(...vals, ...(band || []));
  if (hi === lo) { hi += 1; lo -= 1; }
  const t0 = points[0][0];
  const t1 = points[points.length - 1][0];
  const span = Math.max(1, t1 - t0);
  const x = (t) => PAD + ((t - t0) / span) * (W - 2 * PAD);
  const y = (v) => H - PAD - ((v - lo) / (hi - lo)) * (H - 2 * PAD);
  const marks = events.filter((e) => e.ts >= t0 && e.ts <= t1 && MARKED.has(e.type));
  const summary = `${label} from ${new Date(t0 * 1000).toLocaleString()}: ${fmt(Math.min(...vals))}`
    + ` to ${fmt(Math.max(...vals))} ${u.unit}${normal}; ${marks.length} event(s) marked`;
  const pic = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": summary,
    preserveAspectRatio: "none", class: "chart-svg" });
  if (band) {
    pic.append(svg("rect", { class: "band", x: PAD, width: W - 2 * PAD, y: y(band[1]),
      height: Math.max(1, y(band[0]) - y(band[1])), fill: "#e6f4ea" }));
  }
  for (const e of marks) {
    const line = svg("line", { class: "marker", x1: x(e.ts), x2: x(e.ts), y1: 0, y2: H,
      stroke: e.type === "hard_sos" ? "#b3261e" : "#8a5a00", "stroke-width": 2,
      "stroke-dasharray": "4 3", "data-type": e.type });
    const title = svg("title", {});
    title.textContent = `${EVENT_WORDS[e.type] || e.type}, ${new Date(e.ts * 1000).toLocaleTimeString()}`;
    line.append(title);
    pic.append(line);
  }
  pic.append(svg("polyline", { points: points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
    fill: "none", stroke: "#0b57d0", "stroke-width": 2, "vector-effect": "non-scaling-stroke" }));
  fig.append(el("figcaption", { text: `${label} (${u.unit}), ${fmt(Math.min(...vals))}–`
    + `${fmt(Math.max(...vals))}${normal}. Dashed lines: ${marks.length ? marks.map((e) =>
      EVENT_WORDS[e.type] || e.type).join(", ") : "no events"}.` }), pic,
  el("p", { class: "axis", "aria-hidden": "true" },
    el("span", { text: new Date(t0 * 1000).toLocaleTimeString() }),
    el("span", { text: new Date(t1 * 1000).toLocaleTimeString() })));
  return fig;
}

async function orNull(call) {
  try { return await call(); } catch { return null; } // that part of the hub is not running
}

export async function renderPerson(root, { api, person, units, history }) {
  const id = encodeURIComponent(person.id);
  const since = Date.now() / 1000 - 86400;
  const [events, adherence, appts, reports] = await Promise.all([
    orNull(() => api(`/v1/events?person=${id}&since=${since}&limit=500`)),
    orNull(() => api(`/v1/persons/${id}/adherence`)),
    orNull(() => api(`/v1/persons/${id}/appointments`)),
    orNull(() => api(`/v1/persons/${id}/reports`)),
  ]);
  const marks = (events || []).map((e) => ({ ts: Date.parse(e.ts) / 1000, type: e.type }));
  const charts = el("div", { class: "charts" });
  for (const u of units) {
    charts.append(chart(u, (history || {})[u.name], (person.normal_ranges || {})[u.name], marks));
  }
  const meds = el("ul", { class: "plain" });
  for (const [name, m] of Object.entries((adherence && adherence.medications) || {})) {
    const rate = m.rate === null || m.rate === undefined ? "" : `, ${Math.round(m.rate * 100)} % taken`;
    meds.append(el("li", { text: `${name}: ${m.taken} of ${m.scheduled} taken today, ${m.missed}`
      + ` missed, ${m.skipped} skipped, ${m.pending} to come${rate}` }));
  }
  const bookings = el("ul", { class: "plain" });
  for (const b of (appts && appts.bookings) || []) {
    bookings.append(el("li", { text: `${b.slot || b.start} with ${b.specialist_id} (${b.status})` }));
  }
  const days = el("ul", { class: "plain" });
  for (const day of reports || []) {
    const b = el("button", { type: "button", class: "link", text: `Download the report of ${day}` });
    b.addEventListener("click", () => download(id, day));
    days.append(el("li", {}, b));
  }
  const empty = (list, words) => (list.children.length ? list : el("p", { class: "help", text: words }));
  root.replaceChildren(
    el("h2", { id: "person-title", tabindex: "-1", text: person.name }),
    el("h3", { text: "Vitals, last 24 hours" }), charts,
    el("h3", { text: "Medications today" }), adherence ? empty(meds, "No doses scheduled today.")
      : el("p", { class: "help", text: "Medication reminders are not running on this hub." }),
    el("h3", { text: "Appointments" }), empty(bookings, "No appointments booked."),
    el("h3", { text: "Daily reports" }), reports ? empty(days, "No daily reports yet.")
      : el("p", { class: "help", text: "Daily reports are not running on this hub." }),
  );
}

async function download(id, day) {
  // The report is a page of its own: saved as a file rather than shown under this page's
  // script policy (which would refuse its styles).
  const token = sessionStorage.getItem("healthgw.token");
  const res = await fetch(`/v1/persons/${id}/reports/${day}`, { headers: { Authorization: `Bearer ${token}` } });
  if (!res.ok) return;
  const url = URL.createObjectURL(await res.blob());
  const a = el("a", { href: url, download: `report-${decodeURIComponent(id)}-${day}.html` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
