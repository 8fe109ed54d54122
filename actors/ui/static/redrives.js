// Re-drives (`clew redrive`): the home's list under the sessions list, one re-drive's
// page (#/r/<id>: each session's outcome, the calls served and asked live, its status
// now), and the line of a session's page naming the re-drives of it.
import { ago, api, badge, fill, fmt, h, showError } from "./dom.js";

const OUTCOMES = ["completed", "failed again", "needs a person", "skipped"];
const counts = (c) => OUTCOMES.map((o) => `${fmt(c[o] || 0)} ${o}`).join(", ");

// The home's re-drives, newest first; nothing at all when there is none.
export async function redrivesSection(root) {
  let doc;
  try {
    doc = await api("/api/redrives");
  } catch (e) {
    showError(root, e);
    return;
  }
  if (!doc.redrives.length) return fill(root);
  fill(
    root,
    h("h2", {}, "Re-drives"),
    h(
      "table",
      { class: "sessions", id: "redrives" },
      h("thead", {}, h("tr", {}, ["re-drive", "started", "sessions", "outcomes"].map((t) => h("th", {}, t)))),
      h(
        "tbody",
        {},
        doc.redrives.map((r) =>
          h(
            "tr",
            { dataset: { redrive: r.redrive_id } },
            h("td", {}, h("a", { href: `#/r/${r.redrive_id}`, class: "sid" }, r.redrive_id)),
            h("td", { title: r.started_at }, ago(r.started_at)),
            h("td", { class: "num" }, fmt(r.sessions)),
            h("td", {}, counts(r.counts)),
          ),
        ),
      ),
    ),
  );
}

// The line of a session's page: "re-driven by <id> (retry: completed, run brain:r2)".
export async function redrivenLine(root, sid) {
  const doc = await api("/api/redrives", { session: sid });
  if (!doc.redrives.length) return fill(root);
  const parts = [];
  for (const r of doc.redrives) {
    const x = r.result;
    if (parts.length) parts.push("; ");
    parts.push(h("a", { href: `#/r/${r.redrive_id}`, class: "sid" }, r.redrive_id), ` (${x.action}: ${x.outcome}${x.run ? `, run ${x.run}` : ""})`);
  }
  fill(root, "re-driven by ", ...parts);
}

export class RedrivePage {
  constructor(root, rid) {
    this.root = root;
    this.load(rid);
  }

  async load(rid) {
    let d;
    try {
      d = await api(`/api/redrives/${encodeURIComponent(rid)}`);
    } catch (e) {
      fill(this.root, h("p", {}, h("a", { href: "#/" }, "◂ sessions")));
      showError(this.root, e);
      return;
    }
    fill(
      this.root,
      h("p", {}, h("a", { href: "#/" }, "◂ sessions")),
      h("h1", {}, h("span", { class: "sid" }, d.redrive_id)),
      h("p", { class: "stats", id: "redrive-summary" }, `${fmt(d.sessions)} sessions: ${counts(d.counts)} · started ${ago(d.started_at)} · ended ${d.ended_at}`),
      h(
        "table",
        { class: "sessions", id: "redrive-sessions" },
        h("thead", {}, h("tr", {}, ["session", "action", "outcome", "detail", "calls served", "asked live", "run", "status now"].map((t) => h("th", {}, t)))),
        h(
          "tbody",
          {},
          d.results.map((r) =>
            h(
              "tr",
              { dataset: { sid: r.session_id } },
              h("td", {}, h("a", { href: `#/s/${r.session_id}`, class: "sid" }, r.session_id)),
              h("td", {}, r.action),
              h("td", { class: "outcome" }, r.outcome),
              h("td", { class: "detail" }, r.detail || "—"),
              h("td", { class: "num" }, fmt(r.served_calls)),
              h("td", { class: "num" }, fmt(r.live_calls)),
              h("td", { class: "sid" }, r.run || "—"),
              h("td", {}, badge(r.status)),
            ),
          ),
        ),
      ),
    );
  }

  close() {}
}
