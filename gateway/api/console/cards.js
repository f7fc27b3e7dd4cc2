// Rendering only: builds DOM nodes and sets their textContent (never as HTML), so a name or a
// message from the API can never become markup.

export const NEWS2_WORDS = {
  low: "Low", "low-medium": "Low–medium", medium: "Medium", high: "High",
};
export const EVENT_WORDS = {
  soft_sos: "Soft SOS", advisory: "Low-priority alert", hard_sos: "SOS pressed", sos_end: "SOS ended",
  sos_escalated: "SOS escalated", sos_acknowledged: "SOS acknowledged",
  sos_unacknowledged: "SOS not acknowledged", alert_updated: "Alert updated",
  alert_cleared: "Alert cleared", alert_escalated: "Alert escalated",
  device_stale: "Device stale", device_recovered: "Device back", device_not_worn: "Device not worn",
  device_offline: "Device offline", device_online: "Device online", battery_low: "Battery low",
  fall_detected: "Fall detected", implausible_reading: "Implausible reading",
  unconfirmed_reading: "One reading asked about", question_withdrawn: "Question withdrawn",
  medication_missed: "Dose missed", medication_warning: "Medication warning",
  appointment_booked: "Appointment booked", report_ready: "Daily report ready",
  monitoring_degraded: "Monitoring degraded", monitoring_recovered: "Monitoring recovered",
  notification_sent: "Text sent", notification_failed: "Text failed",
  notification_pending: "Text waiting", prompt_answered: "Prompt answered",
  retrospective_alert: "Alert in late data", component_failed: "Hub part failed",
  component_restarted: "Hub part restarted", outbox_high: "Outbox filling",
  device_clock_skew: "Device clock wrong",
};
export const URGENT = new Set([
  "hard_sos", "soft_sos", "sos_escalated", "sos_unacknowledged", "alert_escalated",
  "fall_detected", "monitoring_degraded", "notification_failed", "component_failed",
]);
const BAD_STATES = new Set(["stale", "offline", "not_worn"]);

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

export function ago(epochSeconds) {
  if (epochSeconds === null || epochSeconds === undefined) return "never";
  const t = typeof epochSeconds === "number" ? epochSeconds : Date.parse(epochSeconds) / 1000;
  if (!Number.isFinite(t)) return "unknown";
  const s = Math.max(0, Date.now() / 1000 - t);
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(t * 1000).toLocaleString();
}

function news2Badge(news2) {
  if (!news2 || !news2.level) return el("span", { class: "news2 none", text: "NEWS2: no score yet" });
  const words = NEWS2_WORDS[news2.level] || news2.level;
  return el("span", {
    class: `news2 ${news2.level}`,
    text: `NEWS2 ${news2.total} · ${words}`,
    "data-level": news2.level,
  });
}

function fmt(value) {
  return typeof value === "number" ? String(Math.round(value * 10) / 10) : String(value);
}

const SVG = "http://www.w3.org/2000/svg";

function sparkline(points, u) {
  // The last 24 h (or what the history read held) as a line; the numbers are in the label,
  // so a screen reader hears the range rather than a picture.
  if (!points || points.length < 2) return el("dd", { class: "spark" });
  const vals = points.map((p) => p[1]);
  const lo = Math.min(...vals);
  const hi = Math.max(...vals);
  const t0 = points[0][0];
  const span = Math.max(1, points[points.length - 1][0] - t0);
  const coords = points.map(([t, v]) => `${((t - t0) / span * 78 + 1).toFixed(1)},`
    + `${(19 - (hi === lo ? 9 : (v - lo) / (hi - lo) * 18)).toFixed(1)}`).join(" ");
  const svg = document.createElementNS(SVG, "svg");
  for (const [k, v] of Object.entries({ viewBox: "0 0 80 20", width: "80", height: "20",
    role: "img", "aria-label": `${u.label} since ${new Date(t0 * 1000).toLocaleString()}:`
      + ` ${fmt(lo)} to ${fmt(hi)} ${u.unit}` })) svg.setAttribute(k, v);
  const line = document.createElementNS(SVG, "polyline");
  for (const [k, v] of Object.entries({ points: coords, fill: "none", stroke: "#0b57d0",
    "stroke-width": "1.5" })) line.setAttribute(k, v);
  svg.append(line);
  return el("dd", { class: "spark" }, svg);
}

