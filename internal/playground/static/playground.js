// playground.js wires the page's controls to fencesimRun, the simulator
// compiled to WebAssembly (see internal/playground/wasm). Every change of
// a control builds a query, runs it, redraws both runs and puts the
// canonical query in the address bar.
"use strict";

const form = document.getElementById("controls");
const statusLine = document.getElementById("status");
let options = null; // scenarios and storage modes, from the first response

// seconds formats milliseconds as the simulator does: "10s", "0.35s".
function seconds(ms) {
  return String(Math.round(ms) / 1000) + "s";
}

// parseSeconds reads the simulator's "12.5s" (always in seconds) as milliseconds.
function parseSeconds(s) {
  return Math.round(parseFloat(s) * 1000);
}

function showValue(input) {
  const out = form.querySelector(`output[for="${input.id}"]`);
  if (!out) return;
  if (input.dataset.unit === "s") {
    const ms = Number(input.value);
    out.textContent = ms === 0 && input.dataset.zero ? input.dataset.zero : seconds(ms);
  } else {
    const f = Number(input.value);
    out.textContent = (f > 0 ? "+" : "") + Math.round(f * 100) + "%";
  }
}

// query builds the URL query from the controls; a new scenario starts
// from its own defaults.
function query(scenarioChanged) {
  const p = new URLSearchParams();
  p.set("scenario", form.scenario.value);
  if (!scenarioChanged) {
    for (const div of form.querySelectorAll("[data-knob]")) {
      const input = div.querySelector("input");
      if (input.disabled) continue;
      p.set(input.name, input.dataset.unit === "s" ? seconds(Number(input.value)) : input.value);
    }
  }
  p.set("storage", form.querySelector("input[name=storage]:checked").value);
  p.set("seed", form.seed.value || "1");
  return p.toString();
}

// slider builds one knob's control: a label, a range input and its value.
function slider(k) {
  const div = document.createElement("div");
  div.className = "control";
  div.dataset.knob = k.name;
  const label = document.createElement("label");
  label.htmlFor = k.name;
  label.textContent = k.label;
  label.title = k.help;
  const input = document.createElement("input");
  Object.assign(input, { type: "range", id: k.name, name: k.name, min: k.min, max: k.max, step: k.step });
  input.dataset.unit = k.unit;
  if (k.zero) input.dataset.zero = k.zero;
  const out = document.createElement("output");
  out.htmlFor = k.name;
  div.append(label, input, out);
  return div;
}

function fillOptions(resp) {
  options = resp;
  document.getElementById("sliders").replaceChildren(...resp.sliders.map(slider));
  form.scenario.replaceChildren(...resp.scenarios.map((s) => new Option(s.name, s.name)));
  const group = document.getElementById("storage");
  group.replaceChildren(...resp.storage_modes.map((m) => {
    const label = document.createElement("label");
    label.title = m.help || "";
    const radio = document.createElement("input");
    radio.type = "radio";
    radio.name = "storage";
    radio.value = m.name;
    label.append(radio, " " + m.title);
    return label;
  }));
}

// setControls shows the response's values and disables unused knobs.
function setControls(resp) {
  form.scenario.value = resp.scenario;
  for (const div of form.querySelectorAll("[data-knob]")) {
    const input = div.querySelector("input");
    const used = resp.uses.includes(input.name);
    input.disabled = !used;
    div.classList.toggle("unused", !used);
    div.title = used ? "" : "The " + resp.scenario + " scenario does not use this control.";
    if (used) {
      const v = resp.values[input.name];
      input.value = input.dataset.unit === "s" ? parseSeconds(v) : v;
      showValue(input);
    } else {
      form.querySelector(`output[for="${input.id}"]`).textContent = "–";
    }
  }
  for (const radio of form.querySelectorAll("input[name=storage]")) {
    radio.checked = radio.value === resp.values.storage;
  }
  form.seed.value = resp.values.seed;
}

