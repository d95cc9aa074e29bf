// Series panels (time on x): the dashed time cursor at the shown frame, an HTML line placed over the plot with the
// plot's own x axis (moving it costs no Plotly relayout), and the frame nearest a clicked time.

// place the cursor line of series panel ``div`` (in its cell) at time ``t``; hidden outside the x range
export function placeCursor(div, t) {
  const line = div.parentElement.querySelector(".cursor");
  const full = div._fullLayout;
  if (!full || !full.xaxis || !line) return;
  const xa = full.xaxis;
  const ya = full.yaxis;
  const px = xa._offset + xa.l2p(xa.d2l(t));  // data → linear (log axes) → pixels
  line.hidden = !(px >= xa._offset - 1 && px <= xa._offset + xa._length + 1);
  line.style.left = `${px}px`;
  line.style.top = `${ya._offset}px`;
  line.style.height = `${ya._length}px`;
  line.style.bottom = "auto";
  div.dataset.cursor = t;
}

// the index of the time in sorted ``times`` nearest ``time`` (the earlier one on a tie)
export function nearestIndex(times, time) {
  let lo = 0;
  let hi = times.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid] < time) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && Math.abs(times[lo - 1] - time) <= Math.abs(times[lo] - time) ? lo - 1 : lo;
}
