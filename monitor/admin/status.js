
"use strict";
const REFRESH_MS = __REFRESH_MS__;
const KEY = "rag-monitor-token";
const SVG = "http://www.w3.org/2000/svg";
let token = null;

// Data never becomes markup: every text is a text node, attribute names are constants.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}
function svgEl(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  return node;
}
function pct(x) { return (x * 100).toFixed(1) + "%"; }
function fmtRate(x) { return x === null ? "no data" : pct(x); }
function fmtMean(x) { return x === null ? "\u2013" : x.toFixed(2); }
function fmtNum(x) { return Number.isInteger(x) ? String(x) : x.toFixed(2); }
function fmtScore(item) {
  if (item.value === null) return item.error_type ? item.outcome + " (" + item.error_type + ")" : item.outcome;
  let text = fmtNum(item.value) + " on " + fmtNum(item.scale[0]) + "\u2013" + fmtNum(item.scale[1]);
  return item.label ? text + " \u00b7 " + item.label : text;
}
function ago(unix) {
  const s = Math.max(0, Date.now() / 1000 - unix);
  if (s < 90) return Math.round(s) + " s ago";
  if (s < 5400) return Math.round(s / 60) + " min ago";
  return Math.round(s / 3600) + " h ago";
}

function readToken() {
  const match = /(?:^|&)token=([^&]*)/.exec(location.hash.slice(1));
  if (match) {
    token = decodeURIComponent(match[1]);
    try { sessionStorage.setItem(KEY, token); } catch (e) { /* storage off: memory only */ }
    // Keep the secret out of the address bar, screenshots and shared links.
    history.replaceState(null, "", location.pathname + location.search);
  } else {
    try { token = sessionStorage.getItem(KEY); } catch (e) { token = null; }
  }
}

async function getJSON(path) {
  const headers = { "Accept": "application/json" };
  if (token) headers["Authorization"] = "Bearer " + token;
  const response = await fetch(path, { headers, cache: "no-store", credentials: "omit" });
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  return { status: response.status, body };
}

function problem(result) {
  if (result.status === 401) document.getElementById("auth").hidden = false;
  const why = result.body && typeof result.body.error === "string" ? result.body.error : "no details";
  return "HTTP " + result.status + ": " + why;
}

function trendTop(points) {
  return Math.max(0.05, ...points.map(p => p.defect_rate).filter(r => r !== null));
}
function trendScale(points) {
  return points.some(p => p.defect_rate !== null) ? "0\u2013" + pct(trendTop(points)) : "";
}
function sparkline(points) {
  const W = 120, H = 28, P = 2;
  const rates = points.map(p => p.defect_rate);
  const seen = rates.filter(r => r !== null);
  const top = trendTop(points);
  const svg = svgEl("svg", { "class": "trend", "width": W, "height": H, "viewBox": `0 0 ${W} ${H}`,
                             "data-field": "trend", "data-points": seen.length, "role": "img" });
  const title = svgEl("title", {});
  title.textContent = seen.length ? "defect rate per interval, scale 0\u2013" + pct(top) : "no data";
  svg.append(title, svgEl("line", { "x1": 0, "y1": H - P, "x2": W, "y2": H - P }));
  const x = i => (points.length > 1 ? (i / (points.length - 1)) * (W - 2 * P) : (W - 2 * P) / 2) + P;
  const y = r => H - P - (r / top) * (H - 2 * P);
  let run = [];
  const flush = () => {
    if (run.length === 1) svg.append(svgEl("circle", { "cx": run[0][0], "cy": run[0][1], "r": 1.5 }));
    if (run.length > 1) svg.append(svgEl("polyline", { "points": run.map(p => p.join(",")).join(" ") }));
    run = [];
  };
  rates.forEach((r, i) => { if (r === null) flush(); else run.push([x(i).toFixed(1), y(r).toFixed(1)]); });
  flush();
  return svg;
}

function windowCell(name, w, longest) {
  const td = el("td", { "class": "rate", "data-window": name });
  if (!w) { td.append(el("span", { "class": "nodata", "data-field": "defect_rate" }, "no data")); return td; }
  const rate = el("span", { "class": "value" + (w.defect_rate === null ? " nodata" : ""),
                            "data-field": "defect_rate" }, fmtRate(w.defect_rate));
  td.append(rate);
  if (w.lower !== null && w.upper !== null) {
    const lower = el("span", { "data-field": "lower" }, pct(w.lower));
    const upper = el("span", { "data-field": "upper" }, pct(w.upper));
    td.append(" ", el("span", { "class": "sub", "title": "95% Wilson interval" }, "[", lower, ", ", upper, "]"));
  }
  // Flag a short window whose interval lies wholly above the longest window's: a real rise, not noise.
  if (longest && longest !== w && w.lower !== null && longest.upper !== null && w.lower > longest.upper) {
    const title = "significantly above the longest window";
    td.append(" ", el("span", { "class": "up", "data-field": "rising", "title": title }, "\u25b2"));
  }
  const sub = el("div", { "class": "sub" }, "n=", el("span", { "data-field": "n" }, w.evaluations),
                 " \u00b7 mean ", el("span", { "data-field": "mean" }, fmtMean(w.mean)));
  if (w.errors > 0) {
    sub.append(" \u00b7 ", el("span", { "class": "error", "data-field": "errors" }, w.errors), " errors");
  }
  if (w.effective_n !== null && w.evaluations > 0 && Math.abs(w.effective_n - w.evaluations) >= 0.5) {
    sub.setAttribute("title", "weighted by sampling; effective n = " + w.effective_n.toFixed(1));
  }
  td.append(sub);
  return td;
}

