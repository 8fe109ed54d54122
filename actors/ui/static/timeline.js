// The run timeline: one page of events at a time, filtered by agent, type and run; the
// last page follows the live stream.
import { api, fill, h, showError } from "./dom.js";

const PAGE = 100;

export class Timeline {
  constructor(root, sid) {
    this.sid = sid;
    this.cursors = [0]; // the `after` of each page seen: Back pops one
    this.next = null;
    this.agent = h("select", { id: "f-agent", onchange: () => this.restart() }, h("option", { value: "" }, "every agent"));
    this.type = h("select", { id: "f-type", onchange: () => this.restart() }, h("option", { value: "" }, "every type"));
    this.run = h("select", { id: "f-run", onchange: () => this.restart() }, h("option", { value: "" }, "every run"));
    this.body = h("tbody");
    this.pageLine = h("span", { class: "muted" });
    this.prevBtn = h("button", { onclick: () => this.back() }, "◂ earlier");
    this.nextBtn = h("button", { id: "tl-next", onclick: () => this.forward() }, "later ▸");
    root.append(
      h("div", { class: "bar" }, this.agent, this.type, this.run, this.prevBtn, this.nextBtn, this.pageLine),
      h(
        "table",
        { class: "timeline", id: "timeline" },
        h("thead", {}, h("tr", {}, ["seq", "type", "agent", "run", "summary"].map((t) => h("th", {}, t)))),
        this.body,
      ),
    );
  }

  facets(doc) {
    const addOptions = (select, values) => {
      const have = new Set([...select.options].map((o) => o.value));
      const add = document.createDocumentFragment();
      for (const [value, label] of values) if (!have.has(value)) add.append(h("option", { value }, label));
      select.append(add);
    };
    addOptions(this.agent, doc.agents.map((a) => [a.short, a.short]));
    addOptions(this.type, doc.event_types.map((t) => [t, t]));
    addOptions(this.run, doc.runs_list.map((r) => [r.short, r.short]));
  }

  filters() {
    return { agent: this.agent.value, type: this.type.value, run: this.run.value };
  }

  restart() {
    this.cursors = [0];
    this.load();
  }

  back() {
    if (this.cursors.length > 1) this.cursors.pop();
    this.load();
  }

  forward() {
    if (this.next === null) return;
    this.cursors.push(this.next);
    this.load();
  }

  /** True when the page shown is the last one (new events belong on it). */
  atEnd() {
    return this.next === null;
  }

  async load() {
    const after = this.cursors[this.cursors.length - 1];
    let doc;
    try {
      doc = await api(`/api/sessions/${this.sid}/timeline`, { after, limit: PAGE, ...this.filters() });
    } catch (e) {
      showError(this.body, e);
      return;
    }
    this.next = doc.next;
    fill(this.body, ...doc.events.map((e) => this.row(e)));
    if (!doc.events.length) this.body.append(h("tr", {}, h("td", { colspan: 5, class: "muted" }, "no event matches")));
    this.prevBtn.disabled = this.cursors.length <= 1;
    this.nextBtn.disabled = doc.next === null;
    this.pageLine.textContent = `page ${this.cursors.length} · ${doc.last_seq} events`;
  }

  row(e) {
    return h(
      "tr",
      { class: `lvl-${e.level}`, dataset: { seq: e.seq, type: e.type } },
      h("td", { class: "num" }, e.seq),
      h("td", {}, e.type),
      h("td", {}, e.agent),
      h("td", {}, e.run),
      h("td", { class: "summary" }, e.summary),
    );
  }
}
