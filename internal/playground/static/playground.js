// playground.js wires the page's controls to fencesimRun, the simulator
// compiled to WebAssembly (see internal/playground/wasm). Every change of
// a control builds a query, runs it at the figures' width, redraws both
// runs, the verdict bar, the tour and the map's marker, and puts the
// canonical query in the address bar.
"use strict";

const form = document.getElementById("controls");
const statusLine = document.getElementById("status");
let options = null; // scenarios, storage modes, sliders and presets, from the first response
let shown = null; // the response on the page
let step = -1; // the tour's step, -1 when the tour is closed

// seconds formats milliseconds as the simulator does: "10s", "0.35s".
function seconds(ms) {
  return String(Math.round(ms) / 1000) + "s";
}

// parseSeconds reads the simulator's "12.5s" (always in seconds) as milliseconds.
function parseSeconds(s) {
  return Math.round(parseFloat(s) * 1000);
}

// figureWidth is the width of the figures' column, which the simulator
// draws them at: at least 800 px, the most compressed that keeps labels
// apart on a narrow column, so that labels stay 12 px (a narrow screen
// scrolls the figure sideways instead of shrinking it).
function figureWidth() {
  return Math.floor(document.querySelector("#run-off .timeline").clientWidth);
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

// helpButton returns a "?" button that shows and hides the help paragraph:
// a tap works where there is no hover.
function helpButton(help, what) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "help-toggle";
  button.textContent = "?";
  button.setAttribute("aria-label", "What is " + what + "?");
  button.setAttribute("aria-expanded", "false");
  button.addEventListener("click", () => {
    help.hidden = !help.hidden;
    button.setAttribute("aria-expanded", String(!help.hidden));
  });
  return button;
}

// slider builds one knob's control: a label with its help, a range input,
// its value, and the scenario's note.
function slider(k) {
  const div = document.createElement("div");
  div.className = "control";
  div.dataset.knob = k.name;
  const label = document.createElement("label");
  label.htmlFor = k.name;
  label.textContent = k.label;
  const help = document.createElement("p");
  help.className = "help";
  help.textContent = k.help;
  help.hidden = true;
  const input = document.createElement("input");
  Object.assign(input, { type: "range", id: k.name, name: k.name, min: k.min, max: k.max, step: k.step });
  input.dataset.unit = k.unit;
  if (k.zero) input.dataset.zero = k.zero;
  const out = document.createElement("output");
  out.htmlFor = k.name;
  const head = document.createElement("div");
  head.className = "head";
  head.append(label, helpButton(help, k.label), out);
  const note = document.createElement("p");
  note.className = "note";
  note.dataset.note = k.name;
  div.append(head, help, input, note);
  return div;
}

function fillOptions(resp) {
  options = resp;
  document.getElementById("sliders").replaceChildren(...resp.sliders.map(slider));
  form.scenario.replaceChildren(...resp.scenarios.map((s) => new Option(s.name, s.name)));
  const group = document.getElementById("storage");
  group.replaceChildren(...resp.storage_modes.map((m) => {
    const label = document.createElement("label");
    const radio = document.createElement("input");
    radio.type = "radio";
    radio.name = "storage";
    radio.value = m.name;
    label.append(radio, " " + m.title);
    return label;
  }));
  document.getElementById("presets").replaceChildren(...resp.presets.map((p) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "preset";
    b.textContent = p.title;
    b.dataset.query = p.query;
    const small = document.createElement("small");
    small.textContent = p.help;
    b.append(small);
    b.addEventListener("click", () => update(p.query));
    return b;
  }));
}

