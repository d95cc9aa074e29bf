// Plotly.js loads with `async` (index.html): the browser compiles its 4.8 MB off the main thread while the page
// asks the API for the run, and drawing waits for it here.
const tag = document.getElementById("plotly");

export const plotlyReady = window.Plotly ? Promise.resolve() : new Promise((resolve, reject) => {
  tag.addEventListener("load", () => resolve());
  tag.addEventListener("error", () => reject(new Error("plotly.min.js did not load")));
});
