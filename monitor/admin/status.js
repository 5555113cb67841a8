// The page's loop: load each part, redraw only what changed, say when data is stale.

const shown = {};
// ``after`` runs on every successful load, changed or not (what depends on the clock, like "no
// spans for N s"). ``unavailable`` takes a 404 (a monitor without this endpoint) or a 503 (the
// feature is off, or busy for a moment): that part of the page says so quietly or hides, and the
// rest of the page does not read as failing.
async function load(path, render, messageId, { after, unavailable } = {}) {
  const message = document.getElementById(messageId);
  let result;
  try {
    result = await getJSON(path);
  } catch (e) {
    message.textContent = "cannot reach the monitor (" + e.message + "); the data below is from before";
    return false;
  }
  if ((result.status === 404 || result.status === 503) && unavailable) {
    message.textContent = "";
    unavailable(result);
    shown[messageId] = null;
    return true;
  }
  if (result.status !== 200 || !result.body) {
    message.textContent = problem(result);
    shown[messageId] = null;
    return false;
  }
  // Unchanged data is not redrawn, so a selection (a trace id being copied) survives a refresh.
  const key = path + JSON.stringify({ ...result.body, generated_at: 0 });
  if (shown[messageId] !== key) render(result.body);
  shown[messageId] = key;
  if (after) after(result.body);
  if (typeof result.body.generated_at === "number") {
    document.getElementById("generated").textContent = "as of " + fmtTime(result.body.generated_at);
  }
  message.textContent = "";
  return true;
}

async function loadAll() {
  // The summary first: the turns need its metric list and defect rules. Then two at a time: the
  // API serves 4 requests at once and answers 503 past that, so two open pages still fit.
  const summary = await load("/api/summary", renderSummary, "rates-message");
  const incidentParts = await Promise.all([
    load("/api/regressions", renderRegressions, "incidents-message", { unavailable: regressionsUnavailable }),
    load("/api/pipeline", renderPipeline, "pipeline-message",
         { after: doc => { incidents.quiet = quietLine(doc); renderIncidents(); } })]);
  const rest = await Promise.all([
    load("/api/releases", renderReleases, "releases-message", { unavailable: releasesUnavailable }),
    load(turnsPath(), renderTurns, "worst-message")]);
  return [summary, ...incidentParts, ...rest];
}

async function refresh() {
  const results = await loadAll();
  const ok = results.every(Boolean);
  document.getElementById("status").textContent = (ok ? "updated " : "last attempt ") +
    fmtTime(Date.now() / 1000) + " \u00b7 every " + REFRESH_MS / 1000 + " s";
  if (ok) document.getElementById("auth").hidden = true;
  for (const node of document.querySelectorAll("[data-field=when]")) node.title = ago(Number(node.dataset.ts));
  setTimeout(refresh, REFRESH_MS);
}

document.getElementById("auth").addEventListener("submit", event => {
  event.preventDefault();
  state.token = document.getElementById("token").value.trim() || null;
  try { if (state.token) sessionStorage.setItem(KEY, state.token); } catch (e) { /* memory only */ }
  loadAll();
});
document.getElementById("zone").textContent = "times in " + ZONE;
readHash();
refresh();