function vitalsList(person, units, history) {
  const dl = el("dl", { class: "vitals" });
  const latest = person.vitals || {};
  for (const u of units) {
    const v = latest[u.name];
    if (!v) continue;
    const value = typeof v === "object" ? v.value : v;
    dl.append(el("dt", { text: u.label[0].toUpperCase() + u.label.slice(1) }),
      el("dd", { text: `${fmt(value)} ${u.unit}`, "data-vital": u.name }),
      sparkline((history || {})[u.name], u));
  }
  return dl.children.length ? dl : el("p", { class: "help", text: "No readings yet." });
}

function deviceList(person, devices) {
  const ul = el("ul", { class: "devices", "aria-label": "Devices" });
  for (const d of devices.filter((x) => x.person === person.id)) {
    const battery = d.battery === null || d.battery === undefined ? "battery unknown"
      : `battery ${Math.round(d.battery)} %`;
    // The monitor names a state only once it changes (stale, recovered...): a device that
    // has only ever reported is "unknown" to it, which reads as broken to a person.
    const word = d.state === "unknown" && d.last_seen ? "reporting" : d.state;
    const state = el("span", { class: BAD_STATES.has(d.state) ? "state-bad" : "", text: word });
    ul.append(el("li", {}, `${d.device} (${d.kind || "device"}): state `, state,
      ` · ${battery} · last seen ${ago(d.last_seen)}`));
  }
  return ul;
}

export function conditionWords(condition, units) {
  // "spo2_low" -> "Oxygen saturation low", with the vitals table's words (GET /v1/vitals).
  if (!condition) return "Alert";
  if (condition === "news2") return "NEWS2 score";
  if (condition === "meows") return "Maternity early warning score";
  if (condition === "fever_amber") return "Fever with fast breathing or pulse";
  const m = /^(.*)_(low|high)$/.exec(condition);
  const vital = m && units.find((u) => u.name === m[1]);
  const words = vital ? `${vital.label} ${m[2]}` : condition.replaceAll("_", " ");
  return words[0].toUpperCase() + words.slice(1);
}

// An alert's severity in words, with its IEC 60601-1-8 priority (the API gives both).
const SEVERITY_WORDS = {
  abnormal: "outside the normal range", critical: "critical", intervention: "needs a clinician",
  low: "low", "low-medium": "one red value", medium: "medium", high: "high",
};
const PRIORITY_WORDS = {
  information: "usual for them", low: "low priority", medium: "medium priority",
  high: "high priority",
};

function alertList(person, units) {
  const alerts = person.open_alerts || [];
  if (!alerts.length) return el("p", { class: "help", text: "No open alerts." });
  const ul = el("ul", { class: "alerts", "aria-label": "Open alerts" });
  for (const a of alerts) {
    const sev = SEVERITY_WORDS[a.peak_severity || a.severity] || "open";
    const pri = PRIORITY_WORDS[a.priority];
    ul.append(el("li", { class: ["low", "information"].includes(a.priority) ? "low" : "",
      text: `${conditionWords(a.condition, units)} (${pri ? `${pri}, ` : ""}${sev}),`
        + ` since ${ago(a.opened_at)}` }));
  }
  return ul;
}

const SOS_HEADINGS = {
  waiting: "SOS open: nobody has said they are on the way yet",
  exhausted: "SOS open: every step of the ladder tried, nobody has acknowledged",
};

const PURPOSES = { direct: "Ambulance", contact: "Emergency contact", clinician: "Care line" };

function purposeWords(purpose) {
  // "sos:direct", "soft_sos:contact", "ladder:..." -> who the text was for, in words.
  const [what, who] = purpose.split(":");
  if (what === "ladder") return "Reminder";
  return PURPOSES[who] || purpose.replaceAll("_", " ");
}

const ACKERS = { admin: "the admin", family: "a family member", mqtt: "someone on a device",
  sms: "an emergency contact (by text)" };

export function whoAcked(by) {
  // "family:console" -> "a family member (console)": the role the API recorded, in words.
  if (!by) return "someone";
  const [role, ...rest] = String(by).split(":");
  const words = ACKERS[role];
  return words ? `${words}${rest.length ? ` (${rest.join(":")})` : ""}` : String(by);
}

