// VList is a virtual list of fixed-height rows: whatever the number of items,
// it keeps only the rows on screen in the DOM. Each row sits at its item's
// own offset and the pool is a ring (item i in row i mod size), so when items
// arrive at the end only the new rows are filled in and laid out: the rows
// already drawn keep their text and place. A draw reads nothing from the
// layout, so a frame lays the list out once. That is what lets the feed hold
// tens of thousands of messages and take a thousand a second without
// stalling the page.
export class VList {
  // render(row, item, index) fills a pooled row element; make() creates one.
  constructor({ rowHeight, make, render, className }) {
    this.rowHeight = rowHeight;
    this.make = make;
    this.render = render;
    this.items = [];
    this.follow = true; // keep the newest item in view
    this.el = document.createElement("div");
    this.el.className = "vlist" + (className ? " " + className : "");
    this.el.tabIndex = -1;
    this.spacer = document.createElement("div");
    this.spacer.className = "spacer-y";
    this.el.append(this.spacer);
    this.pool = [];
    this.pending = false;
    this.onfollow = null; // called when follow changes
    this.el.addEventListener("scroll", () => {
      // A scroll of the reader's own: the next draw places the end again.
      if (this.el.scrollTop !== this._top) this._top = -1;
      const atEnd = this.el.scrollTop + this.el.clientHeight >= this.el.scrollHeight - this.rowHeight;
      if (atEnd !== this.follow) {
        this.follow = atEnd;
        if (this.onfollow) this.onfollow(atEnd);
      }
      this.schedule();
    }, { passive: true });
    // The height is kept, not read at each draw: reading it after a change
    // would force a layout in the middle of the frame.
    this.view = 0;
    new ResizeObserver((es) => {
      this.view = es[es.length - 1].contentRect.height;
      this.schedule();
    }).observe(this.el);
  }

  // setItems replaces the list; every row is drawn again.
  setItems(items) {
    this.items = items;
    this.invalidate();
  }

  // dropped tells the list that n items left the front of its array: every
  // row moves, so drop in chunks. A reader scrolled back keeps their place.
  dropped(n) {
    if (!this.follow) this.el.scrollTop -= n * this.rowHeight;
    this.invalidate();
  }

  // schedule draws on the next frame; calls in between cost nothing.
  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.draw();
    });
  }

  // invalidate redraws every row, not only those whose item changed.
  invalidate() {
    for (const r of this.pool) if (r) r._item = undefined;
    this.schedule();
  }

  scrollToEnd() {
    this.follow = true;
    this.draw();
  }

  scrollToIndex(i) {
    const top = i * this.rowHeight;
    const el = this.el;
    if (top < el.scrollTop) el.scrollTop = top;
    else if (top + this.rowHeight > el.scrollTop + el.clientHeight) el.scrollTop = top + this.rowHeight - el.clientHeight;
    this.schedule();
  }

  draw() {
    const n = this.items.length;
    const rh = this.rowHeight;
    const total = n * rh;
    const view = this.view || 600;
    // Nothing here reads the layout, and the scroll comes last: the frame
    // lays out once, whatever changed.
    const top = this.follow ? Math.max(0, total - view) : Math.min(this.el.scrollTop, Math.max(0, total - view));
    const over = 8;
    const first = Math.max(0, Math.floor(top / rh) - over);
    const last = Math.min(n, Math.ceil((top + view) / rh) + over);
    // The ring holds a screenful and both overscans, its rows made as they
    // are first needed; when the viewport grows, every row takes its new
    // slot once.
    const size = Math.ceil(view / rh) + 2 * over + 1;
    if (this.pool.length < size) {
      this.pool.length = size;
      for (const r of this.pool) if (r) r._index = -1;
    }
    const ring = this.pool.length;
    for (let i = first; i < last; i++) {
      let r = this.pool[i % ring];
      if (!r) {
        r = this.pool[i % ring] = this.make();
        r._index = -1;
        this.el.append(r);
      }
      const item = this.items[i];
      if (r._item !== item || r._index !== i) {
        if (r._index !== i) r.style.transform = `translateY(${i * rh}px)`;
        r._item = item;
        r._index = i;
        this.render(r, item, i);
      }
      if (r.hidden) r.hidden = false;
    }
    // Slots the range does not reach (a short list) stay empty.
    for (let k = last - first; k < ring; k++) {
      const r = this.pool[(first + k) % ring];
      if (r && !r.hidden) {
        r.hidden = true;
        r._item = undefined;
        r._index = -1;
      }
    }
    if (this.spacer._h !== total) {
      this.spacer.style.height = total + "px";
      this.spacer._h = total;
    }
    if (this.follow && this._top !== top) this.el.scrollTop = top;
    this._top = top;
  }
}
