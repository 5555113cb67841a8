// The metrics table: per metric what its numbers mean (scale, direction, defect rule), its
// rolling defect rates, why some evaluations gave no score, and its trend with a change marker.

const DIRECTION = { higher_is_better: "\u2191 higher is better", higher_is_worse: "\u2191 higher is worse" };

function trendTop(points) {
  return Math.max(0.05, ...points.flatMap(p => [p.defect_rate, p.upper]).filter(r => r !== null));
}
function chart(points, change, seconds) {
  const W = 200, H = 44, P = 2;
  const seen = points.filter(p => p.defect_rate !== null);
  const top = trendTop(points);
  const svg = svgEl("svg", { "class": "trend", "width": W, "height": H, "viewBox": `0 0 ${W} ${H}`,
                             "data-field": "trend", "data-points": seen.length, "role": "img" });
  const title = svgEl("title", {});
  title.textContent = seen.length ? "defect rate per step with its 95% interval, scale 0\u2013" + pct(top)
                                  : "no data";
  svg.append(title, svgEl("line", { "x1": 0, "y1": H - P, "x2": W, "y2": H - P }));
  const x = i => (points.length > 1 ? (i / (points.length - 1)) * (W - 2 * P) : (W - 2 * P) / 2) + P;
  const y = r => H - P - (r / top) * (H - 2 * P);
  const banded = points.map((p, i) => [i, p]).filter(([, p]) => p.lower !== null && p.upper !== null);
  if (banded.length > 1) {
    const upper = banded.map(([i, p]) => x(i).toFixed(1) + "," + y(p.upper).toFixed(1));
    const lower = banded.slice().reverse().map(([i, p]) => x(i).toFixed(1) + "," + y(p.lower).toFixed(1));
    svg.append(svgEl("polygon", { "class": "band", "data-field": "band", "points": upper.concat(lower).join(" ") }));
  }
  let run = [];
  const flush = () => {
    if (run.length === 1) svg.append(svgEl("circle", { "cx": run[0][0], "cy": run[0][1], "r": 1.8 }));
    if (run.length > 1) svg.append(svgEl("polyline", { "points": run.map(p => p.join(",")).join(" ") }));
    run = [];
  };
  points.forEach((p, i) => { if (p.defect_rate === null) flush(); else run.push([x(i).toFixed(1), y(p.defect_rate).toFixed(1)]); });
  flush();
  if (change) {
    const cx = x(change.index - 0.5).toFixed(1);
    svg.append(svgEl("line", { "class": "change", "data-field": "change", "x1": cx, "y1": 0, "x2": cx, "y2": H }));
  }
  return svg;
}

function trendCell(m, doc) {
  const cell = el("td", { "class": "trendcell" }, chart(m.trend, m.change, doc.trend_seconds));
  const seen = m.trend.some(p => p.defect_rate !== null);
  cell.append(el("div", { "class": "sub", "data-field": "trend-scale" },
                 seen ? "0\u2013" + pct(trendTop(m.trend)) + " over " + doc.trend_window : ""));
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

function renderSummary(doc) {
  const names = doc.windows.map(w => w.name);
  const longestName = doc.longest_window;
  state.catalogue = Object.fromEntries(Object.entries(doc.metrics).map(([k, m]) => [k, m.info]));
  state.metrics = Object.keys(doc.metrics);
  const head = el("tr", {}, el("th", {}, "metric"), el("th", {}, "scale \u00b7 direction \u00b7 defect rule"),
                  ...names.map(n => el("th", {}, "defects " + n)), el("th", {}, "no score (" + longestName + ")"),
                  el("th", {}, "trend " + doc.trend_window));
  const body = el("tbody", {});
  for (const metric of state.metrics) {
    const m = doc.metrics[metric];
    const longest = m.windows[longestName];
    const row = el("tr", { "data-metric": metric }, el("th", { "data-field": "metric" }, metricButton(metric)),
                   meaningCell(metric, m.info));
    names.forEach((n, i) => row.append(windowCell(n, m.windows[n], longest, sameAsNote(doc, m, i))));
    row.append(outcomesCell(m, longestName), trendCell(m, doc));
    body.append(row);
  }
  if (!state.metrics.length) {
    body.append(el("tr", {}, el("td", { "colspan": names.length + 4, "class": "mute", "data-field": "empty" },
                                "no evaluations yet: see the pipeline above for why")));
  }
  document.getElementById("rates").replaceChildren(el("table", { "data-table": "summary" }, el("thead", {}, head), body));
  document.getElementById("worst-window").textContent = longestName ? "last " + longestName : "";
  renderFilter();
}