// setControls shows the response's values and notes and disables unused knobs.
function setControls(resp) {
  form.scenario.value = resp.scenario;
  for (const div of form.querySelectorAll("[data-knob]")) {
    const input = div.querySelector("input");
    const used = resp.uses.includes(input.name);
    input.disabled = !used;
    div.classList.toggle("unused", !used);
    if (used) {
      const v = resp.values[input.name];
      input.value = input.dataset.unit === "s" ? parseSeconds(v) : v;
      showValue(input);
    } else {
      form.querySelector(`output[for="${input.id}"]`).textContent = "not used here";
    }
  }
  for (const note of form.querySelectorAll("[data-note]")) {
    note.textContent = resp.notes[note.dataset.note] || "";
    note.hidden = !note.textContent;
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
  el.querySelector(".timeline").dataset.drawing = "whole";
  el.querySelector(".summary").replaceChildren(...run.summary.map((s, i) => {
    const li = document.createElement("li");
    li.textContent = s;
    li.className = run.tones[i];
    return li;
  }));
}

// renderKey copies the first figure's legend (what its marks mean) into
// the first run's heading row, which the tour shows in place of the
// figures' own legends: on a desktop screen both runs then fit below the
// tour's bar with the legend in view.
function renderKey() {
  const svg = document.querySelector("#run-off .timeline svg");
  const items = svg ? [...svg.querySelectorAll(".legend")] : [];
  const key = document.getElementById("key");
  if (!items.length) {
    key.replaceChildren();
    document.getElementById("key-on").replaceChildren();
    renderPhoneKey(items);
    return;
  }
  const boxes = items.map((el) => el.getBBox());
  const x0 = Math.min(...boxes.map((b) => b.x)), y0 = Math.min(...boxes.map((b) => b.y));
  const x1 = Math.max(...boxes.map((b) => b.x + b.width)), y1 = Math.max(...boxes.map((b) => b.y + b.height));
  const copy = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  for (const [k, v] of Object.entries({ viewBox: `${x0} ${y0} ${x1 - x0} ${y1 - y0}`, width: x1 - x0, height: y1 - y0,
    "font-family": svg.getAttribute("font-family") })) copy.setAttribute(k, String(v));
  copy.append(...items.map((el) => {
    const c = el.cloneNode(true);
    c.removeAttribute("class");
    return c;
  }));
  key.replaceChildren(copy);
  // The entry for a summary step's marks: at the right of the second
  // run's heading row, beside its verdict (a phone's legend ends with it).
  document.getElementById("key-on").replaceChildren(markedEntry());
  renderPhoneKey(items);
}

// markedEntry is the legend's entry for the marks of a summary step
// (markMoments): an orange line and a highlighted word; style.css shows
// it while such a step is on screen (body.marking).
function markedEntry() {
  const span = document.createElement("span");
  span.className = "key-marked";
  const mark = document.createElementNS(svgNS, "svg");
  for (const [k, v] of Object.entries({ width: 16, height: 12, viewBox: "0 0 16 12" })) mark.setAttribute(k, String(v));
  const line = document.createElementNS(svgNS, "line");
  for (const [k, v] of Object.entries({ x1: 8, x2: 8, y1: 0, y2: 12, stroke: "#e0a000", "stroke-width": 3, "stroke-opacity": 0.7 })) line.setAttribute(k, String(v));
  mark.append(line);
  const name = document.createElement("span");
  name.className = "named";
  name.textContent = "named by the step";
  span.append(mark, name);
  return span;
}

// renderPhoneKey copies the legend into the tour's buttons' row, which a
// phone shows: each entry's mark (the shapes just left of its text, in
// their own proportions), then its short name (data-short), so that all
// fit beside the buttons; last, the entry for a summary step's marks.
function renderPhoneKey(items) {
  const ns = "http://www.w3.org/2000/svg";
  const texts = items.filter((el) => el.tagName === "text");
  document.getElementById("phone-key").replaceChildren(...texts.map((t) => {
    const tb = t.getBBox();
    const marks = items.filter((el) => {
      if (el.tagName === "text") return false;
      const b = el.getBBox();
      return b.x >= tb.x - 34 && b.x < tb.x && Math.abs(b.y + b.height / 2 - (tb.y + tb.height / 2)) < 12;
    });
    const span = document.createElement("span");
    const mark = document.createElementNS(ns, "svg");
    const x0 = Math.min(...marks.map((el) => el.getBBox().x)) - 1, y0 = tb.y - 1;
    const h = tb.height + 2;
    for (const [k, v] of Object.entries({ viewBox: `${x0} ${y0} 28 ${h}`, width: Math.round(28 * 10 / h), height: 10 })) mark.setAttribute(k, String(v));
    mark.append(...marks.map((el) => {
      const c = el.cloneNode(true);
      c.removeAttribute("class");
      return c;
    }));
    const name = document.createElement("span");
    name.textContent = t.dataset.short || t.textContent;
    span.append(mark, name);
    return span;
  }), markedEntry());
}

// scrollToDanger scrolls a figure wider than its column to where the
// first run's danger begins (the time a client writes on an expired
// lease), a little before it, where no label is cut at the edges; a
// figure that fits does not move.
function scrollToDanger() {
  const d = document.querySelector("#run-off .timeline svg rect.danger") || document.querySelector(".run .timeline svg rect.danger");
  const x = d ? Number(d.getAttribute("x")) : 0;
  const figs = [...document.querySelectorAll(".run .timeline")];
  figs.forEach(keepLaneNames);
  // The danger's labels whole, if they fit.
  const labels = [...document.querySelectorAll(".run .timeline svg text.danger")];
  scrollWhole(figs, x - 150, x - figs[0].clientWidth + 40, x - stripWidth(figs[0]), new Map(labels.map((l) => [l, 100])));
}

// leastCut returns the whole position from lo to hi, nearest target, at
// which cuts(p), the number of labels a view at p shows only in part, is
// least.
function leastCut(target, lo, hi, cuts) {
  lo = Math.ceil(lo);
  hi = Math.max(lo, Math.floor(hi));
  target = Math.round(Math.min(Math.max(target, lo), hi));
  let best = target, least = cuts(target);
  for (let d = 1; least > 0 && (target - d >= lo || target + d <= hi); d++) {
    for (const p of [target - d, target + d]) {
      if (p < lo || p > hi) continue;
      const n = cuts(p);
      if (n < least) [best, least] = [p, n];
    }
  }
  return best;
}

// cut reports whether a label spanning a..b shows only in part in a view
// from lo to hi.
function cut(a, b, lo, hi) {
  return a < hi && b > lo && (a < lo - 0.5 || b > hi + 0.5);
}

// shownBoxes is where the labels a figure shows lie, in the figure's own
// units, each cut at the tour's veil if drawn under it.
function shownBoxes(svg) {
  const veil = svg.querySelector("rect.veil");
  const veilX = veil ? Number(veil.getAttribute("x")) : Infinity;
  const boxes = [];
  const touring = document.body.classList.contains("touring");
  for (const t of svg.querySelectorAll("text:not(.lane-name):not(.hint):not(.token-edge)")) {
    if (t.style.visibility === "hidden" || (touring && t.classList.contains("legend"))) continue;
    const b = t.getBBox();
    const under = veil && (t.compareDocumentPosition(veil) & Node.DOCUMENT_POSITION_FOLLOWING);
    const right = under ? Math.min(b.x + b.width, veilX) : b.x + b.width;
    if (b.x < right) boxes.push({ t: t, x0: b.x, x1: right, y0: b.y, y1: b.y + b.height });
  }
  return boxes;
}

// inView is the part of fig's width its column shows: [from, to] in the
// figure's own units, right of the lane names' strip.
function inView(fig) {
  const k = scaleOf(fig.querySelector("svg")), at = fig.scrollLeft / k;
  const from = at + (fig.scrollLeft > 0 ? stripWidth(fig) : 0);
  return [from, at + fig.clientWidth / k];
}

// scaleOf is the scale a tour step draws svg at (see fitStep): screen
// pixels per unit of the figure's own, 1 but where a step scales it down.
function scaleOf(svg) {
  const w = svg ? parseFloat(svg.style.width) : NaN;
  return w > 0 ? w / Number(svg.getAttribute("width")) : 1;
}

// stripWidth is the width the lane names' strip covers when the figure
// is scrolled (0 for a figure without one).
function stripWidth(fig) {
  const strip = fig.querySelector("svg rect.name-strip");
  return strip ? Number(strip.dataset.scrolled) : 0;
}

// scrollWhole scrolls the figures figs (of one width, on one time axis)
// sideways together to the position nearest target, from lo to hi, at
// which the fewest labels are cut by their edges or by the lane names'
// strip, counting each label of keep (a map from label to weight) that
// does not show whole as its weight.
function scrollWhole(figs, target, lo, hi, keep) {
  for (const fig of figs) { // at home, as scrolled anywhere
    slideBarLabels(fig.querySelector("svg"), -Infinity, Infinity);
    slideDangerLabel(fig.querySelector("svg"), -Infinity, Infinity);
    flipTokenLabels(fig.querySelector("svg"), -Infinity, Infinity);
  }
  const boxes = figs.flatMap((fig) => shownBoxes(fig.querySelector("svg")));
  const k = scaleOf(figs[0].querySelector("svg"));
  const strip = Math.max(...figs.map(stripWidth)), width = figs[0].clientWidth / k;
  const max = (figs[0].scrollWidth - figs[0].clientWidth) / k;
  const cuts = (at) => {
    const from = at + (at > 0 ? strip : 0), to = at + width;
    let n = 0;
    for (const b of boxes) {
      if (keep.has(b.t)) n += b.x0 >= from && b.x1 <= to ? 0 : keep.get(b.t);
      else if (cut(b.x0, b.x1, from, to)) n++;
    }
    return n;
  };
  lo = Math.max(0, lo);
  hi = Math.min(max, hi);
  const best = leastCut(target, lo, hi, cuts), least = cuts(best);
  // Then, within 8 px and cutting no more, where no label lies against
  // the column's right edge (but at the figure's end): 6 px clear of the
  // frame.
  const p = leastCut(best, Math.max(lo, best - 8), Math.min(hi, best + 8), (at) => {
    if (cuts(at) > least) return Infinity;
    const to = at + width;
    return at >= max - 0.5 ? 0 : boxes.filter((b) => b.x1 <= to + 0.5 && b.x1 > to - 6 && b.x1 > at).length;
  });
  for (const fig of figs) {
    fig.scrollLeft = p * k;
    keepLaneNames(fig);
  }
}

// scrollPageWhole scrolls the page to the position nearest target, from
// lo to hi, at which the fewest labels the figures show across are cut
// by the sticky bar or the screen's bottom.
function scrollPageWhole(target, lo, hi) {
  const spans = [];
  for (const fig of document.querySelectorAll(".run .timeline")) {
    const svg = fig.querySelector("svg");
    const top = svg.getBoundingClientRect().top + scrollY, k = scaleOf(svg);
    const [from, to] = inView(fig);
    for (const b of shownBoxes(svg)) {
      if (b.x1 > from && b.x0 < to) spans.push([top + b.y0 * k, top + b.y1 * k]);
    }
    for (const n of svg.querySelectorAll("text.lane-name")) {
      const r = n.getBoundingClientRect();
      spans.push([r.top + scrollY, r.bottom + scrollY]);
    }
  }
  const sticky = document.getElementById("sticky").offsetHeight;
  const max = document.documentElement.scrollHeight - innerHeight;
  const y = leastCut(target, Math.max(0, lo), Math.min(max, hi), (p) =>
    spans.filter(([a, b]) => cut(a, b, p + sticky, p + innerHeight)).length);
  scrollTo({ top: y, behavior: "instant" });
}

// setName shows name on lane name n; in two lines if two (a short name,
// or one too wide for the gutter: data-wrap), the parenthesis (a
// storage's rule: "(claim)") on the second.
function setName(n, name, two) {
  const i = name.indexOf(" (");
  if (!two || i < 0) {
    n.textContent = name;
    return;
  }
  const second = document.createElementNS("http://www.w3.org/2000/svg", "tspan");
  second.setAttribute("x", n.getAttribute("x"));
  second.setAttribute("dy", "15");
  second.textContent = name.slice(i + 1);
  n.replaceChildren(name.slice(0, i), second);
}

// keepLaneNames moves a figure's lane names to the left edge of what its
// column shows, so that they stay in view as the figure scrolls sideways,
// on an opaque strip drawn over everything else: no data shows under a
// name. Scrolled, and always on a phone (the page's layout under 601 px,
// style.css), the names are short (data-short: "A", "Lease",
// "Storage (claim)" in two lines), to leave the figure room: a phone's
// tour switched between the two forms as its figures scrolled. A label the column's edges or the strip would
// cut is hidden until a scroll brings it whole.
function keepLaneNames(fig) {
  const svg = fig.querySelector("svg");
  if (!svg) return;
  const names = [...svg.querySelectorAll("text.lane-name")];
  if (!names.length) return;
  // right shows the names in form ("short" or "full") and returns the
  // width of a strip that covers them.
  const right = (form) => Math.ceil(8 + Math.max(...names.map((n) => {
    setName(n, n.dataset[form], form === "short" || "wrap" in n.dataset);
    const b = n.getBBox();
    return b.x + b.width;
  })));
  let strip = svg.querySelector("rect.name-strip");
  if (!strip) {
    for (const n of names) n.dataset.full = n.dataset.full || n.textContent;
    strip = document.createElementNS("http://www.w3.org/2000/svg", "rect");
    strip.setAttribute("class", "name-strip");
    for (const [k, v] of Object.entries({ x: 0, y: 0, height: svg.getAttribute("height") })) strip.setAttribute(k, String(v));
    strip.dataset.scrolled = String(right("short"));
  }
  const short = fig.scrollLeft > 0 || matchMedia("(max-width: 600px)").matches;
  strip.setAttribute("width", String(right(short ? "short" : "full")));
  svg.append(strip, ...names); // last: over every label and mark
  const at = fig.scrollLeft / scaleOf(svg);
  for (const el of [strip, ...names]) el.setAttribute("transform", `translate(${at} 0)`);
  strip.style.visibility = fig.scrollLeft > 0 ? "" : "hidden"; // unscrolled, the names leave the axis' start clear
  const [from, to] = inView(fig);
  slideBarLabels(svg, from, to);
  tokenAtEdge(svg, from, to);
  hintMoments(fig, at, from, to);
  slideDangerLabel(svg, from, to);
  flipTokenLabels(svg, from, to);
  for (const b of shownBoxes(svg)) b.t.classList.toggle("cut", cut(b.x0, b.x1, from, to));
  gapCursor(svg);
}

// slideDangerLabel moves the danger's label ("danger: A holds expired
// lease 33", from the danger's start) that the view from..to (or the lane
// names' strip) would cut into the view, to its left or right edge, while
// 40 px of the danger's band show and the label still spans part of the
// band: the band is not shown unnamed. Where it would then run into
// another label shown, it stays (and is hidden as cut).
function slideDangerLabel(svg, from, to) {
  for (const t of svg.querySelectorAll("text.danger[data-x]")) {
    if (t.dataset.home === undefined) t.dataset.home = t.getAttribute("x");
    t.setAttribute("x", t.dataset.home);
    const at = Number(t.dataset.x), b = t.getBBox();
    const band = [...svg.querySelectorAll("rect.danger")].find((r) => Math.abs(Number(r.getAttribute("x")) - at) < 0.5);
    if (!band || t.style.visibility === "hidden" || (b.x >= from && b.x + b.width <= to)) continue;
    const x0 = Number(band.getAttribute("x")), x1 = x0 + Number(band.getAttribute("width"));
    const left = b.x < from ? from + 2 : to - 2 - b.width;
    if (Math.min(x1, to) - Math.max(x0, from) < 40 || left < from || left + b.width > to || left > x1 || left + b.width < x0) continue;
    t.setAttribute("x", String(Number(t.dataset.home) + left - b.x));
    if (overlapsShown(svg, t)) t.setAttribute("x", t.dataset.home);
  }
}

// overlapsShown reports whether label t runs into another label svg
// shows (not a lane name or a hint).
function overlapsShown(svg, t) {
  const c = t.getBBox();
  return [...svg.querySelectorAll("text:not(.lane-name):not(.hint)")].some((o) => {
    if (o === t || o.style.visibility === "hidden" || o.classList.contains("legend") || o.classList.contains("cut")) return false;
    const d = o.getBBox();
    return d.width > 0 && d.x < c.x + c.width && c.x < d.x + d.width && d.y < c.y + c.height && c.y < d.y + d.height;
  });
}

// flipTokenLabels moves the label of a step of the storage's token line
// ("wrote 33", 3 px right of the step) that the view from..to cuts at its
// right edge to the step's left, ending 3 px before it, where it shows
// whole there and runs into no other label shown: the step at the view's
// edge is not shown unlabelled.
function flipTokenLabels(svg, from, to) {
  for (const t of svg.querySelectorAll("text:not([data-x]):not(.legend):not(.token-edge)")) {
    if (!/^(wrote )?\d+$/.test(t.textContent)) continue;
    if (t.dataset.tokenHome === undefined) t.dataset.tokenHome = t.getAttribute("x");
    t.setAttribute("x", t.dataset.tokenHome);
    const b = t.getBBox(), at = Number(t.dataset.tokenHome) - 3;
    const veil = svg.querySelector("rect.veil");
    if (veil && at > Number(veil.getAttribute("x")) + 0.5) continue; // not reached: it stays under the veil
    if (!(b.x < to && b.x + b.width > to + 0.5) || at > to || at - 3 - b.width < from) continue;
    t.setAttribute("x", String(at - 3 - b.width));
    if (overlapsShown(svg, t)) t.setAttribute("x", t.dataset.tokenHome);
  }
}

// home is where label t starts as drawn (x), before flipTokenLabels
// moved it (a token's label: the only ones it moves).
function home(t) {
  return t.dataset.tokenHome !== undefined ? Number(t.dataset.tokenHome) : t.getBBox().x;
}

// tokenAtEdge labels, in the tour, the storage's token line where it enters the view
// from..to at its left edge, with the token it holds there ("34", "wrote
// 33"), unless a label of that token shows in view: a step that says
// "it has seen token 34" shows the 34 once its step up slid out of view.
function tokenAtEdge(svg, from, to) {
  for (const old of svg.querySelectorAll("text.token-edge")) old.remove();
  if (!document.body.classList.contains("touring")) return; // the figure as drawn, but in the tour
  const veil = svg.querySelector("rect.veil");
  const end = veil ? Math.min(to, Number(veil.getAttribute("x"))) : to;
  const labels = [...svg.querySelectorAll("text:not([data-x]):not(.legend)")].filter((t) => /^(wrote )?\d+$/.test(t.textContent));
  for (const p of svg.querySelectorAll('polyline[stroke="#555"]:not(.legend):not(.peek)')) {
    const before = p.getAttribute("points").trim().split(/\s+/).map((xy) => xy.split(",").map(Number)).filter(([x]) => x <= from);
    if (!before.length) continue;
    const y = before[before.length - 1][1] - 3;
    const own = labels.filter((t) => Math.abs(Number(t.getAttribute("y")) - y) < 0.5);
    const last = own.filter((t) => Number(t.getAttribute("x")) - 3 <= from).pop();
    if (!last || own.some((t) => t.textContent === last.textContent && t.getBBox().x >= from && t.getBBox().x + t.getBBox().width <= end)) continue;
    const t = last.cloneNode(true);
    t.setAttribute("class", "token-edge");
    t.setAttribute("x", String(from + 3));
    t.style.visibility = "";
    const strip = svg.querySelector("rect.name-strip");
    if (strip) strip.before(t); // under the lane names' strip, as every label
    else svg.append(t);
    // Not where it would run past the veil or into a label shown.
    const b = t.getBBox();
    const clash = [...svg.querySelectorAll("text:not(.lane-name):not(.token-edge):not(.hint)")].some((o) => {
      if (o.style.visibility === "hidden" || o.classList.contains("legend") || o.classList.contains("cut")) return false;
      const c = o.getBBox();
      return c.width > 0 && c.x < end && c.x + c.width > from && c.x < b.x + b.width && b.x < c.x + c.width && c.y < b.y + b.height && b.y < c.y + c.height;
    });
    if (b.x + b.width > end || clash) t.remove();
  }
}

// hintMoments names, at the edges of what fig's column shows (from..to,
// scrolled to at), the moments a tour step marks (line.moment) that lie
// outside it: "◀ 2.4s" on the lane names' strip, "17.5s ▶" at the right;
// a tap on one scrolls both figures to its moments.
function hintMoments(fig, at, from, to) {
  const svg = fig.querySelector("svg");
  for (const old of svg.querySelectorAll("text.hint")) old.remove();
  const xs = [...svg.querySelectorAll("line.moment")].map((l) => Number(l.getAttribute("x1")));
  const ticks = [...svg.querySelectorAll('text[font-size="11"]')].map((t) => [Number(t.getAttribute("x")), parseFloat(t.textContent)]);
  if (!xs.length || ticks.length < 2) return;
  const [[x0, t0], [x1, t1]] = [ticks[0], ticks[ticks.length - 1]];
  const time = (x) => String(Math.round((t0 + (x - x0) * (t1 - t0) / (x1 - x0)) * 10) / 10) + "s";
  const k = scaleOf(svg);
  for (const [side, out] of [["left", xs.filter((x) => x < from - 0.5)], ["right", xs.filter((x) => x > to + 0.5)]]) {
    if (!out.length) continue;
    const t = document.createElementNS(svgNS, "text");
    const names = out.sort((a, b) => a - b).map(time).join(", ");
    t.textContent = side === "left" ? "\u25c0 " + names : names + " \u25b6";
    for (const [a, v] of Object.entries({ class: "hint", y: 52, "font-size": 12, "text-anchor": side === "left" ? "start" : "end",
      x: side === "left" ? at + 4 : at + fig.clientWidth / k - 4 })) t.setAttribute(a, String(v));
    t.setAttribute("aria-label", "Show the moment" + (out.length > 1 ? "s" : "") + " at " + names);
    t.addEventListener("click", () => {
      const figs = [...document.querySelectorAll(".run .timeline")];
      const strip = Math.max(...figs.map(stripWidth)), view = fig.clientWidth / k - strip;
      const target = side === "left" ? Math.min(...out) - strip - 30 : Math.max(...out) - strip - view + 30;
      for (const f of figs) {
        f.scrollLeft = Math.max(0, target) * k;
        keepLaneNames(f);
      }
    });
    svg.append(t);
    // On the lane names' strip, a hint wider than it names one moment a
    // line.
    if (side === "left" && out.length > 1 && t.getBBox().x + t.getBBox().width > at + stripWidth(fig) - 2) {
      t.replaceChildren(...out.map((x, i) => {
        const line = document.createElementNS(svgNS, "tspan");
        line.setAttribute("x", String(at + 4));
        if (i) line.setAttribute("dy", "14");
        line.textContent = (i ? "" : "\u25c0 ") + time(x) + (i < out.length - 1 ? "," : "");
        return line;
      }));
    }
  }
}

// slideBarLabels moves the label of each bar ("lease 33 (A)", centred in
// its bar) that the view from..to (or the tour's veil) cuts to the middle
// of the part of the bar in view, shortened ("lease 33") if only that
// fits there: the lane names' strip does not hide a bar's name while the
// bar shows.
function slideBarLabels(svg, from, to) {
  const veil = svg.querySelector("rect.veil");
  const end = veil ? Math.min(to, Number(veil.getAttribute("x"))) : to;
  const bars = [...svg.querySelectorAll('rect[rx="3"][height="14"]')].map((r) => {
    const x = Number(r.getAttribute("x")), y = Number(r.getAttribute("y"));
    return { x0: x, x1: x + Number(r.getAttribute("width")), y0: y, y1: y + 14 };
  });
  for (const t of svg.querySelectorAll("text:not([data-x]):not(.lane-name)")) {
    if (t.dataset.home !== undefined) {
      t.setAttribute("x", t.dataset.home);
      t.textContent = t.dataset.full;
    }
    const b = t.getBBox(), cy = b.y + b.height / 2;
    const bar = bars.find((r) => b.x >= r.x0 - 1 && b.x + b.width <= r.x1 + 1 && cy >= r.y0 && cy <= r.y1);
    if (!bar) continue;
    if (t.dataset.home === undefined) Object.assign(t.dataset, { home: t.getAttribute("x"), full: t.textContent });
    const lo = Math.max(bar.x0, from), hi = Math.min(bar.x1, end);
    if (b.x >= from && b.x + b.width <= end) continue;
    if (hi - lo < b.width + 8) {
      // The holder, " (A)", not drawn: the text stays the figure's.
      const short = t.dataset.full.replace(/ \(.*\)$/, "");
      const rest = document.createElementNS(svgNS, "tspan");
      rest.style.display = "none";
      rest.textContent = t.dataset.full.slice(short.length);
      t.replaceChildren(short, rest);
    }
    const c = t.getBBox();
    if (hi - lo < c.width + 8) {
      t.textContent = t.dataset.full;
      continue;
    }
    t.setAttribute("x", String(Number(t.dataset.home) + (lo + hi) / 2 - (c.x + c.width / 2)));
  }
  slidePauseLabels(svg, from, to, end);
}

// slidePauseLabels moves the label of each pause ("paused 15s", at its
// box's start) that the view from..to cuts, or the veil (from end), to
// the left edge of the part of the box in view, as the token's value at
// the view's edge, on its side of the box or, where it would run into a
// label shown there, the other: a grey box in view (16 px of it at least)
// stays named. Drawn above the veil, as every label of an event reached,
// it may run past it.
function slidePauseLabels(svg, from, to, end) {
  for (const r of svg.querySelectorAll("rect.pause")) {
    const x0 = Number(r.getAttribute("x")), x1 = x0 + Number(r.getAttribute("width"));
    const t = [...svg.querySelectorAll("text[data-x]")].find((l) => l.textContent.startsWith("paused ") && Math.abs(Number(l.dataset.x) - x0) < 0.5);
    if (!t) continue;
    if (t.dataset.home === undefined) Object.assign(t.dataset, { home: t.getAttribute("x"), homeY: t.getAttribute("y") });
    t.setAttribute("x", t.dataset.home);
    t.setAttribute("y", t.dataset.homeY);
    const b = t.getBBox(), lo = Math.max(x0, from), hi = Math.min(x1, end);
    if ((b.x >= from && b.x + b.width <= end) || hi - lo < 16 || lo + b.width + 8 > to) continue;
    // Above the box, or below it: the other side, as far from it.
    const top = Number(r.getAttribute("y")), bottom = top + Number(r.getAttribute("height"));
    const above = b.y + b.height <= top, gap = above ? top - b.y - b.height : b.y - bottom;
    const other = Number(t.dataset.homeY) + (above ? bottom + gap - b.y : top - gap - b.height - b.y);
    t.setAttribute("x", String(Number(t.dataset.home) + lo + 4 - b.x));
    const free = () => {
      const c = t.getBBox();
      return ![...svg.querySelectorAll("text:not(.lane-name):not(.hint)")].some((o) => {
        if (o === t || o.style.visibility === "hidden" || o.classList.contains("legend") || o.classList.contains("cut")) return false;
        const d = o.getBBox();
        return d.width > 0 && d.x < c.x + c.width && c.x < d.x + d.width && d.y < c.y + c.height && c.y < d.y + d.height;
      });
    };
    if (free()) continue;
    t.setAttribute("y", String(other));
    if (free()) continue;
    t.setAttribute("x", t.dataset.home);
    t.setAttribute("y", t.dataset.homeY);
  }
}

for (const fig of document.querySelectorAll(".run .timeline")) {
  fig.addEventListener("scroll", () => keepLaneNames(fig));
}

// renderVerdicts fills the bar that stays on screen: both verdicts.
function renderVerdicts(resp) {
  for (const [id, run] of [["v-off", resp.runs[0]], ["v-on", resp.runs[1]]]) {
    const el = document.getElementById(id);
    el.querySelector(".who").textContent = run.heading + ":";
    const v = el.querySelector(".verdict");
    v.textContent = verdicts[run.verdict] || run.verdict;
    v.className = "verdict " + run.verdict;
  }
}

// update runs q, redraws the page and puts the canonical query in the URL.
function update(q) {
  const width = figureWidth();
  const resp = JSON.parse(globalThis.fencesimRun(q, width));
  if (resp.error) {
    statusLine.textContent = resp.error;
    statusLine.hidden = false;
    if (!options) update(""); // a bad link: show the defaults under the message
    return;
  }
  if (options) statusLine.hidden = true;
  if (!options) fillOptions(resp);
  shown = resp;
  setControls(resp);
  document.getElementById("title").textContent = resp.title + ".";
  document.getElementById("story").textContent = resp.story;
  renderRun(document.getElementById("run-off"), resp.runs[0]);
  renderRun(document.getElementById("run-on"), resp.runs[1]);
  renderKey();
  scrollToDanger();
  renderVerdicts(resp);
  markMap();
  history.replaceState(history.state, "", "?" + resp.query);
  if (step >= 0) showStep(0);
  document.body.dataset.width = String(width); // for tests: the width the figures were drawn at
  document.body.dataset.query = resp.query; // for tests and screenshots: the run shown
}

form.addEventListener("input", (ev) => {
  if (ev.target.type === "range") showValue(ev.target);
  update(query(ev.target === form.scenario));
});

// A new width (a window resized, a phone turned) redraws the figures.
let resizeTimer = 0;
addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    if (shown && String(figureWidth()) !== document.body.dataset.width) update(shown.query);
  }, 200);
});

