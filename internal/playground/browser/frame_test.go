package browser

// frameState is where the figures' frames (each figure's visible box,
// its outline, time axis included) and their headings are on screen,
// the bottom of the tour's bar, and the box of its Next button.
type frameState struct {
	Frames [][2]float64 // per figure: top and bottom on screen
	Titles [][2]float64 // per figure: its heading's top and bottom
	Bar    float64
	Screen float64
	Next   [4]float64 // left, top, right, bottom
	Scale  float64    // the first figure's: screen pixels per unit of its own
}

const frameStateJS = `(() => {
  const ys = (el) => {
    const r = el.getBoundingClientRect();
    return [r.top, r.bottom];
  };
  const n = document.getElementById("tour-next").getBoundingClientRect();
  return {
    Frames: [...document.querySelectorAll(".run .timeline")].map(ys),
    Titles: [...document.querySelectorAll(".run > header h2")].map(ys),
    Bar: document.getElementById("sticky").getBoundingClientRect().bottom,
    Screen: innerHeight,
    Next: [n.left, n.top, n.right, n.bottom],
    Scale: (() => { const svg = document.querySelector(".run .timeline svg"); return svg.getBoundingClientRect().width / +svg.getAttribute("width"); })(),
  };
})()`

// namedFatesJS, called with a tour step's x and the writes its text
// names, lists the storages' labels of those writes' fates ("A1 (token
// 33): ok") that the step has reached, in both figures, and those of them
// not shown whole: out of the figure's view (left of the lane names'
// strip, right of its edge), under the tour's bar or below the screen;
// and whether side by side they fit the view (Fit).
const namedFatesJS = `((x, names, first) => {
  const bar = document.getElementById("sticky").getBoundingClientRect().bottom;
  const out = {All: [], Missing: [], Fit: true};
  let lo = Infinity, hi = -Infinity, view = Infinity;
  for (const fig of document.querySelectorAll(".run .timeline")) {
    const svg = fig.querySelector("svg");
    const f = fig.getBoundingClientRect();
    const strip = svg.querySelector("rect.name-strip");
    const left = strip && getComputedStyle(strip).visibility !== "hidden" ? strip.getBoundingClientRect().right : f.left;
    const right = f.left + fig.clientLeft + fig.clientWidth;
    const storeY = Math.max(...[...svg.querySelectorAll("text.lane-name")].map((n) => +n.getAttribute("y")));
    for (const t of svg.querySelectorAll("text[data-x]")) {
      if (+t.dataset.y <= storeY || +t.dataset.x > x + 0.5) continue;
      if (!names.some((n) => t.textContent.startsWith(n + " (token"))) continue;
      // A summary step shows its focus (at x first, if not -1) and
      // those that fit with it (primaryInView): the writes it names whose
      // moment lies there, and whose label fits beside the focus.
      const sv = svg.getBoundingClientRect(), k = sv.width / +svg.getAttribute("width");
      const at = sv.left + +t.dataset.x * k, m = sv.left + first * k, tb = t.getBoundingClientRect();
      if (first >= 0 && (at < left - 0.5 || at > right + 0.5 || Math.max(m, tb.right) - Math.min(m, tb.left) > right - left)) continue;
      out.All.push(t.textContent);
      const b = t.getBoundingClientRect();
      lo = Math.min(lo, b.left);
      hi = Math.max(hi, b.right);
      view = Math.min(view, right - left);
      const r = t.getBoundingClientRect();
      const whole = getComputedStyle(t).visibility !== "hidden" && r.left >= left - 0.5 && r.right <= right + 0.5 &&
        r.top >= bar - 0.5 && r.bottom <= innerHeight + 0.5;
      if (!whole) out.Missing.push(t.textContent + " at x " + Math.round(r.left) + ".." + Math.round(r.right) +
        ", view " + Math.round(left) + ".." + Math.round(right));
    }
  }
  out.Fit = hi - lo <= view + 1;
  return out;
})`
