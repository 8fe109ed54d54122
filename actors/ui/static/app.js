// The inspector's router and its sessions list. Routes live in the hash:
// #/ (sessions, and the home's re-drives), #/s/<session id> (one session) and
// #/r/<re-drive id> (one re-drive).
import { ago, api, badge, clear, fill, debounce, fmt, h, showError } from "./dom.js";
import { RedrivePage, redrivesSection } from "./redrives.js";
import { SessionPage } from "./session.js";

const app = document.getElementById("app");
const conn = document.getElementById("conn");
let current = null;

function setLive(on) {
  conn.textContent = on ? "● live" : "○ offline";
  conn.className = on ? "conn on" : "conn";
}

class SessionsPage {
  constructor(root) {
    this.root = root;
    this.query = new URLSearchParams(location.hash.split("?")[1] || "").get("q") || "";
    this.search = h("input", {
      type: "search",
      id: "search",
      placeholder: "search by id prefix or title",
      value: this.query,
      oninput: debounce(() => this.load(), 200),
    });
    this.body = h("tbody");
    this.count = h("span", { class: "muted" });
    this.redrives = h("div", { id: "redrives-panel" });
    fill(root, 
      h("div", { class: "bar" }, h("h1", {}, "Sessions"), this.search, this.count),
      h(
        "table",
        { class: "sessions", id: "sessions" },
        h(
          "thead",
          {},
          h("tr", {}, ["session", "status", "title", "runs", "tokens", "events", "last activity"].map((t) => h("th", {}, t))),
        ),
        this.body,
      ),
      this.redrives,
    );
    this.load();
    redrivesSection(this.redrives);
    this.stream = new EventSource("/api/stream");
    this.stream.addEventListener("sessions", () => this.load());  // the first page again
    this.stream.onopen = () => setLive(true);
    this.stream.onerror = () => setLive(false);
  }

  async load(after) {
    let doc;
    try {
      const query = { q: this.search.value.trim() };
      if (after) query.after = after;
      doc = await api("/api/sessions", query);
    } catch (e) {
      showError(this.body, e);
      return;
    }
    // A page at a time (keyset, `next`): the list costs its page, not the home's size.
    const more = this.body.querySelector("tr.more");
    if (more) more.remove();
    const rows = doc.sessions.map((s) =>
      h(
        "tr",
        { dataset: { sid: s.session_id } },
        h("td", {}, h("a", { href: `#/s/${s.session_id}`, class: "sid" }, s.session_id)),
        h("td", {}, badge(s.status)),
        h("td", { class: "title" }, s.title || "—"),
        h("td", { class: "num" }, fmt(s.runs)),
        h("td", { class: "num" }, fmt(s.tokens)),
        h("td", { class: "num" }, fmt(s.events)),
        h("td", { title: s.updated_at }, ago(s.updated_at)),
      ),
    );
    if (after) this.body.append(...rows);
    else fill(this.body, ...rows);
    if (!after && !rows.length && !doc.next) this.body.append(h("tr", {}, h("td", { colspan: 7, class: "muted" }, "no session matches")));
    if (doc.next) {
      const link = h("a", { href: "#" }, "more…");
      link.addEventListener("click", (e) => {
        e.preventDefault();
        this.load(doc.next);
      });
      this.body.append(h("tr", { class: "more" }, h("td", { colspan: 7 }, link)));
    }
    const shown = this.body.querySelectorAll("tr[data-sid]").length;
    this.count.textContent = `${shown}${doc.next ? "+" : ""} session${shown === 1 ? "" : "s"}`;
  }

  close() {
    this.stream.close();
  }
}

function route() {
  if (current) current.close();
  const hash = location.hash.replace(/^#/, "");
  const m = hash.match(/^\/s\/([A-Za-z0-9_]+)/);
  const r = hash.match(/^\/r\/([A-Za-z0-9_]+)/);
  current = m ? new SessionPage(app, m[1], setLive) : r ? new RedrivePage(app, r[1]) : new SessionsPage(app);
}

window.addEventListener("hashchange", route);
route();
