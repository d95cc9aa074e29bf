// The frames a viewer has fetched, per variant, and which ones to fetch next. A frame holds the figures of the
// frame panels asked for so far; a frame counts as cached for a set of panels only when it has all of them. The
// oldest frames are dropped above ``limit``. Prefetching fetches chunks of CHUNK frames, the nearest chunk to the
// shown frame first, up to WINDOW frames on each side.
export const CHUNK = 16;            // frames per prefetch request
export const WINDOW = 64;           // frames prefetched on each side of the shown one
export const CACHE_LIMIT = 2500;    // frames kept per viewer

export class FrameCache {
  constructor(limit = CACHE_LIMIT) {
    this.frames = new Map();
    this.limit = limit;
  }

  clear() {
    this.frames.clear();
  }

  // frame ``index`` of ``variant`` if it holds every panel of ``names``, else null
  get(variant, index, names) {
    const e = this.frames.get(`${variant}:${index}`);
    return e && names.every((n) => n in e.figures) ? e : null;
  }

  // frames as /api/runs/{id}/frames returns them ({index, time, figures})
  put(variant, frames) {
    for (const f of frames) {
      const k = `${variant}:${f.index}`;
      const e = this.frames.get(k) || { time: f.time, figures: {} };
      Object.assign(e.figures, f.figures);
      this.frames.set(k, e);
    }
    while (this.frames.size > this.limit) this.frames.delete(this.frames.keys().next().value);
  }

  // [start, stop) of the nearest chunk around ``target`` (of ``n`` frames) missing a frame of ``names``, or null
  missing(variant, target, n, names) {
    if (!names.length) return null;
    const center = Math.floor(target / CHUNK) * CHUNK;
    for (let d = 0; d <= WINDOW; d += CHUNK) {
      for (const start of d ? [center + d, center - d] : [center]) {
        if (start < 0 || start >= n) continue;
        const stop = Math.min(start + CHUNK, n);
        for (let i = start; i < stop; i++) if (!this.get(variant, i, names)) return [start, stop];
      }
    }
    return null;
  }
}