function renderSummary(doc) {
  const names = doc.windows.map(w => w.name);
  const shortest = names[0];
  const longestName = doc.trend_window;
  const head = el("tr", {}, el("th", {}, "metric"), ...names.map(n => el("th", {}, n)),
                  el("th", {}, "trend " + (longestName || "")));
  const order = Object.keys(doc.metrics).sort((a, b) => {
    const ra = (doc.metrics[a].windows[shortest] || {}).defect_rate ?? -1;
    const rb = (doc.metrics[b].windows[shortest] || {}).defect_rate ?? -1;
    return rb - ra || (a < b ? -1 : 1);
  });
  const body = el("tbody", {});
  for (const metric of order) {
    const m = doc.metrics[metric];
    const longest = m.windows[longestName];
    const row = el("tr", { "data-metric": metric }, el("th", { "data-field": "metric" }, metric));
    for (const n of names) row.append(windowCell(n, m.windows[n], longest));
    const scale = el("div", { "class": "sub", "data-field": "trend-scale" }, trendScale(m.trend));
    row.append(el("td", {}, sparkline(m.trend), scale));
    body.append(row);
  }
  if (!order.length) {
    body.append(el("tr", {}, el("td", { "colspan": names.length + 2, "class": "mute", "data-field": "empty" },
                                "no evaluations yet")));
  }
  const table = el("table", { "data-table": "summary" }, el("thead", {}, head), body);
  document.getElementById("rates").replaceChildren(table);
  document.getElementById("worst-window").textContent = longestName ? "last " + longestName : "";
}

function copyButton(text) {
  const button = el("button", { "type": "button", "title": "copy the trace id" }, "copy");
  button.addEventListener("click", async () => {
    try { await navigator.clipboard.writeText(text); button.textContent = "copied"; }
    catch (e) { button.textContent = "select and copy"; }
  });
  return button;
}

function renderWorst(doc) {
  const list = document.getElementById("worst");
  const cards = doc.items.map(item => el("article", { "data-field": "turn", "data-id": item.id },
    el("div", { "class": "head" },
      el("strong", { "data-field": "metric" }, item.metric),
      el("span", { "class": item.outcome === "defect" ? "error" : "", "data-field": "outcome" }, item.outcome),
      el("span", { "data-field": "score" }, fmtScore(item)),
      el("span", { "class": "sub", "data-field": "when", "data-ts": item.timestamp,
                   "title": new Date(item.timestamp * 1000).toISOString() }, ago(item.timestamp)),
      el("span", {}, "trace ", el("code", { "data-field": "trace_id" }, item.trace_id), " ",
         copyButton(item.trace_id)),
      el("span", { "class": "sub" }, item.service + " \u00b7 conversation ",
         el("span", { "data-field": "conversation_id" }, item.conversation_id))),
    el("dl", {},
      el("dt", {}, "question"), el("dd", { "data-field": "question" }, item.question),
      el("dt", {}, "answer"), el("dd", { "data-field": "answer" }, item.answer),
      el("dt", {}, "reason"), el("dd", { "data-field": "reason" }, item.reason ?? "\u2013"))));
  if (!cards.length) {
    cards.push(el("p", { "class": "mute", "data-field": "empty" }, "no evaluated turns in this period"));
  }
  list.replaceChildren(...cards);
}

const shown = {};
async function load(path, render, messageId) {
  const message = document.getElementById(messageId);
  let result;
  try {
    result = await getJSON(path);
  } catch (e) {
    message.textContent = "cannot reach the monitor (" + e.message + "); the data below is from before";
    return false;
  }
  if (result.status !== 200 || !result.body) {
    message.textContent = problem(result);
    shown[messageId] = null;
    return false;
  }
  // Unchanged data is not redrawn, so a selection (a trace id being copied) survives a refresh.
  const key = JSON.stringify({ ...result.body, generated_at: 0 });
  if (shown[messageId] !== key) render(result.body);
  shown[messageId] = key;
  if (typeof result.body.generated_at === "number") {
    const at = new Date(result.body.generated_at * 1000).toLocaleTimeString();
    document.getElementById("generated").textContent = "as of " + at;
  }
  message.textContent = "";
  return true;
}

async function refresh() {
  const results = await Promise.all([load("/api/summary", renderSummary, "rates-message"),
                                     load("/api/worst?limit=20", renderWorst, "worst-message")]);
  const status = document.getElementById("status");
  status.textContent = (results.every(Boolean) ? "updated " : "last attempt ") + new Date().toLocaleTimeString()
                       + " \u00b7 every " + REFRESH_MS / 1000 + " s";
  if (results.every(Boolean)) document.getElementById("auth").hidden = true;
  for (const node of document.querySelectorAll("[data-field=when]")) {
    node.textContent = ago(Number(node.dataset.ts));
  }
  setTimeout(refresh, REFRESH_MS);
}

document.getElementById("auth").addEventListener("submit", event => {
  event.preventDefault();
  token = document.getElementById("token").value.trim() || null;
  try { if (token) sessionStorage.setItem(KEY, token); } catch (e) { /* memory only */ }
  load("/api/summary", renderSummary, "rates-message");
  load("/api/worst?limit=20", renderWorst, "worst-message");
});
readToken();
refresh();
