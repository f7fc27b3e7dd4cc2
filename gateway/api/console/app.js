// The console: sign in with a token (kept in sessionStorage, sent only as a header), then
// the household cards and live events from the REST API and GET /v1/live (Server-Sent
// Events read with fetch, so the token never goes in a URL). Reconnects on its own.
import { el, eventItem, renderCards } from "./cards.js";
import { Assistant } from "./chat.js";
import { renderPerson } from "./person.js";
import { Simulator } from "./sim.js";

const KEY = "healthgw.token";
const MAX_EVENTS = 100;
const SOS_TYPES = new Set(["hard_sos", "sos_end", "sos_escalated", "sos_acknowledged",
  "sos_unacknowledged", "notification_sent", "notification_failed"]);
const $ = (id) => document.getElementById(id);

const DAY_S = 86400;
const HISTORY_ROWS = 2000; // newest readings read per person for the sparklines
const state = { role: null, units: [], snap: { persons: [], devices: [] }, ladders: {},
  history: {}, battery: {}, abort: null, backoff: 1000, assistant: null, sim: null };

class ApiError extends Error {
  constructor(status, detail) { super(detail); this.status = status; }
}

async function api(path, options = {}) {
  const token = sessionStorage.getItem(KEY);
  const headers = { Authorization: `Bearer ${token}`, ...(options.headers || {}) };
  const res = await fetch(path, { ...options, headers, cache: "no-store" });
  if (!res.ok) {
    let detail = res.statusText;
    try { detail = (await res.json()).detail || detail; } catch { /* not JSON */ }
    throw new ApiError(res.status, typeof detail === "string" ? detail : res.statusText);
  }
  return res.json();
}

function can() {
  const family = state.role === "admin" || state.role === "family";
  return { ack: family, clear: family };
}

function setLink(text, live) {
  const p = $("link-state");
  p.textContent = text;
  p.className = `link-state ${live ? "live" : "down"}`;
}

function names() {
  return Object.fromEntries(state.snap.persons.map((p) => [p.id, p.name]));
}

const MAIN_SECTIONS = ["household", "events", "simulator", "assistant"];

const actions = {
  async open(id) {
    const person = state.snap.persons.find((p) => p.id === id);
    if (!person) return;
    for (const s of MAIN_SECTIONS) $(s).hidden = true;
    $("person").hidden = false;
    state.page = id;
    await renderPerson($("person-page"), { api, person, units: state.units,
      history: state.history[id], role: state.role });
    $("person-title").focus();
  },
  async ack(person) {
    await act(() => api(`/v1/sos/${encodeURIComponent(person)}/ack`, jsonPost({ by: "console" })),
      (r) => (r.acknowledged ? "Acknowledged: the others know you are on your way."
        : "Nothing to acknowledge: the SOS is no longer open."));
    await refreshLadder(person);
  },
  async clear(person) {
    await act(() => api(`/v1/persons/${encodeURIComponent(person)}/alerts/clear`,
      jsonPost({ by: "console" })), (r) => `All clear given: ${r.cleared} alert(s) closed.`);
  },
};

function jsonPost(body) {
  return { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
}

async function act(call, say) {
  const out = $("action-result");
  try {
    out.textContent = say(await call());
  } catch (e) {
    out.textContent = e.status === 403 ? "Your token may not do this." : `Failed: ${e.message}`;
  }
}

function render() {
  renderCards($("cards"), state.snap, state.ladders, state.units, can(), actions, state.history);
}

async function loadHistory(person) {
  const since = Date.now() / 1000 - DAY_S;
  try {
    const rows = await api(`/v1/persons/${encodeURIComponent(person)}/readings`
      + `?since=${since}&limit=${HISTORY_ROWS}`);
    const series = {};
    for (const u of state.units) {
      series[u.name] = rows.filter((r) => typeof r[u.name] === "number").map((r) => [r.ts, r[u.name]]);
    }
    state.history[person] = series;
  } catch {
    state.history[person] = {}; // no sparklines rather than no card
  }
  render();
}

function keepBattery() {
  // A reading without a battery level leaves the device's latest row without one: show the
  // last level this page saw rather than "unknown" for a watch that reported it a minute ago.
  for (const d of state.snap.devices) {
    const key = `${d.person}/${d.device}`;
    if (typeof d.battery === "number") state.battery[key] = d.battery;
    else if (key in state.battery) d.battery = state.battery[key];
  }
}

function extendHistory() {
  // Each new latest value joins its line; points older than a day fall off.
  const cutoff = Date.now() / 1000 - DAY_S;
  for (const p of state.snap.persons) {
    const series = state.history[p.id];
    if (!series) continue;
    for (const [name, v] of Object.entries(p.vitals || {})) {
      const line = series[name];
      if (!line || typeof v !== "object" || typeof v.value !== "number") continue;
      const last = line[line.length - 1];
      if (!last || v.ts > last[0]) line.push([v.ts, v.value]);
      while (line.length && line[0][0] < cutoff) line.shift();
    }
  }
}

async function refreshLadder(person) {
  try {
    state.ladders[person] = await api(`/v1/sos/${encodeURIComponent(person)}/ladder`);
  } catch {
    state.ladders[person] = null; // no ladder on this hub (503): no SOS box
  }
  render();
}

function addEvent(ev, atTop = true) {
  const list = $("event-list");
  for (const empty of list.querySelectorAll(".empty")) empty.remove();
  const item = eventItem(ev, names(), state.units);
  if (atTop) list.prepend(item); else list.append(item);
  while (list.children.length > MAX_EVENTS) list.lastElementChild.remove();
}

async function loadEvents() {
  const events = await api("/v1/events?limit=30");
  const list = $("event-list");
  list.replaceChildren();
  for (const ev of events) addEvent(ev, false);
  if (!events.length) list.append(el("li", { class: "empty", text: "No events yet." }));
}

function onFrame(kind, data) {
  if (kind === "persons") {
    const first = !state.snap.persons.length;
    state.snap = JSON.parse(data);
    extendHistory();
    keepBattery();
    render();
    if (state.assistant) state.assistant.show(state.snap.persons);
    if (state.sim) { state.sim.show(state.snap.persons); state.sim.refresh(); }
    if (first) {
      for (const p of state.snap.persons) { refreshLadder(p.id); loadHistory(p.id); }
      loadEvents().catch(() => {}); // again, now with the names the list shows
    }
  } else if (kind === "event") {
    const ev = JSON.parse(data);
    addEvent(ev);
    if (ev.person && SOS_TYPES.has(ev.type)) refreshLadder(ev.person);
  } else if (kind === "lost") {
    loadEvents().catch(() => {}); // the queue overflowed: read the list again
  }
}

async function stream() {
  const ctrl = new AbortController();
  state.abort = ctrl;
  const res = await fetch("/v1/live", { headers: { Authorization: `Bearer ${sessionStorage.getItem(KEY)}` },
    signal: ctrl.signal, cache: "no-store" });
  if (res.status === 401) throw new ApiError(401, "token refused");
  if (!res.ok || !res.body) throw new ApiError(res.status, "live feed unavailable");
  setLink("Live", true);
  state.backoff = 1000;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let kind = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) kind = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onFrame(kind, data.join("\n"));
    }
  }
}

