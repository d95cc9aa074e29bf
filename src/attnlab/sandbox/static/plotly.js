// Plotly.js loads with `async` (index.html): the browser compiles its 4.8 MB off the main thread while the page
// asks the API for the run, and drawing waits for it here.
const tag = document.getElementById("plotly");

export const plotlyReady = window.Plotly ? Promise.resolve() : new Promise((resolve, reject) => {
  tag.addEventListener("load", () => resolve());
  tag.addEventListener("error", () => reject(new Error("plotly.min.js did not load")));
});

const PLOT_CONFIG = { displayModeBar: false, responsive: false, doubleClick: "reset" };
// Draw figure ``fig`` into ``div`` at a measured size. Plotly.react deep-copies and compares a config it is given on
// every call (~1 ms a plot): it is given once, on the first draw.
export const plot = (div, fig, width, height) =>
  Plotly.react(div, fig.data, { ...fig.layout, width, height }, div._fullLayout ? undefined : PLOT_CONFIG);
