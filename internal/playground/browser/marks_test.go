package browser

// marks is what a tour step highlights in each figure: the x of each
// moment line and the text of each highlighted label ("pause" for a
// pause's bar).
type marks struct {
	Lines [][]float64
	Named [][]string
}

const marksJS = `(() => {
  const svgs = [...document.querySelectorAll(".run .timeline svg")];
  return {
    Lines: svgs.map((svg) => [...svg.querySelectorAll("line.moment")].map((l) => +l.getAttribute("x1"))),
    Named: svgs.map((svg) => [...svg.querySelectorAll(".named")].filter((t) => getComputedStyle(t).visibility !== "hidden" &&
      getComputedStyle(t).stroke !== getComputedStyle(svg.querySelector("text:not(.named):not(.lane-name)")).stroke).map((t) => t.tagName === "rect" ? "pause" : t.textContent)),
  };
})()`
