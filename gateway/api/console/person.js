// The person page: a day of each vital against the person's normal band with the day's
// events marked, today's medication doses, appointments, and the daily reports.
import { el } from "./cards.js";
import { chart } from "./chart.js";
import { showReport } from "./report.js";

const MARKED = new Set(["soft_sos", "hard_sos", "sos_end", "alert_updated", "fall_detected",
  "alert_escalated", "sos_acknowledged"]);

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
  const marks = (events || []).filter((e) => MARKED.has(e.type))
    .map((e) => ({ ts: Date.parse(e.ts) / 1000, type: e.type }));
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
    // "with Dr Patel, cardiologist": the id only when the household no longer lists them.
    const who = b.specialist_name
      ? `${b.specialist_name}${b.specialization ? `, ${b.specialization}` : ""}`
      : b.specialist_id;
    bookings.append(el("li", { text: `${b.slot || b.start} with ${who} (${b.status})` }));
  }
  const days = el("ul", { class: "plain" });
  const viewer = el("section", { id: "report-view", "aria-label": "Daily report" });
  for (const day of reports || []) {
    const show = el("button", { type: "button", class: "link", text: `Read the report of ${day}` });
    show.addEventListener("click", () => showReport(viewer, { api, id, day, units }));
    const b = el("button", { type: "button", class: "link", text: `Download the report of ${day}` });
    b.addEventListener("click", () => download(id, day));
    days.append(el("li", { class: "report-day" }, show, " · ", b));
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
    viewer,
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
