// One session: header and actions, what it waits for, the node tree and a node's blocks,
// the timeline, the task DAG, token usage, replay. Live over SSE.
import { dagSvg, legend, usageChart } from "./charts.js";
import { ago, api, badge, clear, fill, debounce, fmt, h, post, showError } from "./dom.js";
import { redrivenLine } from "./redrives.js";
import { Timeline } from "./timeline.js";
import { TreeView } from "./tree.js";
import { Waterfall } from "./waterfall.js";

function section(id, title, ...children) {
  return h("section", { id, class: "panel" }, h("h2", {}, title), ...children);
}

export class SessionPage {
  constructor(root, sid, setLive) {
    this.sid = sid;
    this.base = `/api/sessions/${sid}`;
    this.head = h("div", { class: "session-head", id: "head" });
    this.redriven = h("p", { class: "muted", id: "redriven" });
    this.waits = h("div", { id: "waits" });
    this.note = h("p", { id: "note", class: "note", role: "status" });
    this.nodeBox = h("div", { class: "node-detail", id: "node" }, h("p", { class: "muted" }, "click a node to see its content"));
    const treeBox = h("div", { class: "tree-box" });
    this.dagBox = h("div", { id: "dag" });
    this.usageBox = h("div", { id: "usage" });
    this.replayBox = h("div", { id: "replay" });
    const tl = h("div");
    const wf = h("div");
    fill(root, 
      h("p", {}, h("a", { href: "#/" }, "◂ sessions")),
      this.head,
      this.redriven,
      this.note,
      this.waits,
      section("tree-panel", "Node tree", h("div", { class: "split" }, treeBox, this.nodeBox)),
      section("waterfall-panel", "Waterfall", wf),
      section("timeline-panel", "Timeline", tl),
      section("dag-panel", "Task DAG", this.dagBox),
      section("usage-panel", "Token usage", this.usageBox),
      section("replay-panel", "Replay", this.replayBox),
    );
    this.tree = new TreeView(
      treeBox,
      (id) => this.showNode(id),
      async (ids) => (await api(`${this.base}/excerpts`, { ids: ids.join(",") })).excerpts,
    );
    this.timeline = new Timeline(tl, sid);
    this.waterfall = new Waterfall(wf, this.base, (b, n) => this.block(b, n));
    this.refresh = debounce(() => this.reload(), 300);
    this.start(setLive);
  }

  async start(setLive) {
    // What a first look needs, all at once; then the timeline's filters, the DAG and the
    // usage (a fold over every event the first time), so they never hold the first back.
    const first = Promise.all([this.loadTree(), this.timeline.load()]);
    const head = this.loadHead();
    let doc;
    try {
      doc = await head;
      await first;
    } catch (e) {
      showError(this.head, e);
      return;
    }
    this.timeline.facets(doc);
    await Promise.all([this.loadDag(), this.loadUsage(), this.loadWaterfall(), redrivenLine(this.redriven, this.sid)]);
    this.stream = new EventSource(`${this.base}/stream?after=${doc.last_seq}`);
    this.stream.addEventListener("events", () => {
      this.refresh();
      if (this.timeline.atEnd()) this.timeline.load();
    });
    this.stream.onopen = () => setLive(true);
    this.stream.onerror = () => setLive(false);
  }

  close() {
    if (this.stream) this.stream.close();
  }

  async reload() {
    if (this.reloading) {
      this.again = true; // one more once this one is done
      return;
    }
    this.reloading = true;
    try {
      const doc = await this.loadHead();
      this.timeline.facets(doc);
      await Promise.all([this.loadTree(), this.loadDag(), this.loadUsage(), this.loadWaterfall()]);
    } catch (e) {
      this.say(e.message);
    } finally {
      this.reloading = false;
    }
    if (this.again) {
      this.again = false;
      this.refresh();
    }
  }

  say(text, error = true) {
    this.note.textContent = text;
    this.note.className = error ? "note error" : "note";
  }

  async act(path, body, done) {
    try {
      const out = await post(`${this.base}/${path}`, body);
      if (done) done(out);
      this.refresh();
      return out;
    } catch (e) {
      this.say(e.message);
      return null;
    }
  }