const verdicts = {
  safe: "Safe",
  lost: "A write was lost",
  backwards: "Tokens went backwards",
};

function renderRun(el, run) {
  el.querySelector("h2").textContent = run.heading;
  el.querySelector(".what").textContent = run.what;
  const v = el.querySelector(".verdict");
  v.textContent = verdicts[run.verdict] || run.verdict;
  v.className = "verdict " + run.verdict;
  const counts = [
    ["accepted", run.accepted],
    ["rejected", run.rejected],
    ["lost", run.lost.length ? run.lost.join(" ") : "none"],
    ["final value", run.final],
  ];
  el.querySelector(".counts").replaceChildren(...counts.flatMap(([k, val]) => {
    const dt = document.createElement("dt");
    dt.textContent = k;
    const dd = document.createElement("dd");
    dd.textContent = val;
    dd.dataset.count = k;
    return [dt, dd];
  }));
  el.querySelector(".timeline").innerHTML = run.svg;
  el.querySelector(".summary").replaceChildren(...run.summary.map((s, i) => {
    const li = document.createElement("li");
    li.textContent = s;
    li.className = run.tones[i];
    return li;
  }));
}

// update runs q, redraws the page and puts the canonical query in the URL.
function update(q) {
  const resp = JSON.parse(globalThis.fencesimRun(q));
  if (resp.error) {
    statusLine.textContent = resp.error;
    statusLine.hidden = false;
    if (!options) update(""); // a bad link: show the defaults under the message
    return;
  }
  if (options) statusLine.hidden = true;
  if (!options) fillOptions(resp);
  setControls(resp);
  document.getElementById("title").textContent = resp.title + ".";
  document.getElementById("story").textContent = resp.story;
  renderRun(document.getElementById("run-off"), resp.runs[0]);
  renderRun(document.getElementById("run-on"), resp.runs[1]);
  history.replaceState(null, "", "?" + resp.query);
  document.body.dataset.query = resp.query; // for tests and screenshots: the run shown
}

form.addEventListener("input", (ev) => {
  if (ev.target.type === "range") showValue(ev.target);
  update(query(ev.target === form.scenario));
});

// The violation map, redrawn for the controls' heartbeat/TTL: 16,800
// runs, about a second, so the status line is painted first.
const mapButton = document.getElementById("redraw-map");
mapButton.addEventListener("click", () => {
  const mapStatus = document.getElementById("map-status");
  mapButton.disabled = true;
  mapStatus.textContent = "running 21 pause lengths x 4 storage modes x 200 schedules...";
  setTimeout(() => {
    const resp = JSON.parse(globalThis.fencesimMap(document.body.dataset.query || ""));
    mapButton.disabled = false;
    if (resp.error) {
      mapStatus.textContent = resp.error;
      return;
    }
    document.getElementById("map-figure").innerHTML = resp.svg;
    mapStatus.textContent = "Drawn for " + document.body.dataset.query.match(/ttl=[^&]*&heartbeat=[^&]*/)[0].replace("&", ", ") + ".";
    document.body.dataset.map = document.body.dataset.query; // for tests: the query the map was drawn for
  }, 30);
});

async function start() {
  const go = new Go();
  const ready = new Promise((resolve) => addEventListener("fencesim-ready", resolve, { once: true }));
  let inst;
  try {
    inst = await WebAssembly.instantiateStreaming(fetch("fencesim.wasm"), go.importObject);
  } catch (e) {
    // Some static hosts do not serve .wasm as application/wasm.
    const bytes = await (await fetch("fencesim.wasm")).arrayBuffer();
    inst = await WebAssembly.instantiate(bytes, go.importObject);
  }
  go.run(inst.instance);
  await ready;
  update(location.search.slice(1));
}

start().catch((e) => {
  statusLine.textContent = "The simulator did not start: " + e;
  statusLine.hidden = false;
});
