// Playing a viewer's frames from its slider's position to the last one: a stride so that a run of any length plays
// in at most about 400 steps, each at least 40 ms (the drawing of a frame waits for its fetch, so a step can be
// longer). Playing stops following the live run; the play button shows ▶ or ❚❚.
import { sleep } from "./dom.js";

export class Player {
  constructor(viewer, button) {
    this.viewer = viewer;
    this.button = button;
    this.playing = false;
  }

  toggle() {
    if (this.playing) this.stop();
    else this.start();
  }

  stop() {
    this.playing = false;
    this.button.textContent = "▶";
  }

  async start() {
    const v = this.viewer;
    const n = v.meta && v.meta.view ? v.meta.view.times.length : 0;
    if (n < 2) return;
    this.playing = true;
    this.button.textContent = "❚❚";
    v.follow.checked = false;
    if (v.target >= n - 1) await v.show(0);
    const stride = Math.max(1, Math.ceil(n / 400));
    while (this.playing) {
      const next = v.target + stride;
      if (next >= v.meta.view.times.length) break;
      await Promise.all([v.show(next), sleep(40)]);
    }
    this.stop();
  }
}