function sosBox(person, ladder, can, actions) {
  // The ladder's newest run: waiting, acked or exhausted while the SOS is open.
  if (!ladder || ladder.state === "ended") return null;
  const box = el("div", { class: "sos", role: "group", "aria-label": `SOS for ${person.name}`,
    "data-ladder": ladder.state });
  const heading = ladder.state === "acked" ? `SOS: ${whoAcked(ladder.acked_by)} is on the way`
    : SOS_HEADINGS[ladder.state] || `SOS: ${ladder.state}`;
  box.append(el("h4", { text: heading }));
  const ul = el("ul", { "aria-label": "Texts sent" });
  for (const t of ladder.texts || []) {
    ul.append(el("li", { text: `${purposeWords(String(t.purpose || ""))} ${t.to}: ${t.delivery || t.state}` }));
  }
  if (ul.children.length) box.append(ul);
  if (can.ack && ladder.state !== "acked") {
    const b = el("button", { type: "button", class: "warn", "data-action": "ack",
      "data-person": person.id, text: "I'm on my way" });
    b.addEventListener("click", () => actions.ack(person.id));
    box.append(b);
  }
  return box;
}

const IF_NO_ANSWER = { contacts: "the emergency contacts are texted", hard_sos: "an SOS starts" };

function promptList(person) {
  // "Are you OK?" questions the wearer has not answered yet, and what happens if they don't.
  const prompts = person.pending_prompts || [];
  if (!prompts.length) return null;
  const ul = el("ul", { class: "alerts", "aria-label": "Waiting for an answer" });
  for (const p of prompts) {
    const then = IF_NO_ANSWER[p.on_no_answer];
    const by = new Date(p.deadline * 1000).toLocaleTimeString();
    ul.append(el("li", { "data-prompt": p.reason, text: then
      ? `Asked "are you OK?" on the watch: no answer yet. If none by ${by}, ${then}.`
      : `Asked "are you OK?" on the watch: no answer yet.` }));
  }
  return ul;
}

export function renderCards(list, snap, ladders, units, can, actions, history = {}) {
  const items = [];
  for (const person of snap.persons) {
    const card = el("article", { class: "card", "aria-labelledby": `name-${person.id}`,
      "data-person": person.id });
    card.append(el("h3", { id: `name-${person.id}` }, el("span", { text: person.name }),
      news2Badge(person.news2)));
    const sos = sosBox(person, ladders[person.id], can, actions);
    if (sos) card.append(sos);
    card.append(vitalsList(person, units, history[person.id]), deviceList(person, snap.devices),
      alertList(person, units));
    const asked = promptList(person);
    if (asked) card.append(asked);
    const row = el("div", { class: "actions" });
    const open = el("button", { type: "button", class: "secondary", "data-open": person.id,
      text: `Details for ${person.name}` });
    open.addEventListener("click", () => actions.open(person.id));
    row.append(open);
    if (can.clear && (person.open_alerts || []).length) {
      const b = el("button", { type: "button", "data-action": "clear", "data-person": person.id,
        text: `All clear for ${person.name}` });
      b.addEventListener("click", () => actions.clear(person.id));
      row.append(b);
    }
    card.append(row);
    items.push(el("li", {}, card));
  }
  // A redraw must not take the keyboard's place away: focus the same button again.
  const active = document.activeElement;
  let again = null;
  if (active && list.contains(active)) {
    const open = active.getAttribute("data-open");
    const act = active.getAttribute("data-action");
    if (open) again = `[data-open="${CSS.escape(open)}"]`;
    else if (act) again = `[data-action="${CSS.escape(act)}"][data-person="${CSS.escape(active.getAttribute("data-person") || "")}"]`;
  }
  list.replaceChildren(...items);
  if (again) {
    const same = list.querySelector(again);
    if (same) same.focus();
  }
}

function eventDetail(ev, units) {
  if (ev.why) return ev.why; // the monitor's own sentence: rule, values, ranges, score
  if (ev.purpose) return purposeWords(String(ev.purpose));
  if (ev.condition) return conditionWords(ev.condition, units);
  return ev.device || ev.component || "";
}

export function eventItem(ev, names, units = []) {
  // A mild value that is usual for the person (their own baseline) is information, not an alarm.
  const kind = ev.type === "advisory" && ev.priority === "information"
    ? "Usual for them" : EVENT_WORDS[ev.type] || ev.type;
  const when = new Date(ev.ts);
  const who = ev.person ? names[ev.person] || ev.person : "Hub";
  const detail = eventDetail(ev, units);
  return el("li", { class: URGENT.has(ev.type) ? "urgent" : "", "data-type": ev.type },
    el("time", { datetime: ev.ts, text: Number.isNaN(when.getTime()) ? "" : when.toLocaleTimeString() }),
    el("span", { class: "kind", text: kind }), el("span", { text: who }),
    detail ? el("span", { class: "help", text: String(detail) }) : null);
}