// The guided tour: one sentence a step, Back and Next (or the arrow
// keys). Each step draws both figures up to its moment (a veil hides the
// rest), marks the moment with a cursor and scrolls the figures into view.
const tourBox = document.getElementById("tour");
const svgNS = "http://www.w3.org/2000/svg";

// svgChild returns svg's child element of class cls, made by make the
// first time.
function svgChild(svg, tag, cls, attrs) {
  let el = svg.querySelector(`${tag}.${cls}`);
  if (!el) {
    el = document.createElementNS(svgNS, tag);
    el.setAttribute("class", cls);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    svg.append(el);
  }
  return el;
}

// presetLinks returns text as nodes, each preset it names in quotes
// (“Check, then write”: a title up to its colon, as tour.go writes it)
// a button that shows that preset and opens its tour at its step on
// topic (a summary step's, "the claim"), told with that run's moments,
// or at its start.
function presetLinks(text, topic) {
  const nodes = [];
  let at = 0;
  for (const m of text.matchAll(/\u201c([^\u201d]+)\u201d/g)) {
    const p = options.presets.find((p) => p.title.split(":")[0] === m[1]);
    if (!p) continue;
    nodes.push(text.slice(at, m.index));
    const b = document.createElement("button");
    b.type = "button";
    b.className = "preset-link";
    b.textContent = m[0];
    b.dataset.query = p.query;
    b.setAttribute("aria-label", "Show \u201c" + p.title + "\u201d and its tour's step on " + (topic || "it"));
    // The tour left is a history entry of its own, which the return
    // button (and the browser's Back) goes back to.
    b.addEventListener("click", () => {
      const from = { query: shown.query, step: step, height: tourBox.offsetHeight };
      history.pushState({ returnTo: from }, "", "?" + p.query);
      update(p.query);
      openTour(Math.max(0, shown.tour.findIndex((s) => topic && s.topic === topic)));
    });
    nodes.push(b);
    at = m.index + m[0].length;
  }
  nodes.push(text.slice(at));
  return nodes;
}

