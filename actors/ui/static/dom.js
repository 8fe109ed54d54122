// Building the page without markup: every piece of data goes in as text (textContent),
// never as HTML, so a model reply holding "<script>" is shown, not run.

/** Create an element: h("td", {class: "x", onclick: f}, "text", child, …). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "style") Object.assign(el.style, v); // CSSOM: allowed by the CSP
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

/** Append children: strings become text nodes; arrays are flattened; null is skipped. */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

/** Create an SVG element (attributes set as given; text children as text nodes). */
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  }
  return append(el, children);
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/** Replace the children of `el` (null and false are skipped, strings become text). */
export function fill(el, ...children) {
  return append(clear(el), children);
}

const csrf = document.querySelector('meta[name="clew-csrf"]').content;

export class ApiError extends Error {}

async function answer(res) {
  const type = res.headers.get("content-type") || "";
  const body = type.includes("json") ? await res.json() : { error: (await res.text()).trim() };
  if (!res.ok) throw new ApiError(body.error || `HTTP ${res.status}`);
  return body;
}

/** GET a JSON document of the server. */
export async function api(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== "" && v != null) q.set(k, v);
  const qs = q.toString();
  return answer(await fetch(qs ? `${path}?${qs}` : path, { credentials: "same-origin" }));
}

/** POST an action (JSON body, the CSRF header). */
export async function post(path, body = {}) {
  return answer(
    await fetch(path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Clew-CSRF": csrf },
      body: JSON.stringify(body),
    }),
  );
}

export function ago(iso) {
  if (!iso) return "";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const s = Math.max(0, (Date.now() - t) / 1000);
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return iso.slice(0, 16).replace("T", " ");
}

export const fmt = (n) => Number(n || 0).toLocaleString("en");

/** Call f at most once per `ms`, with the last arguments. */
export function debounce(f, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => f(...args), ms);
  };
}

export function badge(status) {
  return h("span", { class: `badge st-${status}` }, status);
}

/** Show an error line in `where` (replacing what was there). */
export function showError(where, e) {
  fill(where, h("p", { class: "error" }, String(e.message || e)));
}
