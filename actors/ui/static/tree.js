// The node tree, virtualised: only the rows in view exist in the page, so a session of
// tens of thousands of nodes scrolls as fast as one of ten.
//
// Layout: a root (an agent's first node) starts a group; a node's child on the active
// path (else its first child) continues on the same level; its other children start
// branches one level deeper. Roots and branches fold; the active path starts unfolded.
import { fill, h } from "./dom.js";

export const ROW_H = 24;
const OVERSCAN = 12;

export class TreeView {
  /** `fetchExcerpts(ids)` resolves to {id: [excerpt, kinds]} for the rows shown. */
  constructor(root, onSelect, fetchExcerpts) {
    this.onSelect = onSelect;
    this.fetchExcerpts = fetchExcerpts;
    this.excerpts = new Map(); // a node never changes once appended: kept across reloads
    this.asking = new Set();
    this.sizes = new Map();
    this.open = new Set();
    this.seen = new Set();
    this.rows = [];
    this.selected = null;
    this.inner = h("div", { class: "tree-inner" });
    this.viewport = h("div", { class: "tree", id: "tree", tabindex: 0 }, this.inner);
    this.viewport.addEventListener("scroll", () => this.paint());
    root.append(this.viewport);
  }

  /** Take a new tree document (first load or a live refresh: folds are kept). */
  load(doc) {
    this.doc = doc;
    const byId = new Map();
    const kids = new Map();
    const roots = [];
    for (const n of doc.nodes) {
      byId.set(n[0], n);
      if (n[1] && byId.has(n[1])) {
        if (!kids.has(n[1])) kids.set(n[1], []);
        kids.get(n[1]).push(n[0]);
      } else roots.push(n[0]);
    }
    const onPath = new Set(doc.active_path);
    this.byId = byId;
    this.sizes = new Map();
    this.kids = kids;
    this.roots = roots;
    this.onPath = onPath;
    // Groups and branches start folded, except where the active path runs; a fold the
    // user opened or closed stays as it is across refreshes.
    for (const id of roots.concat(this.branchStarts())) {
      if (this.seen.has(id)) continue;
      this.seen.add(id);
      if (onPath.has(id)) this.open.add(id);
    }
    if (!this.shown && doc.active_node_id) {
      // First look: the active node in view, wherever it is in a long session.
      this.shown = true;
      this.reveal(doc.active_node_id);
      return;
    }
    this.layout();
  }

  continuation(id) {
    const ks = this.kids.get(id);
    if (!ks) return null;
    return ks.find((k) => this.onPath.has(k)) || ks[0];
  }

  branchStarts() {
    const out = [];
    for (const [id, ks] of this.kids) {
      if (ks.length < 2) continue;
      const cont = this.continuation(id);
      for (const k of ks) if (k !== cont) out.push(k);
    }
    return out;
  }

  isStart(id) {
    const n = this.byId.get(id);
    return !n[1] || !this.byId.has(n[1]) || this.continuation(n[1]) !== id;
  }

  /** Count the nodes under a fold (shown on a folded row). */
  size(id) {
    if (this.sizes.has(id)) return this.sizes.get(id);
    let count = 0;
    const stack = [id];
    while (stack.length) {
      const x = stack.pop();
      count += 1;
      for (const k of this.kids.get(x) || []) stack.push(k);
    }
    this.sizes.set(id, count);
    return count;
  }

  /** Flatten the visible rows (iterative: a chain may be thousands of nodes deep). */
  layout() {
    const rows = [];
    const stack = [];
    for (let i = this.roots.length - 1; i >= 0; i--) stack.push([this.roots[i], 0]);
    while (stack.length) {
      const [id, depth] = stack.pop();
      const start = this.isStart(id);
      const folded = start && !this.open.has(id);
      rows.push({ id, depth, start, folded });
      if (folded) continue;
      const ks = this.kids.get(id) || [];
      const cont = this.continuation(id);
      if (cont) stack.push([cont, depth]);
      for (let i = ks.length - 1; i >= 0; i--) if (ks[i] !== cont) stack.push([ks[i], depth + 1]);
    }
    this.rows = rows;
    this.inner.style.height = `${rows.length * ROW_H}px`;
    this.paint(true);
  }