// showDrawing puts in fig the drawing of run a tour step needs: the
// run's opening, zoomed in (where the run has one: its first events lie
// too close together at the run's scale), or the whole run.
function showDrawing(fig, run, opening) {
  const want = opening && run.opening ? "opening" : "whole";
  if (fig.dataset.drawing === want) return;
  fig.innerHTML = want === "opening" ? run.opening : run.svg;
  fig.dataset.drawing = want;
}

// cursorGap is how far right of a step's moment its cursor is drawn:
// 4 px or more clear of a 3 px mark at the moment (a release's).
const cursorGap = 8;

// gapCursor cuts the tour's cursor out of svg, with a mask, where it
// would run through a label the figure shows (2 px around it): crossed
// at its first letter, "lease held by 33" read "|ease held by 33".
function gapCursor(svg) {
  const line = svg.querySelector("line.cursor");
  if (!line) return;
  const id = line.getAttribute("mask").slice(5, -1);
  const mask = svgChild(svg, "mask", "cursor-gaps", { id: id, maskUnits: "userSpaceOnUse", x: 0, y: 0,
    width: svg.getAttribute("width"), height: svg.getAttribute("height") });
  const x = Number(line.getAttribute("x1")), half = 2;
  const veil = svg.querySelector("rect.veil");
  const rect = (attrs) => {
    const r = document.createElementNS(svgNS, "rect");
    for (const [k, v] of Object.entries(attrs)) r.setAttribute(k, String(v));
    return r;
  };
  const rects = [rect({ x: 0, y: 0, width: svg.getAttribute("width"), height: svg.getAttribute("height"), fill: "white" })];
  for (const t of svg.querySelectorAll("text:not(.lane-name)")) {
    if (getComputedStyle(t).visibility === "hidden" || (t.compareDocumentPosition(veil) & Node.DOCUMENT_POSITION_FOLLOWING)) continue;
    const b = t.getBBox();
    if (b.width === 0 || b.x > x + half || b.x + b.width < x - half) continue;
    rects.push(rect({ x: x - half - 1, y: b.y - 2, width: 2 * half + 2, height: b.height + 4, fill: "black" }));
  }
  mask.replaceChildren(...rects);
}

