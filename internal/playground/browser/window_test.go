package browser

// windowState is what a phone shows of both figures at a tour step: each
// figure's sideways scroll, its storage lane's short name, and the
// storage labels (a write's fate) that its view shows whole.
type windowState struct {
	Scroll []float64
	Names  []string
	Fates  [][]string
}

const windowStateJS = `(() => {
  const figs = [...document.querySelectorAll(".run .timeline")];
  return {
    Scroll: figs.map((f) => f.scrollLeft),
    Names: figs.map((f) => [...f.querySelectorAll("svg text.lane-name")].pop().textContent),
    Fates: figs.map((f) => {
      const r = f.getBoundingClientRect();
      const strip = f.querySelector("svg rect.name-strip");
      const left = strip && getComputedStyle(strip).visibility !== "hidden" ? strip.getBoundingClientRect().right : r.left;
      return [...f.querySelectorAll("svg text[data-x]")].filter((t) => /token \d+\)|claims|write A1/.test(t.textContent) &&
        getComputedStyle(t).visibility !== "hidden").filter((t) => {
        const b = t.getBoundingClientRect();
        return b.left >= left - 0.5 && b.right <= r.left + f.clientWidth + 0.5;
      }).map((t) => t.textContent);
    }),
  };
})()`

// momentState is what a phone's figures show of the moments a tour step
// talks about, on screen: per figure, the part of the drawing in view
// (right of the lane names' strip), where each moment lies, and the
// labels the step marks at those moments (its events' up to 6 px before
// each, but the danger's banner), each with whether it shows whole there.
type momentState struct {
	From, To []float64
	Moments  [][]float64
	Labels   [][]momentLabel
}

type momentLabel struct {
	Text   string
	X0, X1 float64
	Whole  bool
	M      int  // the index of its moment
	Store  bool // a storage's label
	Named  bool // highlighted as what the step is about
}

const momentStateJS = `((moments) => {
  const out = {From: [], To: [], Moments: [], Labels: []};
  for (const fig of document.querySelectorAll(".run .timeline")) {
    const svg = fig.querySelector("svg");
    const f = fig.getBoundingClientRect(), s = svg.getBoundingClientRect();
    const k = s.width / +svg.getAttribute("width"); // a step may scale the figure down
    const strip = svg.querySelector("rect.name-strip");
    const left = strip && getComputedStyle(strip).visibility !== "hidden" ? strip.getBoundingClientRect().right : f.left + fig.clientLeft;
    const right = f.left + fig.clientLeft + fig.clientWidth;
    out.From.push(left);
    out.To.push(right);
    out.Moments.push(moments.map((m) => s.left + m * k));
    const storeY = Math.max(...[...svg.querySelectorAll("text.lane-name")].map((n) => +n.getAttribute("y")));
    const at = (t) => moments.findIndex((m) => +t.dataset.x <= m + 0.5 && +t.dataset.x >= m - 6);
    out.Labels.push([...svg.querySelectorAll("text[data-x]:not(.danger)")].filter((t) => at(t) >= 0).map((t) => {
      const b = t.getBoundingClientRect();
      return {Text: t.textContent, X0: b.left, X1: b.right, M: at(t), Store: +t.dataset.y > storeY, Named: t.classList.contains("named"),
        Whole: getComputedStyle(t).visibility !== "hidden" && b.left >= left - 0.5 && b.right <= right + 0.5};
    }));
  }
  return out;
})`