  toggle(id) {
    if (this.open.has(id)) this.open.delete(id);
    else this.open.add(id);
    this.layout();
  }

  /** Unfold everything on the way to `id` and scroll it into view. */
  reveal(id) {
    let x = id;
    while (x && this.byId.has(x)) {
      if (this.isStart(x)) this.open.add(x);
      x = this.byId.get(x)[1];
    }
    this.layout();
    const i = this.rows.findIndex((r) => r.id === id);
    if (i >= 0) this.viewport.scrollTop = Math.max(0, i * ROW_H - this.viewport.clientHeight / 3);
  }

  paint(force = false) {
    const top = this.viewport.scrollTop;
    const height = this.viewport.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    const last = Math.min(this.rows.length, Math.ceil((top + height) / ROW_H) + OVERSCAN);
    if (!force && first === this.first && last === this.last) return;
    this.first = first;
    this.last = last;
    const out = [];
    const missing = [];
    for (let i = first; i < last; i++) {
      const id = this.rows[i].id;
      if (!this.excerpts.has(id) && !this.asking.has(id)) missing.push(id);
      out.push(this.row(this.rows[i], i));
    }
    fill(this.inner, ...out);
    if (missing.length) this.ask(missing);
  }

  /** Fetch the excerpts of rows in view, then paint them in. */
  async ask(ids) {
    ids.forEach((id) => this.asking.add(id));
    let got = {};
    try {
      got = await this.fetchExcerpts(ids);
    } catch (e) {
      got = {}; // shown as "(unavailable)" below; a refresh asks again
    }
    for (const id of ids) {
      this.asking.delete(id);
      this.excerpts.set(id, got[id] || ["(unavailable)", ""]);
    }
    this.paint(true);
  }

  row(r, i) {
    const n = this.byId.get(r.id);
    const [id, , agent, role, type] = n;
    const known = this.excerpts.get(id);
    const [excerpt, kinds] = known || ["…", ""];
    const ks = this.kids.get(id) || [];
    const classes = ["node", `role-${role}`];
    if (this.onPath.has(id)) classes.push("on-path");
    if (id === this.doc.active_node_id) classes.push("active");
    if (id === this.selected) classes.push("selected");
    const toggle = r.start
      ? h(
          "button",
          {
            class: "fold",
            title: r.folded ? "unfold" : "fold",
            "aria-expanded": r.folded ? "false" : "true",
            onclick: (ev) => {
              ev.stopPropagation();
              this.toggle(id);
            },
          },
          r.folded ? "▸" : "▾",
        )
      : h("span", { class: "fold-space" });
    const marks = [];
    if (ks.length > 1) marks.push(h("span", { class: "mark branch", title: `${ks.length} branches` }, `⑂${ks.length}`));
    if (type === "compaction") marks.push(h("span", { class: "mark compaction" }, "compaction"));
    if (this.doc.forks[id]) marks.push(h("span", { class: "mark fork", title: `${this.doc.forks[id]} forked here` }, "fork"));
    if (kinds.includes("c")) marks.push(h("span", { class: "mark call" }, "call"));
    if (kinds.includes("r")) marks.push(h("span", { class: kinds.includes("e") ? "mark result err" : "mark result" }, "result"));
    if (kinds.includes("a")) marks.push(h("span", { class: "mark artifact" }, "artifact"));
    if (r.folded) marks.push(h("span", { class: "mark folded" }, `${this.size(id)} nodes`));
    return h(
      "div",
      {
        class: classes.join(" "),
        style: { top: `${i * ROW_H}px`, paddingLeft: `${6 + r.depth * 18}px` },
        dataset: { node: id },
        onclick: () => this.select(id),
      },
      toggle,
      h("span", { class: "dot" }, this.onPath.has(id) ? "●" : "○"),
      h("span", { class: "who" }, `${agent} · ${role}${type !== "message" ? ` · ${type}` : ""}`),
      ...marks,
      h("span", { class: known ? "excerpt ready" : "excerpt" }, excerpt),
    );
  }

  select(id) {
    this.selected = id;
    this.paint(true);
    this.onSelect(id);
  }
}