function showStep(i) {
  const steps = shown.tour;
  step = Math.max(0, Math.min(i, steps.length - 1));
  const s = steps[step];
  document.body.classList.add("touring");
  document.getElementById("tour-count").textContent = `Step ${step + 1} of ${steps.length}.`;
  document.getElementById("tour-text").replaceChildren(...presetLinks(s.text, s.topic));
  // The address names the step (#step-N), so that it can be linked.
  history.replaceState(history.state, "", `?${shown.query}#step-${step + 1}`);
  showReturn();
  reserveTourHeight();
  document.getElementById("tour-back").disabled = step === 0;
  const next = document.getElementById("tour-next"), last = step === steps.length - 1;
  next.textContent = last ? "Finish" : "Next \u25b6";
  next.setAttribute("aria-label", !last ? "Next step" : returnTo() ? "Finish: back to the tour you came from" : "Finish the tour");
  document.body.classList.toggle("outcome", !!s.outcome);
  document.body.classList.toggle("marking", !!(s.moments && s.moments.length));
  for (const [f, fig] of [...document.querySelectorAll(".run .timeline")].entries()) {
    showDrawing(fig, shown.runs[f], s.opening);
    const svg = fig.querySelector("svg");
    const width = Number(svg.getAttribute("width")), height = Number(svg.getAttribute("height"));
    const veil = svgChild(svg, "rect", "veil", { y: 0, height: height });
    veil.setAttribute("x", String(s.x));
    veil.setAttribute("width", String(Math.max(0, width - s.x)));
    // The cursor, just above the veil (under every label), cursorGap
    // past the moment: an arrow that reaches the moment (A's late write,
    // nearly vertical) does not lie on it, nor does a release's mark.
    // Where it would run through a label, it stops (gapCursor).
    const line = svgChild(svg, "line", "cursor", { y1: 40, y2: height - 30, mask: `url(#${fig.closest(".run").id}-cursor-gaps)` });
    line.setAttribute("x1", String(s.x + cursorGap));
    line.setAttribute("x2", String(s.x + cursorGap));
    svg.append(veil, line);
    // A release's or expiry's mark (the grey or red end of a lease's
    // bar) at the moment, over the veil, which would hide half of it.
    for (const m of svg.querySelectorAll("line.released, line.expired")) {
      const x = Number(m.getAttribute("x1"));
      if (x > s.x - 2 && x <= s.x + 0.5) svg.append(m);
    }
    // The storage's token line again, over the veil, 3 px past the
    // moment at the level it has reached there: where the token steps at
    // the step's moment (a late write's token, lower), the step shows it,
    // as it shows its label, and nothing of a later step.
    for (const old of svg.querySelectorAll("polyline.peek")) old.remove();
    for (const p of svg.querySelectorAll('polyline[stroke="#555"]:not(.legend)')) {
      const pts = p.getAttribute("points").trim().split(/\s+/).map((xy) => xy.split(",").map(Number)).filter(([x]) => x <= s.x + 0.5);
      if (!pts.length) continue;
      pts.push([s.x + 3, pts[pts.length - 1][1]]);
      const c = p.cloneNode(false);
      c.setAttribute("class", "peek");
      c.setAttribute("points", pts.map((xy) => xy.join(",")).join(" "));
      svg.append(c);
    }
    // Labels of events the cursor has reached are drawn above the veil;
    // later ones are hidden (a label may reach left of its event), and so
    // is what holds only from a later moment (data-from: a write's loss).
    // A label of no event (a bar's, a token's) that the veil would cut
    // shows whole, and so does one that starts at the step's moment (the
    // storage's token, 3 px right of where it steps up). A pause's box,
    // as every other shape, is drawn up to the cursor; its label (data-x)
    // from its start.
    for (const t of svg.querySelectorAll("text[data-x]")) {
      const reached = Number(t.dataset.x) <= s.x + 0.5;
      t.style.visibility = reached ? "" : "hidden";
      if (reached) svg.append(t);
    }
    for (const t of svg.querySelectorAll("text:not([data-x]):not(.lane-name)")) {
      if (home(t) < s.x + 3.5) svg.append(t);
    }
    // A label's later part (", later LOST") takes no room until then: the
    // view keeps what it shows whole, not its room.
    for (const el of svg.querySelectorAll("[data-from]")) {
      el.style.visibility = Number(el.dataset.from) > s.x + 0.5 ? "hidden" : "";
      if (el.tagName === "tspan") el.style.display = Number(el.dataset.from) > s.x + 0.5 ? "none" : "";
    }
    markMoments(svg, s.moments || [], height, (!s.fig || s.fig === f + 1) && (s.store ? "store" : "all"));
  }
  // A narrow screen shows both figures at one position, so that an
  // instant sits at one place in both: it follows the cursor, centred in
  // what the lane names leave of the figure's width, or further left to
  // show whole the labels of the step's moment and just before, as long
  // as the cursor stays in view; there, the step's own labels in both
  // figures (within 6 px: the other run may end a little later) whole
  // above all, the storages' first (they tell a write's fate), then where
  // no label is cut. From the step that tells the outcome on, the
  // storages' earlier labels come next.
  const figs = [...document.querySelectorAll(".run .timeline")];
  const left = Math.max(...figs.map(stripWidth));
  const texts = figs.flatMap((fig) => {
    const svg = fig.querySelector("svg");
    const storeY = Math.max(...[...svg.querySelectorAll("text.lane-name")].map((n) => Number(n.getAttribute("y"))));
    return [...svg.querySelectorAll("text[data-x]")].map((t) => ({ t: t, at: Number(t.dataset.x), store: Number(t.dataset.y) > storeY }));
  });
  let recent = texts.filter((l) => l.at <= s.x + 0.5 && l.at >= s.x - 60);
  // The storages' labels of the writes the step names (A1, B1): whole,
  // with the step's own, as much as those.
  const names = s.text.match(/\b[A-Z]\d+\b/g) || [];
  const named = texts.filter((l) => l.store && l.at <= s.x + 0.5 && names.some((n) => l.t.textContent.startsWith(n + " (token")));
  // The labels the step quotes ("read claims 34"): whole too, after the
  // step's own and those.
  const quoted = quotedLabels(figs, s);
  const marked = texts.filter((l) => (s.moments || []).some((m) => l.at <= m + 0.5 && l.at >= m - 6) && !l.t.classList.contains("danger"));
  // At one of the last steps, the storages' fates it has reached ("B1
  // (token 34): ok, later LOST") are kept too, the nearest the moment it
  // is about (its focus: a late write, accepted in one figure, refused
  // in the other) first, as long as all fit the view at the least scale.
  const fit = [...marked, ...named, ...quoted];
  const focus = s.moments ? s.moments[s.focus || 0] : NaN;
  if (s.moments) {
    const room = figs[0].clientWidth / leastScale - left - 4;
    const span = (ls) => {
      const xs = [...s.moments, ...ls.flatMap((l) => [l.t.getBBox().x, l.t.getBBox().x + l.t.getBBox().width])];
      return Math.max(...xs) - Math.min(...xs);
    };
    const fates = texts.filter((l) => l.store && l.at <= s.x + 0.5 && /token \d+\)/.test(l.t.textContent) && !fit.includes(l));
    for (const l of fates.sort((a, b) => Math.abs(a.at - focus) - Math.abs(b.at - focus))) {
      if (span([...fit, l]) <= room) fit.push(l);
    }
  }
  fitStep(figs, fit, s.moments || []);
  const view = figs[0].clientWidth / scaleOf(figs[0].querySelector("svg"));
  if (s.moments) {
    // One of the last steps, which names earlier moments: those in view
    // (fitStep made room for all), with their labels whole, as many as
    // fit: its focus (the one the step is about) and, nearest it first,
    // those that fit with it and the storages' labels of both.
    const fit = [], ends = [];
    for (const m of momentOrder(s)) {
      const own = marked.filter((l) => l.store && l.at <= m + 0.5 && l.at >= m - 6).flatMap((l) => [l.t.getBBox().x, l.t.getBBox().x + l.t.getBBox().width]);
      const xs = [...ends, m - 8, m + 12, ...own];
      if (!fit.length || Math.max(...xs) - Math.min(...xs) <= view - left - 4) {
        fit.push(m);
        ends.push(...xs);
      }
    }
    const latest = Math.max(...fit);
    recent = marked.filter((l) => fit.some((m) => l.at <= m + 0.5 && l.at >= m - 6));
    const from = Math.min(...fit, ...recent.map((l) => l.t.getBBox().x));
    // Next, the storages' labels the step has reached (a write's fate:
    // "B1 (token 34): ok, later LOST"), as many as the view shows whole.
    const keep = new Map(texts.filter((l) => l.store && l.at <= s.x + 0.5).map((l) => [l.t, 20]));
    for (const l of quoted) keep.set(l.t, 200);
    for (const l of [...recent, ...named]) keep.set(l.t, l.store ? 300 : 100);
    // The focus' highlighted labels and the storages' there (the write's
    // fate in both figures) above all.
    for (const l of recent) if (l.at >= fit[0] - 6 && l.at <= fit[0] + 0.5 && (l.t.classList.contains("named") || l.store)) keep.set(l.t, 1000);
    scrollWhole(figs, from - left - 4, latest - view + 12, Math.min(...fit) - left - 4, keep);
  } else {
    recent = [...new Set([...recent, ...named, ...quoted])];
    // A quoted label's own moment too ("read claims 34": where the token
    // line steps up), a little in from the view's edge.
    const labelsLeft = Math.min(Infinity, ...recent.map((l) => l.t.getBBox().x), ...quoted.map((l) => l.at - 6));
    const target = Math.min(s.x - left - 0.5 * (view - left), labelsLeft - left - 4);
    const lo = s.x - view + 12;
    const own = new Map(texts.filter((l) => l.at <= s.x + 0.5 && (l.at >= s.x - 6 || (s.outcome && l.store)))
      .map((l) => [l.t, l.at < s.x - 6 ? 20 : l.store ? 300 : 100]));
    for (const l of quoted) own.set(l.t, 200);
    for (const l of named) own.set(l.t, 300);
    scrollWhole(figs, Math.max(lo, target), lo, s.x - left - 4, own);
  }
  // The first run's heading just below the sticky bar: on a desktop screen
  // both figures fit below it.
  const sticky = document.getElementById("sticky").offsetHeight;
  const top = document.getElementById("run-off").getBoundingClientRect().top + scrollY - sticky;
  scrollTo({ top: top, behavior: "instant" });
  // Both runs whole below the bar (fitStep makes them fit a phone): no further.
  if (document.getElementById("run-on").getBoundingClientRect().bottom <= innerHeight) {
    hideUnderBar();
    return;
  }
  // On a short screen, scroll on until the labels of the step's moment
  // (and just before it) are on screen, the second run's included; then,
  // nearby, to where no label shows only in part, those kept on screen.
  const bottom = Math.max(0, ...recent.map((l) => l.t.getBoundingClientRect().bottom + scrollY));
  const topmost = Math.min(Infinity, ...recent.map((l) => l.t.getBoundingClientRect().top + scrollY));
  const need = bottom - innerHeight;
  scrollPageWhole(Math.max(top, need + 8), Math.max(top - 60, need + 2), Math.min(top + 160, topmost - sticky - 2));
  hideUnderBar();
}

