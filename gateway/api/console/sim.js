// The Simulator panel (admin, and only when the hub has HEALTHGW_SIMULATOR_ENABLED): drive a
// simulated watch from the page. The watch is a real MQTT client on the hub's broker, so what
// it sends takes the same road as a real watch's; this panel only asks /v1/simulator.
import { el } from "./cards.js";

const MIN_REFRESH_MS = 5000; // the picture changes with every reading: do not ask that often

export class Simulator {
  constructor({ api, jsonPost }) {
    this.api = api;
    this.jsonPost = jsonPost;
    this.status = null;
    this.last = 0;
    this.$ = (id) => document.getElementById(id);
  }

  // The hub says whether the simulator exists: 404 = off (the panel stays hidden).
  async probe() {
    try {
      this.status = await this.api("/v1/simulator");
    } catch {
      return false;
    }
    const select = this.$("sim-scenario");
    select.replaceChildren(...this.status.scenarios.map((s) => el("option", { value: s, text: words(s) })));
    this.$("simulator").hidden = false;
    return true;
  }

  show(persons) {
    const select = this.$("sim-person");
    if (!select.options.length) {
      for (const p of persons) select.append(el("option", { value: p.id, text: p.name }));
    }
    this.persons = persons;
    this.describe();
  }

  async refresh(force = false) {
    if (!force && Date.now() - this.last < MIN_REFRESH_MS) return;
    this.last = Date.now();
    try {
      this.status = await this.api("/v1/simulator");
    } catch { /* keep what the page had */ }
    this.describe();
  }

  describe() {
    const person = this.$("sim-person").value;
    const name = ((this.persons || []).find((p) => p.id === person) || {}).name || person;
    const run = this.status && this.status.running[person];
    const out = this.$("sim-watch");
    if (!run) {
      out.textContent = `No simulated watch is running for ${name}.`;
      out.dataset.running = "no";
      return;
    }
    out.dataset.running = "yes";
    out.textContent = `${name}'s simulated watch (${run.device}): ${words(run.scenario)}, `
      + `${run.readings} reading(s) sent, one every ${run.interval_s} s`
      + `${run.battery_flat ? " (battery flat: the watch is off; start again for a new one)"
        : run.connected ? "" : " (reconnecting to the broker)"}`
      + `${run.prompt ? '. It has shown "are you OK?".' : "."}`;
  }

  async act(what) {
    const person = this.$("sim-person").value;
    const base = `/v1/simulator/${encodeURIComponent(person)}`;
    const calls = {
      start: () => this.api(`${base}/start`, this.jsonPost({ scenario: this.$("sim-scenario").value })),
      stop: () => this.api(`${base}/stop`, { method: "POST" }),
      sos: () => this.api(`${base}/sos/start`, { method: "POST" }),
      "sos-end": () => this.api(`${base}/sos/end`, { method: "POST" }),
      ok: () => this.api(`${base}/answer`, this.jsonPost({ ok: true })),
      "not-ok": () => this.api(`${base}/answer`, this.jsonPost({ ok: false })),
    };
    const said = {
      start: () => `Scenario ${words(this.$("sim-scenario").value)} started.`,
      stop: (r) => (r.stopped ? "Watch stopped." : "No watch was running."),
      sos: () => "SOS pressed on the watch.",
      "sos-end": () => "SOS ended on the watch.",
      ok: () => "Answered \"I'm OK\" on the watch.",
      "not-ok": () => 'Answered "Not OK" on the watch.',
    };
    const out = this.$("sim-result");
    try {
      out.textContent = said[what](await calls[what]());
    } catch (e) {
      out.textContent = e.status === 403 ? "Your token may not do this." : `Not done: ${e.message}`;
    }
    await this.refresh(true);
  }
}

function words(scenario) {
  return scenario.replaceAll("_", " ");
}
