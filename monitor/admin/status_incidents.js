// The incident banner, the first thing on the page: one entry per active regression (the time-based
// detector of /api/regressions) and per release whose interval says it is worse than the one before
// (/api/releases, regressed), each with what got worse, since when, by how much with its interval,
// the label values that carry it, and the runbook. Traffic that stopped is said here too.

const incidents = { regressions: [], releases: [], quiet: null, at: null };

// "4 min" before the detector's own clock (the document's ``at``), not the browser's: a page
// opened on a laptop with a skewed clock still tells how long the regression has lasted.
function lasting(since) {
  const now = incidents.at ?? Date.now() / 1000;
  return "for " + span(Math.max(0, now - since));
}

function signedPoints(x) { return (x < 0 ? "\u2212" : "+") + Math.abs(x * 100).toFixed(1) + " pts"; }
function signedMean(x) { return (x < 0 ? "\u2212" : "+") + Math.abs(x).toFixed(2); }
function statValue(statistic, x) {
  if (x === null || x === undefined) return "\u2013";
  return statistic === "score" ? x.toFixed(2) : pct(x);
}
function statDiff(statistic, x) { return statistic === "score" ? signedMean(x) : signedPoints(x); }
function statName(statistic) { return statistic === "score" ? "mean score (0\u20131, higher is better)" : "defect rate"; }

function intervalSpan(statistic, lower, upper, what) {
  if (lower === null || lower === undefined || upper === null || upper === undefined) return null;
  return el("span", { "class": "sub", "data-field": "interval", "title": what },
            "[" + statDiff(statistic, lower) + ", " + statDiff(statistic, upper) + "]");
}