// quotedLabels is, in the figures figs, the labels step s has reached
// whose text it quotes ("read claims 34"), as showStep keeps them.
function quotedLabels(figs, s) {
  const quoted = [...s.text.matchAll(/\u201c([^\u201d]+)\u201d|"([^"]*)"/g)].map((m) => m[1] || m[2]).filter(Boolean);
  return figs.flatMap((fig) => [...fig.querySelectorAll("svg text:not(.legend):not(.lane-name):not(.hint)")]
    .filter((t) => quoted.includes(t.textContent))
    .map((t) => ({ t: t, at: t.dataset.x !== undefined ? Number(t.dataset.x) : home(t) - 3, store: true }))
    .filter((l) => l.at <= s.x + 0.5));
}

// momentOrder is the moments step s marks in the order a phone's view
// takes them: its focus (the one it is about), then the others, nearest
// the focus first.
function momentOrder(s) {
  const focus = s.moments[s.focus || 0];
  return [focus, ...s.moments.filter((_, i) => i !== (s.focus || 0)).sort((a, b) => Math.abs(a - focus) - Math.abs(b - focus))];
}

// fitStep scales both figures down, where they are wider than their
// column (a phone), as far as a step needs but no further than
// leastScale: so that the moments it names and the labels keep (theirs,
// and those of the writes it names) fit the view side by side, and so
// that both runs, headings to time axes, fit the screen below the
// tour's bar. Elsewhere, and where they fit at their own size, the
// figures keep it (12 px labels).
function fitStep(figs, keep, moments) {
  const svgs = figs.map((fig) => fig.querySelector("svg"));
  svgs.forEach((svg) => setScale(svg, 1));
  if (!svgs.some((svg, i) => Number(svg.getAttribute("width")) > figs[i].clientWidth)) return;
  let k = 1;
  if (moments.length) {
    const xs = [...moments, ...keep.flatMap((l) => {
      const b = l.t.getBBox();
      return [b.x, b.x + b.width];
    })];
    k = figs[0].clientWidth / (Math.max(...xs) - Math.min(...xs) + Math.max(...figs.map(stripWidth)) + 24);
  }
  const drawn = figs.reduce((h, fig) => h + fig.getBoundingClientRect().height, 0);
  const runs = document.getElementById("run-on").getBoundingClientRect().bottom - document.getElementById("run-off").getBoundingClientRect().top;
  const room = innerHeight - document.getElementById("sticky").offsetHeight - 2 - (runs - drawn);
  k = Math.max(leastScale, Math.min(k, room / drawn));
  if (k < 1) svgs.forEach((svg) => setScale(svg, k));
}

