// The metrics table: per metric what its numbers mean (scale, direction, defect rule), its
// rolling defect rates, why some evaluations gave no score, and its trend with a change marker.

const DIRECTION = { higher_is_better: "\u2191 higher is better", higher_is_worse: "\u2191 higher is worse" };

// The reference level on a trend: the longest window's rate, what "normal" has looked like lately.
function trendCell(m, doc, top, from) {
  const longest = m.windows[doc.longest_window];
  const reference = longest ? longest.defect_rate : null;
  const cell = el("td", { "class": "trendcell" },
                  trendChart(m.trend, { top, seconds: doc.trend_seconds, reference, change: m.change, from }));
  const seen = m.trend.some(p => p.defect_rate !== null);
  cell.append(el("div", { "class": "sub", "data-field": "trend-scale" },
                 seen ? "0\u2013" + pct(top) + " (all metrics) over " + doc.trend_window +
                        (reference !== null ? " \u00b7 dashed: " + doc.longest_window + " rate" : "") : ""));
  if (m.change) {
    const arrow = m.change.direction === "up" ? "\u25b2 " : "\u25bc ";
    cell.append(el("div", { "class": "sub " + (m.change.direction === "up" ? "error" : ""), "data-field": "change-text" },
                   arrow + pct(m.change.before) + " \u2192 " + pct(m.change.after) + " from " + fmtTime(m.change.start)));
  }
  return cell;
}

function meaningCell(metric, info) {
  const td = el("td", { "class": "meaning", "data-field": "meaning" });
  if (!info) {
    td.append(el("span", { "class": "sub" }, "not in the configuration"));
    return td;
  }
  td.append(el("span", { "class": "tag" }, info.tier), " ",
            el("span", { "data-field": "scale" }, fmtScale(info.scale)), " ",
            el("span", { "class": "sub", "data-field": "direction" }, DIRECTION[info.direction] || info.direction),
            el("div", { "class": "sub", "data-field": "rule" }, info.defect_rule));
  if (!info.enabled) td.append(el("div", { "class": "error", "data-field": "off" }, "off: " + info.off_reason));
  td.setAttribute("title", info.summary);
  return td;
}

function windowCell(name, w, longest, note) {
  const td = el("td", { "class": "rate", "data-window": name });
  if (!w) { td.append(el("span", { "class": "nodata", "data-field": "defect_rate" }, "no data")); return td; }
  td.append(el("span", { "class": "value" + (w.defect_rate === null ? " nodata" : ""), "data-field": "defect_rate" },
               fmtRate(w.defect_rate)));
  if (w.lower !== null && w.upper !== null) {
    td.append(" ", el("span", { "class": "sub", "title": "95% Wilson interval" }, "[",
                      el("span", { "data-field": "lower" }, pct(w.lower)), ", ",
                      el("span", { "data-field": "upper" }, pct(w.upper)), "]"));
  }
  // A short window whose interval lies wholly above the longest window's: a real rise, not noise.
  if (longest && longest !== w && w.lower !== null && longest.upper !== null && w.lower > longest.upper) {
    td.append(" ", el("span", { "class": "up", "data-field": "rising", "title": "significantly above the longest window" }, "\u25b2"));
  }
  const sub = el("div", { "class": "sub" }, "n=", el("span", { "data-field": "n" }, w.evaluations),
                 " \u00b7 mean ", el("span", { "data-field": "mean" }, fmtMean(w.mean)));
  if (w.effective_n !== null && w.evaluations > 0 && Math.abs(w.effective_n - w.evaluations) >= 0.5) {
    sub.setAttribute("title", "weighted by sampling; effective n = " + w.effective_n.toFixed(1));
  }
  td.append(sub);
  // Turns the judge refused or its content filter blocked: not in the rate, often the harmful ones.
  if (w.refused) {
    td.append(el("div", { "class": "sub error", "data-field": "refused",
                          "title": "judge refused or content filter blocked: unscored_refused" },
                 "possibly harmful, not scored: ", w.refused));
  }
  if (note) td.append(el("div", { "class": "sub", "data-field": "same-as" }, note));
  return td;
}

