// Hand-written SVG: the task DAG as a layered graph, token usage as stacked bars.
import { fmt, h, s } from "./dom.js";

const BOX_W = 190;
const BOX_H = 46;
const GAP_X = 60;
const GAP_Y = 18;

/** Lay tasks out in layers: a task sits one layer right of its deepest dependency. */
function layers(tasks) {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const level = new Map();
  const depth = (id, seen = new Set()) => {
    if (level.has(id)) return level.get(id);
    if (seen.has(id)) return 0; // a cycle cannot be stored; guard anyway
    seen.add(id);
    const t = byId.get(id);
    const deps = t ? t.deps.filter((d) => byId.has(d)) : [];
    const l = deps.length ? 1 + Math.max(...deps.map((d) => depth(d, seen))) : 0;
    level.set(id, l);
    return l;
  };
  tasks.forEach((t) => depth(t.id));
  const cols = [];
  for (const t of tasks) {
    const l = level.get(t.id);
    (cols[l] ||= []).push(t);
  }
  return cols;
}

/** The task DAG of one Task WAL as an SVG graph (statuses as colours and words). */
export function dagSvg(tasks) {
  const cols = layers(tasks);
  const pos = new Map();
  cols.forEach((col, x) =>
    col.forEach((t, y) => pos.set(t.id, { x: 10 + x * (BOX_W + GAP_X), y: 10 + y * (BOX_H + GAP_Y) })),
  );
  const width = 20 + cols.length * (BOX_W + GAP_X) - GAP_X;
  const height = 20 + Math.max(1, ...cols.map((c) => c.length)) * (BOX_H + GAP_Y) - GAP_Y;
  const svg = s("svg", { class: "dag", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  svg.append(
    s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }))),
  );
  for (const t of tasks) {
    for (const d of t.deps) {
      const a = pos.get(d);
      const b = pos.get(t.id);
      if (!a || !b) continue;
      const x1 = a.x + BOX_W;
      const y1 = a.y + BOX_H / 2;
      const x2 = b.x;
      const y2 = b.y + BOX_H / 2;
      const mx = (x1 + x2) / 2;
      svg.append(s("path", { class: "edge", d: `M ${x1} ${y1} C ${mx} ${y1}, ${mx} ${y2}, ${x2} ${y2}`, "marker-end": "url(#arrow)" }));
    }
  }
  for (const t of tasks) {
    const p = pos.get(t.id);
    const title = t.title.length > 26 ? `${t.title.slice(0, 25)}…` : t.title;
    const g = s(
      "g",
      { class: `task st-${t.status}`, "data-task": t.id, "data-status": t.status, transform: `translate(${p.x},${p.y})` },
      s("title", {}, `${t.id}: ${t.title} — ${t.status}${t.result_summary ? `\n${t.result_summary}` : ""}`),
      s("rect", { width: BOX_W, height: BOX_H, rx: 6 }),
      s("text", { x: 8, y: 18, class: "task-title" }, title || t.id),
      s("text", { x: 8, y: 36, class: "task-status" }, `${t.status} · ${t.id.split("/").pop()}`),
    );
    svg.append(g);
  }
  return svg;
}

/** Horizontal stacked bars (input, output tokens) of one breakdown. */
export function usageChart(title, groups) {
  const rowH = 22;
  const labelW = 170;
  const barW = 320;
  const max = Math.max(1, ...groups.map((g) => g.total_tokens));
  const height = 24 + groups.length * rowH;
  const svg = s("svg", { class: "chart", width: labelW + barW + 110, height, role: "img", "data-chart": title });
  svg.append(s("text", { x: 0, y: 14, class: "chart-title" }, `tokens by ${title}`));
  groups.forEach((g, i) => {
    const y = 22 + i * rowH;
    const wi = (g.input_tokens / max) * barW;
    const wo = (g.output_tokens / max) * barW;
    svg.append(
      s(
        "g",
        { class: "bar-row" },
        s("title", {}, `${g.name}: ${fmt(g.input_tokens)} in, ${fmt(g.output_tokens)} out, ${fmt(g.calls)} calls`),
        s("text", { x: labelW - 6, y: y + 14, class: "bar-label", "text-anchor": "end" }, g.name.length > 24 ? `${g.name.slice(0, 23)}…` : g.name),
        s("rect", { x: labelW, y: y + 3, width: Math.max(wi, 0.5), height: rowH - 8, class: "bar-in" }),
        s("rect", { x: labelW + wi, y: y + 3, width: Math.max(wo, 0.5), height: rowH - 8, class: "bar-out" }),
        s("text", { x: labelW + wi + wo + 6, y: y + 14, class: "bar-value" }, fmt(g.total_tokens)),
      ),
    );
  });
  return h("figure", { class: "chart-box" }, svg);
}

export function legend() {
  return h(
    "p",
    { class: "legend" },
    h("span", { class: "swatch in" }),
    "input ",
    h("span", { class: "swatch out" }),
    "output tokens",
  );
}
