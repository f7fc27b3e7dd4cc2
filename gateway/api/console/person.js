// The person page: a day of each vital against the person's normal band with the day's
// events marked, today's medication doses, appointments, the daily reports, and (admin and
// family only: it is PHI) the summary for the GP as a PDF.
import { el } from "./cards.js";
import { chart } from "./chart.js";
import { showReport } from "./report.js";

const MARKED = new Set(["soft_sos", "hard_sos", "sos_end", "alert_updated", "fall_detected",
  "alert_escalated", "sos_acknowledged"]);

async function orNull(call) {
  try { return await call(); } catch { return null; } // that part of the hub is not running
}

export async function renderPerson(root, { api, person, units, history, role }) {
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
    role === "admin" || role === "family" ? summaryForm(id) : null,
  );
}

const isoDay = (d) => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;

function summaryForm(id) {
  // The summary holds everything a GP needs (and so is PHI): a viewer never sees this, and
  // the API refuses a viewer's token anyway. Every download is audited on the hub.
  const today = new Date();
  const from = new Date(today.getFullYear(), today.getMonth(), today.getDate() - 13);
  const since = el("input", { type: "date", id: "summary-since", value: isoDay(from), required: true });
  const until = el("input", { type: "date", id: "summary-until", value: isoDay(today), required: true });
  const status = el("p", { id: "summary-status", class: "help", role: "status", "aria-live": "polite" });
  const button = el("button", { type: "submit", id: "summary-download", text: "Summary for the GP (PDF)" });
  const form = el("form", { id: "summary-form", "aria-labelledby": "summary-title" },
    el("h3", { id: "summary-title", text: "Summary for the GP" }),
    el("p", { class: "help", text: "Vitals against their band with alerts and SOS marked, NEWS2 each day,"
      + " medications, what the hub asked and the answers, device gaps: two A4 pages. Default: the"
      + " last 14 days (31 at most). Your download is recorded on the hub." }),
    el("label", { for: "summary-since", text: "From " }), since, " ",
    el("label", { for: "summary-until", text: "to " }), until, " ",
    button, status);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    button.disabled = true;
    status.textContent = "Making the summary…";
    try {
      status.textContent = await downloadSummary(id, since.value, until.value);
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

async function downloadSummary(id, since, until) {
  const token = sessionStorage.getItem("healthgw.token");
  const query = new URLSearchParams({ since, until });
  const res = await fetch(`/v1/persons/${id}/summary.pdf?${query}`,
    { headers: { Authorization: `Bearer ${token}` }, cache: "no-store" });
  if (!res.ok) {
    let detail = res.statusText;
    try {
      const body = await res.json();
      detail = typeof body.detail === "string" ? body.detail : "those dates are not valid";
    } catch { /* not JSON */ }
    return `No summary: ${detail}.`;
  }
  const name = (/filename="([^"]+)"/.exec(res.headers.get("Content-Disposition") || "") || [])[1]
    || `summary-${decodeURIComponent(id)}.pdf`;
  const url = URL.createObjectURL(await res.blob());
  const a = el("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
  return `Downloaded ${name}.`;
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