  async loadHead() {
    const d = await api(this.base);
    this.doc = d;
    const buttons = [h("button", { id: "replay-btn", onclick: () => this.replay() }, "Replay")];
    if (d.status === "running" || d.status === "interrupted") {
      buttons.push(h("button", { id: "cancel-btn", class: "danger", onclick: () => this.cancel() }, "Cancel run"));
    }
    const ready = d.waiting.length && d.waiting.every((w) => !w.pending.length && (!w.question || w.answered));
    if (d.status === "interrupted" || ready) {
      buttons.push(h("button", { id: "resume-btn", onclick: () => this.act("resume", {}, () => this.say("resuming…", false)) }, "Resume"));
    }
    fill(this.head, 
      h("h1", {}, h("span", { class: "sid" }, d.session_id), " ", badge(d.status)),
      h("p", { class: "title" }, d.title || "—"),
      h(
        "p",
        { class: "stats" },
        `${fmt(d.runs)} run${d.runs === 1 ? "" : "s"} (${fmt(d.all_runs)} with workers) · ${fmt(d.tokens)} tokens · ${fmt(d.events)} events · last activity ${ago(d.updated_at)} · ${d.cwd}`,
      ),
      h("div", { class: "actions" }, buttons),
    );
    this.renderWaits(d.waiting);
    return d;
  }

  renderWaits(waits) {
    clear(this.waits);
    for (const w of waits) {
      const box = section("wait", "Waiting for a person");
      box.classList.add("wait");
      for (const p of w.pending) box.append(this.pendingRow(p));
      if (w.question && !w.answered) {
        const input = h("input", { id: "answer-text", type: "text", placeholder: "your answer" });
        box.append(
          h("p", { class: "question" }, "Question: ", h("q", {}, w.question)),
          h("div", { class: "bar" }, input, h("button", { id: "answer-btn", onclick: () => this.act("answer", { text: input.value }) }, "Answer")),
        );
      }
      if (!w.pending.length && (!w.question || w.answered)) box.append(h("p", { class: "muted" }, "everything is decided: resume the run"));
      this.waits.append(box);
    }
  }

  pendingRow(p) {
    const args = JSON.stringify(p.arguments, null, 2);
    const editor = h("textarea", { class: "args-edit", rows: 4, hidden: true }, args);
    const reason = h("input", { type: "text", class: "reason", placeholder: "reason (told to the model)", hidden: true });
    const id = p.tool_call_id;
    const decide = (body) => this.act("decide", { call_id: id, ...body }, (out) =>
      this.say(out.resumed ? `${id}: decided; the run continues` : out.resume_error ? `${id}: decided; the resume failed: ${out.resume_error}` : `${id}: decided${out.still_pending.length ? `; ${out.still_pending.length} still pending` : "; resume the run to go on"}`, Boolean(out.resume_error)));
    return h(
      "div",
      { class: "pending", dataset: { call: id } },
      h("p", {}, h("b", {}, p.tool_name), ` [${p.role}] `, h("span", { class: "muted" }, p.reason)),
      h("pre", { class: "args" }, args),
      editor,
      reason,
      h(
        "div",
        { class: "bar" },
        h("button", { class: "approve", onclick: () => decide({ decision: "approve" }) }, "Approve"),
        h("button", {
          class: "edit",
          onclick: () => {
            if (editor.hidden) { editor.hidden = false; return; }
            let parsed;
            try { parsed = JSON.parse(editor.value); } catch (e) { this.say(`the arguments are not JSON: ${e.message}`); return; }
            decide({ decision: "edit", arguments: parsed });
          },
        }, "Edit & approve"),
        h("button", {
          class: "deny danger",
          onclick: () => {
            if (reason.hidden) { reason.hidden = false; reason.focus(); return; }
            decide({ decision: "deny", reason: reason.value });
          },
        }, "Deny"),
      ),
    );
  }

  async loadTree() {
    const doc = await api(`${this.base}/tree`);
    this.tree.load(doc);
  }

  async showNode(id) {
    let n;
    try {
      n = await api(`${this.base}/node`, { id });
    } catch (e) {
      showError(this.nodeBox, e);
      return;
    }
    const isActive = this.tree.doc && this.tree.doc.active_node_id === n.short;
    fill(this.nodeBox, 
      h("h3", {}, n.short),
      h("p", { class: "muted" }, `${n.role} · ${n.node_type} · ${n.created_at}${n.token_count ? ` · ${n.token_count} tokens` : ""}`),
      isActive
        ? h("p", { class: "muted" }, "the active node")
        : h("button", { id: "switch-btn", onclick: () => this.act("switch", { node_id: n.short }, () => this.say(`the active node is now ${n.short}`, false)) }, "Make this the active node"),
      ...n.content.map((b) => this.block(b, n)),
      Object.keys(n.metadata).length ? h("details", {}, h("summary", {}, "metadata"), h("pre", {}, JSON.stringify(n.metadata, null, 2))) : null,
    );
  }

