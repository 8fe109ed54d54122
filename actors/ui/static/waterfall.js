// The waterfall: one row per run on a shared time axis, a bar per model call, tool call,
// approval wait, park, compaction and cancellation (widths are recorded durations).
// Only the rows in view are in the page, so a session of thousands of calls stays light.
// A time axis above the rows has labelled ticks (ms, s or min, as the span needs).
// Clicking a model call shows what the model was sent and answered (as `clew call`);
// clicking a tool call its arguments and result. A live session's update fetches only
// what came after the last event drawn (`?after=`) and adds it (extend).
import { api, fill, fmt, h, showError } from "./dom.js";

const ROW = 26; // px per run row
const AXIS = 22; // px of the time axis above the rows
const SPARE = 8; // rows drawn above and below the view
const TICKS = 8; // at most this many intervals on the axis

function ms(v) {
  if (v == null) return "…";
  return v < 10000 ? `${v.toFixed(v < 10 ? 1 : 0)} ms` : `${(v / 1000).toFixed(1)} s`;
}

// The tick step for a span of `total` ms: 1, 2 or 5 × a power of ten below a minute,
// then whole minutes and hours.
function tickStep(total) {
  const want = total / TICKS;
  if (want <= 30000) {
    const p = 10 ** Math.floor(Math.log10(Math.max(want, 1e-3)));
    return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= want);
  }
  const steps = [60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3, 7200e3, 21600e3, 43200e3, 86400e3];
  return steps.find((s) => s >= want) || Math.ceil(want / 86400e3) * 86400e3;
}

// A tick's label in the unit the span needs: "250 ms" below a second, "1.5 s", "2 min",
// "1 h 30 min" (as many decimals as the step has).
export function tickLabel(v, step, total) {
  const places = (x) => Math.max(0, -Math.floor(Math.log10(x) + 1e-9));
  if (v === 0) return "0";
  if (total < 1000) return `${fmt(Number(v.toFixed(places(step))))} ms`;
  if (step < 60e3) return `${(v / 1000).toFixed(places(step / 1000))} s`;
  const m = Math.round(v / 60e3);
  return m < 60 ? `${m} min` : `${Math.floor(m / 60)} h${m % 60 ? ` ${m % 60} min` : ""}`;
}

export function ticks(total) {
  if (!(total > 0)) return [[0, "0"]];
  const step = tickStep(total);
  const out = [];
  for (let i = 0; i * step <= total * (1 + 1e-9); i++) out.push(i * step);
  return out.map((v) => [v, tickLabel(v, step, total)]);
}

export class Waterfall {
  constructor(root, base, block) {
    this.base = base;
    this.block = block; // renders one content block (the node view's)
    this.doc = null;
    this.line = h("p", { class: "muted", id: "wf-line" });
    this.axis = h("div", { class: "wf-ticks" });
    this.inner = h("div", { class: "wf-inner" });
    const axis = h("div", { class: "wf-axis", id: "wf-axis" }, h("div", { class: "wf-label" }), this.axis);
    this.box = h("div", { class: "wf", id: "waterfall", onscroll: () => this.schedule() }, axis, this.inner);
    this.detail = h("div", { class: "wf-detail", id: "call" }, h("p", { class: "muted" }, "click a model or tool call to see it"));
    root.append(this.line, this.box, this.detail);
  }

  load(doc) {
    this.doc = doc;
    this.byRun = new Map(doc.runs.map((r) => [r.run, r]));
    this.open = new Map(); // the open bars by key: a later update may end them
    for (const r of doc.runs) this.keep(r.bars);
    this.redraw();
  }

  keep(bars) {
    for (const b of bars) if (b.key) this.open.set(b.key, b);
  }

  // Add what came after the last event drawn (`/waterfall?after=`): new rows, new bars of
  // known rows, the end of bars that were open.
  extend(d) {
    const doc = this.doc;
    for (const r of d.runs) {
      const known = this.byRun.get(r.run);
      if (!known) {
        doc.runs.push(r);
        this.byRun.set(r.run, r);
      } else {
        known.bars.push(...r.bars);
        for (const role of r.roles) if (!known.roles.includes(role)) known.roles.push(role);
        if (r.phase) known.phase = r.phase;
        if (r.end_ms != null) {
          [known.end_ms, known.status] = [r.end_ms, r.status];
          d.ends.push({ key: `${r.run}|cancel`, end_ms: r.end_ms }); // a cancellation ends with its run
        }
      }
      this.keep(r.bars);
    }
    for (const e of d.ends) {
      const b = this.open.get(e.key);
      if (!b) continue;
      Object.assign(b, e);
      delete b.key;
      this.open.delete(e.key);
    }
    doc.runs.sort((a, b) => a.start_ms - b.start_ms);
    if (d.duration_ms != null) doc.duration_ms = Math.max(doc.duration_ms || 0, d.duration_ms);
    doc.started_at = doc.started_at || d.started_at;
    [doc.calls, doc.last_seq] = [d.calls, d.last_seq];
    this.redraw();
  }

  redraw() {
    const doc = this.doc;
    this.total = Math.max(doc.duration_ms || 0, 0.001);
    this.line.textContent = `${fmt(doc.runs.length)} runs · ${fmt(doc.calls)} model calls · ${ms(doc.duration_ms)} from the first event to the last`;
    this.inner.style.height = `${doc.runs.length * ROW}px`;
    this.marks = ticks(doc.duration_ms || 0);
    fill(
      this.axis,
      ...this.marks.map(([v, label], i) =>
        h("span", { class: `wf-tick${i === 0 ? " first" : ""}`, dataset: { ms: String(v) }, style: { left: this.pct(v) } }, label),
      ),
    );
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
    const top = Math.max(0, this.box.scrollTop - AXIS);
    const first = Math.max(0, Math.floor(top / ROW) - SPARE);
    const last = Math.min(rows.length, Math.ceil((top + (this.box.clientHeight || 400)) / ROW) + SPARE);
    const key = `${first}:${last}`;
    if (this.drawn === key) return;
    this.drawn = key;
    const grid = h("div", { class: "wf-grid" }, ...this.marks.map(([v]) => h("span", { style: { left: this.pct(v) } })));
    const out = [grid];
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
