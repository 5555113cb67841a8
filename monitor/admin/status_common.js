"use strict";
// Shared by the page's parts: DOM building (text nodes only), number and time formats, fetch.
const REFRESH_MS = __REFRESH_MS__;
const KEY = "rag-monitor-token";
const SVG = "http://www.w3.org/2000/svg";
const state = { token: null, metric: "", catalogue: {}, metrics: [] };

// Data never becomes markup: every text is a text node, attribute names are constants.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
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
function fmtCount(x) { return String(Math.round(x)); }
function fmtScale(scale) { return fmtNum(scale[0]) + "\u2013" + fmtNum(scale[1]); }

// Times: the browser's zone, named, so a screenshot in a ticket is unambiguous.
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
const TIME = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit",
                                                  timeZoneName: "short" });
const DATETIME = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "2-digit", day: "2-digit",
                                                      hour: "2-digit", minute: "2-digit", second: "2-digit",
                                                      timeZoneName: "short" });
function fmtTime(unix) { return TIME.format(new Date(unix * 1000)); }
function fmtDateTime(unix) { return DATETIME.format(new Date(unix * 1000)); }
function ago(unix) {
  const s = Math.max(0, Date.now() / 1000 - unix);
  if (s < 90) return Math.round(s) + " s ago";
  if (s < 5400) return Math.round(s / 60) + " min ago";
  return Math.round(s / 3600) + " h ago";
}
function span(seconds) {
  if (seconds < 90) return Math.round(seconds) + " s";
  if (seconds < 5400) return Math.round(seconds / 60) + " min";
  return (seconds / 3600).toFixed(1) + " h";
}

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.has("token")) {
    state.token = params.get("token");
    try { sessionStorage.setItem(KEY, state.token); } catch (e) { /* storage off: memory only */ }
    params.delete("token");
    // Keep the secret out of the address bar, screenshots and shared links.
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? "#" + rest : ""));
  } else {
    try { state.token = sessionStorage.getItem(KEY); } catch (e) { state.token = null; }
  }
  state.metric = params.get("metric") || "";
}

async function getJSON(path) {
  const headers = { "Accept": "application/json" };
  if (state.token) headers["Authorization"] = "Bearer " + state.token;
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