// leastScale is the least scale fitStep draws the figures at: their
// 12 px labels at 11 px (the axis' 11 px ones keep 11, style.css). Where
// a step's moments do not fit side by side at it, the view shows its
// focus and those that fit with it, and a sideways scroll the others.
const leastScale = 11 / 12;

// setScale draws svg at k screen pixels per unit of its own (1: its own
// size); --k scales the margins that cut its legend (style.css).
function setScale(svg, k) {
  if (k >= 1) {
    svg.style.removeProperty("width");
    svg.style.removeProperty("height");
    svg.style.removeProperty("--k");
    return;
  }
  svg.style.width = Number(svg.getAttribute("width")) * k + "px";
  svg.style.height = Number(svg.getAttribute("height")) * k + "px";
  svg.style.setProperty("--k", String(k));
}

// markMoments marks in svg the moments a last step names: a line at
// each, and, unless which is false (the step is about the other
// figure), the labels of its events (within 6 px before it, as the
// phone's view takes them; which "store": the storage's only) and a
// pause that starts there highlighted; an earlier step's marks go.
function markMoments(svg, moments, height, which) {
  for (const el of svg.querySelectorAll("line.moment")) el.remove();
  const storeY = Math.max(...[...svg.querySelectorAll("text.lane-name")].map((n) => Number(n.getAttribute("y"))));
  for (const t of svg.querySelectorAll("text[data-x]")) {
    const at = Number(t.dataset.x), row = which === "all" || (which === "store" && Number(t.dataset.y) > storeY);
    t.classList.toggle("named", row && !t.classList.contains("danger") && moments.some((m) => at <= m + 0.5 && at >= m - 6));
  }
  for (const r of svg.querySelectorAll("rect.pause")) {
    const x = Number(r.getAttribute("x"));
    r.classList.toggle("named", !!which && moments.some((m) => Math.abs(x - m) <= 0.5));
  }
  for (const m of moments) {
    const line = document.createElementNS(svgNS, "line");
    for (const [k, v] of Object.entries({ class: "moment", x1: m, x2: m, y1: 40, y2: height - 30 })) line.setAttribute(k, String(v));
    svg.querySelector("line.cursor").before(line);
  }
}

// hideUnderBar hides, while the tour runs, each label of the figures
// that the sticky bar covers in part (its top under the bar, its bottom
// below), until a scroll brings it whole: as keepLaneNames does sideways.
function hideUnderBar() {
  const bar = document.getElementById("sticky").getBoundingClientRect().bottom;
  const touring = step >= 0;
  for (const t of document.querySelectorAll(".run .timeline svg text:not(.lane-name)")) {
    const r = t.getBoundingClientRect();
    t.classList.toggle("under-bar", touring && r.top < bar - 0.5 && r.bottom > bar + 0.5);
  }
}
addEventListener("scroll", hideUnderBar);

// openTour shows the tour at step i.
function openTour(i) {
  tourBox.hidden = false;
  showStep(i);
  document.getElementById("tour-next").focus();
}
document.getElementById("tour-start").addEventListener("click", () => openTour(0));
document.getElementById("tour-back").addEventListener("click", () => showStep(step - 1));
// Finish, in a tour reached by a step's preset link, goes back to the
// tour and step it left, as its return button does: closing the tour
// would take that button with it.
document.getElementById("tour-next").addEventListener("click", () => {
  if (step < shown.tour.length - 1) showStep(step + 1);
  else if (returnTo()) history.back();
  else closeTour();
});
document.getElementById("tour-close").addEventListener("click", closeTour);

let defaultQuery = ""; // the default run's query, the main tour's