// Where a longer window holds no more data than the shorter one, say so: they read the same.
function sameAsNote(doc, m, index) {
  if (index === 0 || m.data_since === null) return null;
  const age = doc.generated_at - m.data_since;
  const shorter = doc.windows[index - 1];
  if (doc.windows[index].seconds <= age || shorter.seconds < age) return null;
  return "= " + shorter.name + ": data only from the last " + span(age);
}

function causes(list) {
  return list.map(r => el("div", { "class": "sub", "data-field": "cause", "title": r.example || "" },
                          r.cause + " (" + r.count + ")"));
}
function outcomesCell(m, longestName) {
  const w = m.windows[longestName];
  const td = el("td", { "class": "outcomes" });
  const skipped = w ? w.skipped : 0, errors = w ? w.errors : 0;
  td.append(el("div", {}, "skipped ", el("span", { "data-field": "skipped" }, skipped)), ...causes(m.reasons.skipped));
  td.append(el("div", { "class": errors ? "error" : "" }, "errors ", el("span", { "data-field": "errors" }, errors)),
            ...causes(m.reasons.error));
  return td;
}

function metricButton(metric) {
  const button = el("button", { "type": "button", "class": "link", "data-filter": metric,
                                "title": "show the worst turns of this metric" }, metric);
  button.addEventListener("click", () => setMetric(metric));
  return button;
}

// A metric that is off (no judge configured, say) and holds no data is not a row: one line names
// them all, per reason, so eight "off" rows do not sit level with a real regression.
function isIdleOff(m) {
  return m.info !== null && !m.info.enabled && !Object.values(m.windows).some(w => w.evaluations > 0) &&
    !m.trend.some(p => p.defect_rate !== null);
}

function offLine(doc, metrics) {
  const byReason = {};
  for (const metric of metrics) (byReason[doc.metrics[metric].info.off_reason || "off"] ||= []).push(metric);
  return Object.entries(byReason).map(([reason, names]) =>
    el("p", { "class": "sub", "data-field": "off-metrics", "data-count": names.length },
       "off: " + reason + " \u2014 " + names.length + " metric" + (names.length === 1 ? "" : "s") + ": ",
       ...names.flatMap((n, i) => [i ? ", " : "", el("span", { "data-off-metric": n }, n)])));
}

function renderSummary(doc) {
  const names = doc.windows.map(w => w.name);
  const longestName = doc.longest_window;
  state.catalogue = Object.fromEntries(Object.entries(doc.metrics).map(([k, m]) => [k, m.info]));
  state.metrics = Object.keys(doc.metrics);
  const off = state.metrics.filter(metric => isIdleOff(doc.metrics[metric]));
  const shown = state.metrics.filter(metric => !off.includes(metric));
  const top = sharedTop(shown.map(metric => doc.metrics[metric].trend));
  const from = firstData(shown.map(metric => doc.metrics[metric].trend));
  const head = el("tr", {}, el("th", {}, "metric"), el("th", {}, "scale \u00b7 direction \u00b7 defect rule"),
                  ...names.map(n => el("th", {}, "defects " + n)), el("th", {}, "no score (" + longestName + ")"),
                  el("th", {}, "trend " + doc.trend_window));
  const body = el("tbody", {});
  for (const metric of shown) {
    const m = doc.metrics[metric];
    const longest = m.windows[longestName];
    const row = el("tr", { "data-metric": metric }, el("th", { "data-field": "metric" }, metricButton(metric)),
                   meaningCell(metric, m.info));
    names.forEach((n, i) => row.append(windowCell(n, m.windows[n], longest, sameAsNote(doc, m, i))));
    row.append(outcomesCell(m, longestName), trendCell(m, doc, top, from));
    body.append(row);
  }
  if (!state.metrics.length) {
    body.append(el("tr", {}, el("td", { "colspan": names.length + 4, "class": "mute", "data-field": "empty" },
                                "no evaluations yet: see the pipeline above for why")));
  }
  document.getElementById("rates").replaceChildren(el("table", { "data-table": "summary" }, el("thead", {}, head), body),
                                                   ...offLine(doc, off));
  document.getElementById("worst-window").textContent = longestName ? "last " + longestName : "";
  renderFilter();
  markIncidentRows();
}
