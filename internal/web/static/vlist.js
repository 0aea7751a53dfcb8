// VList is a virtual list of fixed-height rows: whatever the number of items,
// it keeps only the rows on screen in the DOM, reuses them as it scrolls, and
// draws at most once per animation frame. That is what lets the feed hold
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
    this.rows = document.createElement("div");
    this.rows.className = "rows";
    this.el.append(this.spacer, this.rows);
    this.pool = [];
    this.pending = false;
    this.onfollow = null; // called when follow changes
    this.el.addEventListener("scroll", () => {
      const atEnd = this.el.scrollTop + this.el.clientHeight >= this.el.scrollHeight - this.rowHeight;
      if (atEnd !== this.follow) {
        this.follow = atEnd;
        if (this.onfollow) this.onfollow(atEnd);
      }
      this.schedule();
    }, { passive: true });
    new ResizeObserver(() => this.schedule()).observe(this.el);
  }

  setItems(items) {
    this.items = items;
    this.schedule();
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
    for (const r of this.pool) r._item = undefined;
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
    if (this.spacer._h !== total) {
      this.spacer.style.height = total + "px";
      this.spacer._h = total;
    }
    const view = this.el.clientHeight || 600;
    if (this.follow) this.el.scrollTop = Math.max(0, total - view);
    const over = 8;
    const first = Math.max(0, Math.floor(this.el.scrollTop / rh) - over);
    const last = Math.min(n, Math.ceil((this.el.scrollTop + view) / rh) + over);
    const count = Math.max(0, last - first);
    while (this.pool.length < count) {
      const r = this.make();
      this.pool.push(r);
      this.rows.append(r);
    }
    this.rows.style.transform = `translateY(${first * rh}px)`;
    for (let i = 0; i < this.pool.length; i++) {
      const r = this.pool[i];
      if (i >= count) {
        if (!r.hidden) r.hidden = true;
        continue;
      }
      if (r.hidden) r.hidden = false;
      const item = this.items[first + i];
      if (r._item !== item || r._index !== first + i) {
        r._item = item;
        r._index = first + i;
        this.render(r, item, first + i);
      }
    }
  }
}