// showReturn shows, in a tour reached by a step's preset link, a button
// back to the tour and step it left.
function showReturn() {
  const b = document.getElementById("tour-return");
  const from = returnTo();
  b.hidden = !from;
  if (!from) return;
  defaultQuery = defaultQuery || JSON.parse(globalThis.fencesimRun("", figureWidth())).query;
  const main = from.query === defaultQuery;
  // Short, under Next: the step's text keeps its width (on a phone, its
  // arrow only, as the Back button's). Its label names the step it goes
  // back to.
  const word = document.createElement("span");
  word.className = "word";
  word.textContent = " " + (main ? "Main tour" : "Back");
  b.replaceChildren("\u21a9", word);
  b.title = "Back to the " + (main ? "main tour" : "tour you came from") + ", step " + (from.step + 1);
  b.setAttribute("aria-label", b.title);
}
document.getElementById("tour-return").addEventListener("click", () => history.back());

// returnTo is the tour and step a preset link left to show this one, if
// any.
function returnTo() {
  return history.state && history.state.returnTo;
}

// The browser's Back and Forward show the run and tour step their
// address names (a tour left by a preset link, and the preset's).
addEventListener("popstate", () => {
  if (!shown) return;
  const linked = /^#step-(\d+)$/.exec(location.hash);
  update(location.search.slice(1));
  if (linked) openTour(Number(linked[1]) - 1);
  else if (step >= 0) closeTour();
});

// reserveTourHeight gives the tour's bar the height of its tallest step
// in this tour, at this width, so that it holds still from step to step
// and the figures below it do not jump; but at most a quarter of the
// screen, the text scrolling in its place past that (a phone's preset
// tour with its way back to the main tour). A tour reached by a step's
// preset link keeps the height of the tour it left, its text scrolling
// in its place if longer.
let reserved = "";
function reserveTourHeight() {
  const from = !document.getElementById("tour-return").hidden && history.state.returnTo;
  const key = [shown.query, innerWidth, innerHeight, from && from.height].join(" ");
  if (key === reserved) return;
  reserved = key;
  const text = document.getElementById("tour-text"), count = document.getElementById("tour-count"), p = text.parentElement;
  const keep = [...text.childNodes], keepCount = count.textContent;
  tourBox.style.minHeight = "";
  p.style.removeProperty("max-height");
  p.style.removeProperty("overflow-y");
  let tallest = 0, rest = 0;
  for (const [i, s] of shown.tour.entries()) {
    count.textContent = `Step ${i + 1} of ${shown.tour.length}.`;
    text.replaceChildren(...presetLinks(s.text));
    tallest = Math.max(tallest, tourBox.offsetHeight);
    rest = Math.max(rest, tourBox.offsetHeight - p.offsetHeight);
  }
  text.replaceChildren(...keep);
  count.textContent = keepCount;
  const cap = Math.floor(innerHeight / 4) - (document.getElementById("sticky").offsetHeight - tourBox.offsetHeight);
  if (from && from.height) {
    if (tallest > from.height) {
      p.style.maxHeight = from.height - rest + "px";
      p.style.overflowY = "auto";
    }
    tallest = from.height;
  } else if (tallest > cap) {
    // Whole lines and half the next: the half line shows there is more.
    const line = parseFloat(getComputedStyle(p).lineHeight);
    const most = Math.floor((cap - rest) / line - 0.5) * line + line / 2;
    p.style.maxHeight = most + "px";
    p.style.overflowY = "auto";
    tallest = rest + most;
  }
  tourBox.style.minHeight = tallest + "px";
}

// closeTour hides the tour and shows both figures whole.
function closeTour() {
  tourBox.hidden = true;
  step = -1;
  history.replaceState(history.state, "", "?" + shown.query);
  document.body.classList.remove("touring", "outcome", "marking");
  for (const [f, fig] of [...document.querySelectorAll(".run .timeline")].entries()) showDrawing(fig, shown.runs[f], false);
  for (const el of document.querySelectorAll(".timeline .cursor, .timeline .cursor-gaps, .timeline .veil, .timeline .moment, .timeline .peek, .timeline .hint")) el.remove();
  for (const el of document.querySelectorAll(".timeline .named")) el.classList.remove("named");
  for (const el of document.querySelectorAll(".timeline [data-from], .timeline text[data-x]")) {
    el.style.visibility = "";
    el.style.removeProperty("display");
  }
  for (const fig of document.querySelectorAll(".run .timeline")) {
    setScale(fig.querySelector("svg"), 1);
    keepLaneNames(fig);
  }
  // The bar, shorter without the tour, leaves the scenario's description
  // in part under it: the page scrolls to show it whole.
  const bar = document.getElementById("sticky").getBoundingClientRect().bottom;
  const story = document.querySelector(".story").getBoundingClientRect();
  if (story.top < bar && story.bottom > bar) scrollBy(0, story.top - bar);
  hideUnderBar();
}
tourBox.addEventListener("keydown", (ev) => {
  if (ev.key === "ArrowLeft") showStep(step - 1);
  if (ev.key === "ArrowRight") showStep(step + 1);
});

// markMap draws "this run" at the run's pause/TTL on every panel of the
// violation map (each panel's plot area is a rect.plot).
function markMap() {
  const svg = document.querySelector("#map-figure svg");
  if (!svg || !shown) return;
  for (const old of svg.querySelectorAll(".here")) old.remove();
  const ratio = shown.pause_ttl;
  if (!(ratio > 0)) return;
  for (const plot of svg.querySelectorAll("rect.plot")) {
    const x0 = Number(plot.getAttribute("x")), y0 = Number(plot.getAttribute("y"));
    const w = Number(plot.getAttribute("width")), h = Number(plot.getAttribute("height"));
    const xmax = Number(plot.dataset.xmax);
    const x = x0 + Math.min(ratio, xmax) / xmax * w;
    const ns = "http://www.w3.org/2000/svg";
    const line = document.createElementNS(ns, "line");
    Object.entries({ class: "here", x1: x, x2: x, y1: y0, y2: y0 + h }).forEach(([k, v]) => line.setAttribute(k, String(v)));
    const text = document.createElementNS(ns, "text");
    Object.entries({ class: "here", x: x + 4, y: y0 + 14 }).forEach(([k, v]) => text.setAttribute(k, String(v)));
    text.textContent = ratio > xmax ? `this run (${ratio.toFixed(1)}, off the map)` : "this run";
    svg.append(line, text);
  }
}

// The violation map, redrawn for the controls' heartbeat/TTL: 3,520
// runs, so the status line is painted first.
const mapButton = document.getElementById("redraw-map");
mapButton.addEventListener("click", () => {
  const mapStatus = document.getElementById("map-status");
  mapButton.disabled = true;
  mapStatus.textContent = "running 11 pause lengths x 4 storage modes x 80 schedules...";
  setTimeout(() => {
    const t0 = performance.now();
    const resp = JSON.parse(globalThis.fencesimMap(document.body.dataset.query || ""));
    const ms = Math.round(performance.now() - t0);
    mapButton.disabled = false;
    if (resp.error) {
      mapStatus.textContent = resp.error;
      return;
    }
    document.getElementById("map-figure").innerHTML = resp.svg;
    markMap();
    mapStatus.textContent = "Drawn for " + document.body.dataset.query.match(/ttl=[^&]*&heartbeat=[^&]*/)[0].replace("&", ", ") +
      ` in ${(ms / 1000).toFixed(1)} s.`;
    document.body.dataset.map = document.body.dataset.query; // for tests: the query the map was drawn for
    document.body.dataset.mapMs = String(ms);
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
  const map = fetch("violation-map.svg").then((r) => r.text());
  await ready;
  document.getElementById("map-figure").innerHTML = await map;
  // A link to a tour step (#step-N) opens the tour there; update drops
  // the step from the address.
  const linked = /^#step-(\d+)$/.exec(location.hash);
  update(location.search.slice(1));
  if (linked) openTour(Number(linked[1]) - 1);
}

start().catch((e) => {
  statusLine.textContent = "The simulator did not start: " + e;
  statusLine.hidden = false;
});
