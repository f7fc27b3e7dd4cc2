// A daily report read in the page: the summary, the charts (drawn from the report's own chart
// dict, the one its PNGs were drawn from: same series, bands, markers and gaps), then the
// tables. Every number is set as text, never as HTML.
import { el } from "./cards.js";
import { chart } from "./chart.js";

function when(iso, report) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const text = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", timeZone: report.tz });
  const day = d.toLocaleDateString("en-CA", { timeZone: report.tz });
  return day === report.date ? text : `${d.toLocaleDateString([], { day: "numeric", month: "short",
    timeZone: report.tz })} ${text}`;
}

function duration(minutes) {
  const m = Math.round(Number(minutes) || 0);
  return m >= 60 ? `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, "0")} min` : `${m} min`;
}

function table(caption, headers, rows) {
  const t = el("table", {}, el("caption", { text: caption }));
  const head = el("tr");
  for (const h of headers) head.append(el("th", { scope: "col", text: h }));
  t.append(el("thead", {}, head));
  const body = el("tbody");
  for (const r of rows) {
    const tr = el("tr");
    for (const c of r) {
      const num = typeof c === "number";
      tr.append(el("td", { class: num ? "num" : null, text: c === null || c === undefined ? "–" : String(c) }));
    }
    body.append(tr);
  }
  t.append(body);
  return el("div", { class: "scroll" }, t);
}

export function renderReport(root, { report, charts }, units) {
  const sos = report.sos || {};
  const count = (k) => (sos[k] || {}).count || 0;
  const times = (k) => ((sos[k] || {}).times || []).map((t) => when(t, report)).join(", ");
  const gaps = report.device_gaps || {};
  const parts = [
    el("h3", { id: "report-title", tabindex: "-1",
      text: `Daily report of ${report.name || report.person}, ${report.date}` }),
  ];
  if (report.narrative) parts.push(el("div", { class: "narrative" }, ...String(report.narrative)
    .split("\n\n").filter((p) => p.trim()).map((p) => el("p", { text: p }))));
  parts.push(el("p", { class: "summary", text: [`${report.readings || 0} readings`,
    `hard SOS ${count("hard")}`, `soft SOS ${count("soft")}`,
    `alerts in synced data ${count("retrospective")}`,
    `device gaps ${gaps.count || 0} (${duration(gaps.total_minutes)})`].join(" · ") }));
  const figs = el("div", { class: "charts" });
  const marks = (charts.markers || []).map((m) => ({ ts: m.ts, type: m.kind, label: m.label }));
  for (const [name, s] of Object.entries(charts.series || {})) {
    // The vital's words and unit as the cards say them (the report's label carries its unit).
    const u = units.find((x) => x.name === name) || { name, label: s.label, unit: "" };
    figs.append(chart(u, s.points, s.normal, marks,
      { start: charts.start, end: charts.end, gaps: charts.gaps, tz: charts.tz }));
  }
  parts.push(figs.children.length ? figs : el("p", { class: "help", text: "No readings that day." }));
  const vitals = Object.entries(report.vitals || {}).filter(([, s]) => s && s.n);
  const label = (v) => (charts.series && charts.series[v] && charts.series[v].label) || v;
  parts.push(table("Vitals", ["Vital", "Readings", "Lowest", "Average", "Highest",
    "Minutes out of range", "% of time out of range"], vitals.map(([v, s]) => [label(v), s.n,
    s.min, s.mean, s.max, s.out_of_range_minutes, s.out_of_range_pct])));
  const n2 = report.news2_max;
  const an = report.anomalies || {};
  parts.push(table("Alerts", ["Item", "Count", "Times"], [
    ["Hard SOS (button)", count("hard"), times("hard")],
    ["Soft SOS (vitals alert)", count("soft"), times("soft")],
    ["Alerts found in synced data (nobody was alerted)", count("retrospective"), times("retrospective")],
    ["Anomalies", an.count || 0, (an.times || []).map((t) => when(t, report)).join(", ")],
    ["Highest NEWS2", n2 ? n2.value : null, n2 ? when(n2.time, report) : ""],
  ]));
  const listed = gaps.listed || [];
  parts.push(listed.length
    ? table(`Device gaps: ${gaps.count} in all, ${duration(gaps.total_minutes)}`
      + (gaps.count > listed.length ? `; the ${listed.length} longest` : ""),
    ["Device", "From", "To", "Minutes"],
    listed.map((g) => [g.device, when(g.start, report), when(g.end, report), g.minutes]))
    : el("p", { class: "help", text: "No device was silent for longer than expected." }));
  const sleep = report.sleep || {};
  const nights = sleep.sessions || [];
  const st = sleep.stages;
  parts.push(nights.length
    ? table(`Sleep: ${duration(sleep.total_minutes)} asleep` + (st ? ` (deep ${duration(st.deep)},`
      + ` light ${duration(st.light)}, REM ${duration(st.rem)}; awake ${duration(st.awake)})` : ""),
    ["From", "To", "Minutes asleep"], nights.map((x) => [when(x.start, report), when(x.end, report), x.minutes]))
    : el("p", { class: "help", text: "No sleep was recorded." }));
  const meds = Object.entries((report.adherence || {}).medications || {});
  parts.push(meds.length
    ? table("Medication", ["Medication", "Scheduled", "Taken", "Missed", "Skipped"],
      meds.map(([m, a]) => [m, a.scheduled, a.taken, a.missed, a.skipped]))
    : el("p", { class: "help", text: "No doses were scheduled that day." }));
  root.replaceChildren(...parts);
}

export async function showReport(root, { api, id, day, units }) {
  root.replaceChildren(el("p", { class: "help", role: "status", text: `Opening the report of ${day}…` }));
  try {
    renderReport(root, await api(`/v1/persons/${id}/reports/${day}/data`), units);
    root.querySelector("#report-title").focus();
  } catch (e) {
    root.replaceChildren(el("p", { role: "alert", text: `The report of ${day} could not be opened: ${e.message}` }));
  }
}