async function live() {
  while (state.role) {
    try {
      await stream();
    } catch (e) {
      if (e.status === 401) { signOut("The hub no longer accepts this token."); return; }
      if (e.name === "AbortError") return;
    }
    if (!state.role) return;
    setLink("Reconnecting…", false);
    await new Promise((r) => setTimeout(r, state.backoff));
    state.backoff = Math.min(state.backoff * 2, 10000);
    if (state.role) loadEvents().catch(() => {}); // events missed while away
  }
}

function describe(role) {
  return { admin: "Admin: everything, including SOS actions for anyone.",
    family: "Family: read, acknowledge an SOS, give the all-clear. Phone numbers and places are hidden.",
    viewer: "Viewer: read-only. Phone numbers and places are hidden." }[role];
}

async function start() {
  const who = await api("/v1/whoami");
  state.role = who.role;
  $("sign-in").hidden = true;
  $("household").hidden = false;
  $("events").hidden = false;
  $("assistant").hidden = false;
  $("chat-form").hidden = state.role !== "admin"; // chat is the admin's (the API says so too)
  state.assistant = new Assistant({ api, token: () => sessionStorage.getItem(KEY),
    isAdmin: state.role === "admin" });
  $("sign-out").hidden = false;
  const scope = $("scope");
  scope.hidden = false;
  scope.textContent = describe(state.role);
  scope.dataset.role = state.role;
  state.units = await api("/v1/vitals");
  // Admin only, and only on a hub with the simulator on (its routes are absent otherwise).
  if (state.role === "admin") {
    const sim = new Simulator({ api, jsonPost });
    if (await sim.probe()) state.sim = sim;
  }
  await loadEvents();
  live();
  $("main").focus();
}

function signOut(why = "") {
  sessionStorage.removeItem(KEY);
  state.role = null;
  if (state.abort) state.abort.abort();
  state.snap = { persons: [], devices: [] };
  state.ladders = {};
  state.history = {};
  state.battery = {};
  $("cards").replaceChildren();
  $("event-list").replaceChildren();
  for (const id of ["household", "events", "simulator", "assistant", "person", "sign-out", "scope"]) {
    $(id).hidden = true;
  }
  state.sim = null;
  $("sim-person").replaceChildren();
  $("sim-result").textContent = "";
  $("person-page").replaceChildren();
  state.page = null;
  if (state.assistant && state.assistant.ws) state.assistant.ws.close();
  state.assistant = null;
  $("chat-person").replaceChildren();
  $("chat-log").replaceChildren();
  $("agent-log").replaceChildren();
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = why;
  setLink("Not signed in", false);
  $("token").focus();
}

$("sign-in-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = $("token");
  sessionStorage.setItem(KEY, input.value.trim());
  input.value = "";
  try {
    await start();
  } catch (err) {
    signOut(err.status === 401 ? "That token was not accepted." : `Could not sign in: ${err.message}`);
  }
});
$("sign-out").addEventListener("click", () => signOut());
$("back").addEventListener("click", () => {
  $("person").hidden = true;
  for (const s of MAIN_SECTIONS) $(s).hidden = s === "simulator" && !state.sim;
  const back = document.querySelector(`[data-open="${CSS.escape(state.page || "")}"]`);
  state.page = null;
  if (back) back.focus();
});
$("chat-form").addEventListener("submit", (e) => {
  e.preventDefault();
  if (state.assistant) state.assistant.send();
});
$("sim-form").addEventListener("submit", (e) => {
  e.preventDefault();
  if (state.sim) state.sim.act("start");
});
for (const b of document.querySelectorAll("#simulator button[data-sim]")) {
  b.addEventListener("click", () => { if (state.sim) state.sim.act(b.dataset.sim); });
}
$("sim-person").addEventListener("change", () => { if (state.sim) state.sim.describe(); });
$("chat-person").addEventListener("change", () => {
  if (state.assistant) state.assistant.open($("chat-person").value);
});

if (sessionStorage.getItem(KEY)) start().catch(() => signOut("Please sign in again."));