// Only http(s) links: a runbook URL comes from configuration, and a page link must never run code.
function runbookLink(url) {
  if (typeof url !== "string" || !/^https?:\/\//i.test(url)) return null;
  return el("a", { "href": url, "data-field": "runbook", "rel": "noopener noreferrer", "target": "_blank" }, "runbook");
}

function driverItem(d, statistic) {
  return el("li", { "data-field": "driver", "data-label": d.label, "data-value": d.value },
    el("strong", {}, d.label + " " + d.value), " ",
    el("span", { "data-field": "driver-change" },
       statValue(statistic, d.before) + " \u2192 " + statValue(statistic, d.after)),
    el("span", { "class": "sub" }, " \u00b7 " + Math.round(d.share * 100) + "% of the change \u00b7 n=" + fmtCount(d.n)));
}

function driverList(drivers, statistic) {
  if (!drivers || !drivers.length) return el("div", { "class": "sub", "data-field": "no-drivers" },
                                             "no single route, model or version carries it");
  return el("ul", { "class": "drivers", "data-field": "drivers" }, el("li", { "class": "sub" }, "carried by:"),
            ...drivers.slice(0, 3).map(d => driverItem(d, statistic)));
}

// The detector's evidence against its alarm level, both log10 (an e-value of 10^4 against 10^2).
function evidenceLine(r) {
  if (typeof r.evidence !== "number" || typeof r.threshold !== "number") return null;
  return el("div", { "class": "sub", "data-field": "evidence" },
            "evidence 10^" + r.evidence.toFixed(1) + " \u2265 alarm level 10^" + r.threshold.toFixed(1));
}

// When it started (the detector's estimate of the change time), when it has one.
function sinceParts(since) {
  if (typeof since !== "number") return [];
  return [" since ", el("span", { "data-field": "since", "data-ts": since, "title": fmtDateTime(since) }, fmtTime(since)),
          el("span", { "class": "sub", "data-field": "lasting" }, " (" + lasting(since) + ")")];
}

function regressionBanner(r) {
  return el("div", { "class": "incident", "data-incident": "regression", "data-metric": r.metric,
                     "data-service": r.service, "data-statistic": r.statistic },
    el("div", { "class": "what" },
      el("strong", { "data-field": "metric" }, "\u25b2 " + r.metric), " ",
      el("span", {}, statName(r.statistic) + " "),
      el("span", { "class": "value", "data-field": "change" },
         statValue(r.statistic, r.before) + " \u2192 " + statValue(r.statistic, r.after)), " ",
      intervalSpan(r.statistic, r.lower, r.upper, "interval on after \u2212 before"),
      ...sinceParts(r.since),
      el("span", { "class": "sub" }, " \u00b7 service " + r.service + " "),
      runbookLink(r.runbook_url), " ", worstTurnsButton(r.metric)),
    driverList(r.drivers, r.statistic), evidenceLine(r));
}

function releaseBanner(service, c) {
  return el("div", { "class": "incident", "data-incident": "release", "data-metric": c.metric, "data-service": service,
                     "data-candidate": c.candidate },
    el("div", { "class": "what" },
      el("strong", { "data-field": "metric" }, "\u25b2 " + c.metric), " ",
      el("span", {}, "release " + c.candidate + " worse than " + c.baseline + " (" + c.mode + "): defect rate "),
      el("span", { "class": "value", "data-field": "change" },
         statValue("defect_rate", c.defect_rate_baseline) + " \u2192 " + statValue("defect_rate", c.defect_rate_candidate)),
      " ", intervalSpan("defect_rate", c.lower, c.upper, "anytime-valid interval on candidate \u2212 baseline"),
      el("span", { "class": "sub" }, " \u00b7 service " + service + " \u00b7 n " + c.n_baseline + " vs " + c.n_candidate + " "),
      runbookLink(c.runbook_url), " ", worstTurnsButton(c.metric)),
    driverList(c.drivers, "defect_rate"));
}

function renderIncidents() {
  const area = document.getElementById("incidents");
  const items = [];
  if (incidents.quiet) items.push(incidents.quiet);
  items.push(...incidents.regressions.map(regressionBanner));
  items.push(...incidents.releases.map(([service, c]) => releaseBanner(service, c)));
  area.replaceChildren(...items);
  area.hidden = !items.length;
  markIncidentRows();
}

// The metrics table's rows of the metrics in the banner are marked, so the eye goes from the
// banner to the row's numbers and trend.
function markIncidentRows() {
  const metrics = new Set([...incidents.regressions.map(r => r.metric), ...incidents.releases.map(([, c]) => c.metric)]);
  for (const row of document.querySelectorAll("#rates tr[data-metric]")) {
    row.classList.toggle("incident-row", metrics.has(row.dataset.metric));
  }
}

// From the banner straight to the turns that show it.
function worstTurnsButton(metric) {
  const button = el("button", { "type": "button", "data-field": "show-turns", "data-filter": metric },
                    "worst turns");
  button.addEventListener("click", () => {
    setMetric(metric);
    document.getElementById("worst").scrollIntoView();
  });
  return button;
}

function renderRegressions(doc) {
  incidents.regressions = doc.active || [];
  incidents.at = typeof doc.at === "number" && doc.at > 0 ? doc.at : null;
  renderIncidents();
  renderWatching(doc.watching || []);
}

// Evidence building up without an alarm: context for whoever looks, not an incident.
function renderWatching(watching) {
  const line = document.getElementById("watching");
  const items = watching.filter(r => typeof r.evidence === "number" && typeof r.threshold === "number").slice(0, 5);
  line.replaceChildren(...(items.length ? ["change detector, evidence below the alarm level: ",
    ...items.flatMap((r, i) => [i ? ", " : "", el("span", { "data-watching": r.metric, "data-statistic": r.statistic },
      r.metric + " " + (r.statistic === "score" ? "score" : "defect rate") + " 10^" + r.evidence.toFixed(1) +
      " of 10^" + r.threshold.toFixed(1))])] : []));
}

// 404 (no change detector in this monitor): no regression banner. 503: off, or busy for a moment,
// in which case the banner keeps what it showed rather than flickering away.
function regressionsUnavailable(result) {
  if (result.status === 404) {
    incidents.regressions = [];
    renderIncidents();
    renderWatching([]);
  }
}

function releaseRegressions(doc) {
  return (doc.services || []).flatMap(s => (s.comparisons || []).filter(c => c.regressed).map(c => [s.service, c]));
}

// "no spans for N s": from /api/pipeline's last_span_at, when traffic stopped for longer than a
// few refreshes (the counters are read every 10 s, so shorter gaps are not news).
const QUIET_SECONDS = 30;
function quietLine(doc) {
  const total = sum(doc.stages.spans_received.total);
  const last = typeof doc.last_span_at === "number" ? doc.last_span_at : null;
  if (!total) {
    if (doc.generated_at - doc.started_at < QUIET_SECONDS) return null;
    return el("div", { "class": "incident quiet", "data-incident": "no-spans", "data-field": "no-spans" },
              "no spans received since start (" + span(doc.generated_at - doc.started_at) + ")");
  }
  if (last === null || doc.generated_at - last < QUIET_SECONDS) return null;
  return el("div", { "class": "incident quiet", "data-incident": "no-spans", "data-field": "no-spans",
                     "data-seconds": Math.round(doc.generated_at - last) },
            "no spans for " + span(doc.generated_at - last) + " (last at " + fmtTime(last) +
            "): the numbers below stop moving; check the app and the collector in front of the monitor");
}