  block(b, node) {
    const wrap = (kind, ...children) => h("div", { class: `block block-${kind}` }, h("span", { class: "kind" }, kind), ...children);
    switch (b.type) {
      case "text":
        return wrap("text", h("pre", { class: "text" }, b.text));
      case "json":
        return wrap("json", b.summary ? h("p", {}, b.summary) : null, h("pre", {}, JSON.stringify(b.data, null, 2)));
      case "tool_call":
        return wrap("tool call", h("p", {}, h("b", {}, b.name), ` ${b.id}`), h("pre", {}, JSON.stringify(b.arguments, null, 2)));
      case "tool_result":
        return wrap(b.is_error ? "tool error" : "tool result", h("p", {}, h("b", {}, b.name), ` ${b.tool_call_id}`), ...b.content.map((c) => this.block(c, node)));
      case "artifact_ref":
        return this.artifact(b, node, wrap);
      default:
        return wrap(b.type || "block", h("pre", {}, JSON.stringify(b, null, 2)));
    }
  }

  artifact(b, node, wrap) {
    const row = node.artifacts.find((a) => a.artifact_id === b.artifact_id);
    const out = h("pre", { class: "preview", hidden: true });
    return wrap(
      "artifact",
      h("p", {}, `${b.artifact_id} · ${b.mime_type}${row && row.size_bytes != null ? ` · ${fmt(row.size_bytes)} bytes` : ""}`),
      b.summary ? h("p", {}, b.summary) : null,
      h("button", {
        class: "preview-btn",
        onclick: async () => {
          try {
            const a = await api(`${this.base}/artifact`, { id: b.artifact_id });
            out.textContent = a.text + (a.size > a.text.length ? "\n…" : "");
          } catch (e) {
            out.textContent = e.message;
          }
          out.hidden = false;
        },
      }, "Preview"),
      out,
    );
  }

  async loadDag() {
    const d = await api(`${this.base}/dag`);
    clear(this.dagBox);
    if (d.error) this.dagBox.append(h("p", { class: "muted" }, d.error));
    const shown = d.dags.filter((g) => g.tasks.length || !g.available);
    if (!shown.length) this.dagBox.append(h("p", { class: "muted" }, "no task DAG"));
    for (const g of shown) {
      this.dagBox.append(h("h3", {}, `Task WAL ${g.wal}`));
      if (!g.available) this.dagBox.append(h("p", { class: "error" }, `unavailable: ${g.error}`));
      else this.dagBox.append(h("div", { class: "scroll-x" }, dagSvg(g.tasks)));
    }
  }

  async loadWaterfall() {
    // Live: only what came after the last event drawn, added to what is drawn.
    const w = this.waterfall;
    if (w.doc) w.extend(await api(`${this.base}/waterfall`, { after: w.doc.last_seq, calls: w.doc.calls }));
    else w.load(await api(`${this.base}/waterfall`));
  }

  async loadUsage() {
    const u = await api(`${this.base}/usage`);
    fill(this.usageBox, 
      legend(),
      h("div", { class: "charts" }, usageChart("model", u.by_model), usageChart("role", u.by_role), usageChart("phase", u.by_phase)),
    );
  }

  async cancel() {
    await this.act("cancel", { reason: "cancelled from the web inspector" }, (out) => this.say(`cancel ${out.status}`, false));
  }

  async replay() {
    fill(this.replayBox, h("p", { class: "muted" }, "replaying…"));
    const r = await this.act("replay", {});
    if (!r) {
      clear(this.replayBox);
      return;
    }
    fill(this.replayBox, 
      h("p", { class: r.identical ? "ok" : "error", id: "replay-summary" }, r.summary),
      ...r.divergences.map((d) =>
        h(
          "div",
          { class: "divergence" },
          h("p", {}, `${d.run_id} at run_seq ${d.run_seq}: expected ${d.expected_type}, got ${d.actual_type}`),
          d.message ? h("p", {}, d.message) : null,
          ...(d.diff || []).map((f) =>
            h(
              "div",
              { class: "field-diff" },
              h("p", {}, h("b", {}, f.path)),
              f.lines && f.lines.length
                ? h("pre", { class: "diff" }, f.lines.map((l) => h("span", { class: l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : "ctx" }, `${l}\n`)))
                : h("pre", { class: "diff" }, h("span", { class: "del" }, `- ${JSON.stringify(f.expected)}\n`), h("span", { class: "add" }, `+ ${JSON.stringify(f.actual)}\n`)),
            ),
          ),
        ),
      ),
    );
  }
}
