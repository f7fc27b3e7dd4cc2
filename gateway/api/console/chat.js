// The assistant panel: chat as a person over the WebSocket (admin only; the token rides in a
// subprotocol, never in the URL) and the agent log of their newest run, step by step.
import { el } from "./cards.js";

const WHO = { planner: "Planner", caller: "Tool call", observation: "Result", user: "User",
  system: "Session" };

export class Assistant {
  constructor({ api, token, isAdmin }) {
    this.api = api;
    this.token = token;
    this.isAdmin = isAdmin;
    this.ws = null;
    this.session = null;
    this.person = null;
    this.$ = (id) => document.getElementById(id);
  }

  show(persons) {
    const select = this.$("chat-person");
    if (!select.options.length) {
      for (const p of persons) select.append(el("option", { value: p.id, text: p.name }));
      this.open(select.value);
    }
  }

  say(who, text) {
    const log = this.$("chat-log");
    log.append(el("li", { class: `from-${who}` }, el("strong", { text: who === "you" ? "You: " : "Assistant: " }),
      text));
    log.scrollTop = log.scrollHeight;
  }

  open(person) {
    this.person = person;
    this.session = null;
    this.$("chat-log").replaceChildren();
    if (this.ws) this.ws.close();
    this.loadLog();
    if (!this.isAdmin) return;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${scheme}://${location.host}/v1/persons/${encodeURIComponent(person)}/chat/ws`,
      ["bearer", `bearer.${this.token()}`]);
    this.ws = ws;
    ws.addEventListener("open", () => { this.$("chat-state").textContent = "Connected to the assistant."; });
    ws.addEventListener("close", () => {
      if (this.ws === ws) this.$("chat-state").textContent = "Not connected to the assistant.";
    });
    ws.addEventListener("message", (m) => this.onMessage(JSON.parse(m.data)));
  }

  onMessage(msg) {
    if ("accepted" in msg) {
      if (!msg.accepted) this.say("assistant", "The assistant could not take that now.");
      else this.session = msg.session_id;
      return;
    }
    if (msg.error) return;
    if (typeof msg.text !== "string") return;
    if (this.session && msg.session_id && msg.session_id !== this.session) return;
    this.say("assistant", msg.text);
    if (!msg.expects_answer) this.session = null; // the conversation ended
    this.loadLog();
  }

  send() {
    const input = this.$("chat-text");
    const text = input.value.trim();
    if (!text || !this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(JSON.stringify(this.session ? { text, session_id: this.session } : { text }));
    this.say("you", text);
    input.value = "";
    input.focus();
  }

  async loadLog() {
    const list = this.$("agent-log");
    const person = this.person;
    let runs = [];
    try {
      runs = await this.api(`/v1/trajectories?person=${encodeURIComponent(person)}&limit=1`);
    } catch { /* the log stays as it was */ }
    if (person !== this.person) return;
    if (!runs.length) {
      list.replaceChildren(el("li", { class: "empty", text: "No assistant runs yet." }));
      return;
    }
    const run = await this.api(`/v1/trajectories/${encodeURIComponent(runs[0].run_id)}`);
    if (person !== this.person) return;
    this.$("agent-run").textContent = `Newest run: ${run.category || "?"}, ${run.status || "?"}`
      + ` (${run.steps ?? "?"} steps)`;
    const states = ((run.trajectory || {}).interaction_trajectory || []);
    list.replaceChildren(...states.map((st, i) => step(st, i)));
  }
}

function summary(st) {
  const v = st.value;
  if (st.from === "planner" && v && typeof v === "object") return `${v.reason} → ${v.action}`;
  if (st.from === "caller" && v && typeof v === "object") return v.tool;
  if (st.from === "observation" && v && typeof v === "object") {
    const r = JSON.stringify(v.result);
    return r.length > 80 ? `${r.slice(0, 80)}…` : r;
  }
  return typeof v === "string" ? v : "details";
}

function step(st, i) {
  const body = el("pre", { text: JSON.stringify(st.value, null, 2) });
  const details = el("details", {}, el("summary", {},
    el("span", { class: `step-kind ${st.from}`, text: `${i + 1}. ${WHO[st.from] || st.from}: ` }),
    summary(st)), body);
  return el("li", { "data-step": st.from }, details);
}
