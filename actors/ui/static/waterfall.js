// The waterfall: one row per run on a shared time axis, a bar per model call, tool call,
// approval wait, park, compaction and cancellation (widths are recorded durations).
// Only the rows in view are in the page, so a session of thousands of calls stays light.
// Clicking a model call shows what the model was sent and answered (as `clew call`);
// clicking a tool call its arguments and result.
import { api, fill, fmt, h, showError } from "./dom.js";

const ROW = 26; // px per run row
const SPARE = 8; // rows drawn above and below the view

function ms(v) {
  if (v == null) return "…";
  return v < 10000 ? `${v.toFixed(v < 10 ? 1 : 0)} ms` : `${(v / 1000).toFixed(1)} s`;
}

export class Waterfall {
  constructor(root, base, block) {
    this.base = base;
    this.block = block; // renders one content block (the node view's)
    this.doc = null;
    this.line = h("p", { class: "muted", id: "wf-line" });
    this.inner = h("div", { class: "wf-inner" });
    this.box = h("div", { class: "wf", id: "waterfall", onscroll: () => this.schedule() }, this.inner);
    this.detail = h("div", { class: "wf-detail", id: "call" }, h("p", { class: "muted" }, "click a model or tool call to see it"));
    root.append(this.line, this.box, this.detail);
  }

  load(doc) {
    this.doc = doc;
    const total = Math.max(doc.duration_ms || 0, 0.001);
    this.total = total;
    this.line.textContent = `${fmt(doc.runs.length)} runs · ${fmt(doc.calls)} model calls · ${ms(doc.duration_ms)} from the first event to the last`;
    this.inner.style.height = `${doc.runs.length * ROW}px`;
    this.drawn = null;
    this.draw();
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.draw();
    });
  }

  draw() {
    if (!this.doc) return;
    const rows = this.doc.runs;
    const first = Math.max(0, Math.floor(this.box.scrollTop / ROW) - SPARE);
    const last = Math.min(rows.length, Math.ceil((this.box.scrollTop + (this.box.clientHeight || 400)) / ROW) + SPARE);
    const key = `${first}:${last}`;
    if (this.drawn === key) return;
    this.drawn = key;
    const out = [];
    for (let i = first; i < last; i++) out.push(this.row(rows[i], i));
    fill(this.inner, ...out);
  }

  pct(v) {
    return `${(100 * v) / this.total}%`;
  }

  row(r, i) {
    const end = r.end_ms == null ? this.doc.duration_ms : r.end_ms;
    const track = h(
      "div",
      { class: "wf-track" },
      h("div", { class: `wf-span st-${r.status || "running"}`, style: { left: this.pct(r.start_ms), width: this.pct(end - r.start_ms) } }),
      ...r.bars.map((b) => this.bar(b)),
    );
    return h(
      "div",
      { class: "wf-row", dataset: { run: r.run }, style: { top: `${i * ROW}px` } },
      h("div", { class: "wf-label", title: `${r.run} ${r.phase}` }, h("span", { class: "sid" }, r.run), ` ${r.roles.join(", ") || r.phase || ""}`),
      track,
    );
  }

  bar(b) {
    const open = b.end_ms == null;
    const end = open ? this.doc.duration_ms : b.end_ms;
    const took = end - b.start_ms;
    const title = `${b.label} · ${ms(open ? null : took)}${b.detail ? ` · ${b.detail}` : ""}`;
    return h("div", {
      class: `wf-bar k-${b.kind}${b.error ? " err" : ""}${open ? " open" : ""}`,
      title,
      dataset: { kind: b.kind, ms: String(took), call: b.call ?? "", id: b.id ?? "" },
      style: { left: this.pct(b.start_ms), width: this.pct(took) },
      onclick: () => this.show(b, took),
    });
  }

  async show(b, took) {
    if (b.kind === "tool") {
      fill(
        this.detail,
        h("h3", {}, `tool call ${b.label}`),
        h("p", { class: "muted" }, `${b.id} · ${ms(b.end_ms == null ? null : took)} · ${b.detail || "running"}`),
        h("h4", {}, "arguments"),
        h("pre", { class: "tool-args" }, JSON.stringify(b.arguments, null, 2)),
        h("h4", {}, "result"),
        h("pre", { class: "tool-result" }, b.result ?? "(no result yet)"),
      );
      return;
    }
    if (b.call == null || b.call === "") {
      fill(this.detail, h("h3", {}, b.label), h("p", { class: "muted" }, `${ms(b.end_ms == null ? null : took)}${b.detail ? ` · ${b.detail}` : ""}`));
      return;
    }
    let c;
    try {
      c = await api(`${this.base}/call`, { n: b.call });
    } catch (e) {
      showError(this.detail, e);
      return;
    }
    this.render(c);
  }

  render(c) {
    const req = c.request;
    const lastUser = [...req.messages].reverse().find((m) => m.role === "user");
    const msg = (m, i, mark = "") =>
      h("div", { class: `msg role-${m.role}` }, h("p", { class: "who" }, `${mark}[${i}] ${m.role}`), ...m.content.map((b) => this.block(b, { artifacts: [] })));
    const diff = c.diff;
    fill(
      this.detail,
      h("h3", {}, `call ${c.index} · ${c.agent} [${c.role}] · ${c.model}`),
      h(
        "p",
        { class: "muted", id: "call-stats" },
        `${fmt(c.input_tokens)}→${fmt(c.output_tokens)} tokens · ${ms(c.latency_ms)} · ${c.stop_reason}${c.served ? " · served from the recording" : ""} · request ${c.hash_matches ? "rebuilt exactly" : "NOT exact"} (${c.recorded_as})`,
      ),
      h("h4", {}, "last user message"),
      h("div", { class: "last-user" }, lastUser ? lastUser.content.map((b) => this.block(b, { artifacts: [] })) : h("p", { class: "muted" }, "none")),
      h("details", {}, h("summary", {}, `system prompt (${fmt(req.system.length)} characters)`), h("pre", { class: "system" }, req.system || "(none)")),
      h("details", {}, h("summary", {}, `tools (${req.tools.length}): ${req.tools.map((t) => t.name).join(", ") || "none"}`), h("pre", {}, JSON.stringify(req.tools, null, 2))),
      h("details", { class: "messages" }, h("summary", {}, `messages (${req.messages.length})`), ...req.messages.map((m, i) => msg(m, i + 1))),
      diff
        ? h(
            "details",
            { class: "call-diff", open: true },
            h("summary", {}, `since call ${diff.previous}: ${diff.added.length} added, ${diff.dropped} dropped${diff.system_changed ? ", system prompt changed" : ""}`),
            ...diff.added.map((m, i) => msg(m, diff.kept + i + 1, "+ ")),
            diff.system_changed ? h("pre", { class: "diff" }, diff.system_diff.map((l) => h("span", { class: l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : "ctx" }, `${l}\n`))) : null,
          )
        : h("p", { class: "muted" }, "the agent's first call"),
      h("h4", {}, "response"),
      c.error
        ? h("p", { class: "error" }, `${c.error.error_type}: ${c.error.message}`)
        : c.response
          ? h("div", { class: "response" }, c.response.content.map((b) => this.block(b, { artifacts: [] })))
          : h("p", { class: "muted" }, "no answer recorded"),
    );
  }
}
