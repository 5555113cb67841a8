// The release view (/api/releases): each service's recent versions, and per metric the newest
// version (candidate) against the one before (baseline) — defect rates, the difference with its
// anytime-valid interval drawn against zero on one scale for the whole table, mean scores, counts.

const DIFF_SCALES = [0.02, 0.05, 0.1, 0.2, 0.5, 1];

function versionChip(v, newest) {
  return el("span", { "class": "version", "data-version": v.version,
                      "title": "first seen " + fmtDateTime(v.first_seen) + ", last seen " + fmtDateTime(v.last_seen) },
    el("strong", {}, v.version), newest ? el("span", { "class": "tag" }, "newest") : null,
    el("span", { "class": "sub" }, " " + fmtCount(v.evaluations) + " evaluations, since " + fmtTime(v.first_seen)));
}

// The interval on candidate − baseline as a bar across zero; ±scale is shared by every row.
function intervalPlot(c, scale) {
  const W = 160, H = 16, mid = W / 2;
  const x = d => mid + (Math.max(-scale, Math.min(scale, d)) / scale) * (mid - 3);
  const svg = svgEl("svg", { "class": "interval" + (c.regressed ? " regressed" : ""), "width": W, "height": H,
                             "viewBox": `0 0 ${W} ${H}`, "data-field": "interval-plot", "role": "img" });
  const title = svgEl("title", {});
  title.textContent = "candidate \u2212 baseline defect rate with its interval; scale \u00b1" + pct(scale);
  svg.append(title, svgEl("line", { "class": "zero", "x1": mid, "y1": 0, "x2": mid, "y2": H }));
  if (c.lower !== null && c.upper !== null) {
    svg.append(svgEl("line", { "class": "bar", "x1": x(c.lower), "y1": H / 2, "x2": x(c.upper), "y2": H / 2 }));
  }
  if (c.difference !== null) svg.append(svgEl("circle", { "cx": x(c.difference), "cy": H / 2, "r": 2.5 }));
  return svg;
}

function verdict(c) {
  if (c.regressed) return el("span", { "class": "error", "data-field": "verdict" }, "worse");
  if (c.lower === null || c.upper === null) return el("span", { "class": "sub", "data-field": "verdict" }, "too few evaluations");
  if (c.upper < 0) return el("span", { "data-field": "verdict" }, "better");
  return el("span", { "class": "sub", "data-field": "verdict" }, "no change shown");
}

function comparisonRow(c, scale) {
  const diff = c.difference === null ? "\u2013" : signedPoints(c.difference);
  const scores = c.score_difference === null || c.score_difference === undefined ? "\u2013"
    : statValue("score", c.score_baseline) + " \u2192 " + statValue("score", c.score_candidate) + " (" +
      signedMean(c.score_difference) + ")";
  return el("tr", { "data-comparison": c.metric, "data-baseline": c.baseline, "data-candidate": c.candidate,
                    "class": c.regressed ? "regressed" : "" },
    el("th", {}, c.metric),
    el("td", { "data-field": "versions" }, c.baseline + " \u2192 " + c.candidate, el("div", { "class": "sub" }, c.mode)),
    el("td", { "data-field": "rates" }, statValue("defect_rate", c.defect_rate_baseline) + " \u2192 " +
       statValue("defect_rate", c.defect_rate_candidate)),
    el("td", { "class": "rate" }, el("span", { "class": "value", "data-field": "difference" }, diff), " ",
       intervalSpan("defect_rate", c.lower, c.upper, "anytime-valid interval on candidate \u2212 baseline"),
       intervalPlot(c, scale)),
    el("td", { "data-field": "scores" }, scores),
    el("td", { "data-field": "n" }, c.n_baseline + " vs " + c.n_candidate),
    el("td", {}, verdict(c)));
}

function releaseTable(comparisons) {
  const widest = Math.max(0, ...comparisons.flatMap(c => [c.lower, c.upper, c.difference])
    .filter(v => v !== null && v !== undefined).map(Math.abs));
  const scale = DIFF_SCALES.find(s => widest <= s) ?? 1;
  const head = el("tr", {}, ...["metric", "baseline \u2192 candidate", "defect rate", "difference [interval]",
                                "mean score", "n", ""].map(h => el("th", {}, h)));
  return el("table", { "data-table": "releases" }, el("thead", {}, head),
            el("tbody", {}, ...comparisons.map(c => comparisonRow(c, scale))));
}

const RELEASE_PARTS = ["releases-head", "releases-note", "releases"];
function showReleaseParts(shown) { for (const id of RELEASE_PARTS) document.getElementById(id).hidden = !shown; }

// 404: this monitor has no release tracking, nothing to show. 503: off (the reason is shown where
// the view would be) or busy for a moment (the view and banner keep what they showed).
function releasesUnavailable(result) {
  if (result.status === 404) {
    showReleaseParts(false);
    incidents.releases = [];
    renderIncidents();
    return;
  }
  const why = result.body && typeof result.body.error === "string" ? result.body.error : "HTTP " + result.status;
  if (/\boff\b/.test(why)) {
    showReleaseParts(true);
    document.getElementById("releases").replaceChildren(el("p", { "class": "sub", "data-field": "off-note" }, why));
  }
}

function renderReleases(doc) {
  showReleaseParts(true);
  const services = doc.services || [];
  const parts = services.map(s => {
    const versions = (s.versions || []).slice().sort((a, b) => b.first_seen - a.first_seen);
    const section = el("div", { "class": "service", "data-service": s.service },
      el("h3", {}, s.service),
      el("div", { "class": "versions", "data-field": "versions" },
         ...versions.map((v, i) => versionChip(v, i === 0))));
    if ((s.comparisons || []).length) section.append(releaseTable(s.comparisons));
    else section.append(el("p", { "class": "sub", "data-field": "no-comparison" },
                           versions.length > 1 ? "no metric compared yet" : "one version so far: nothing to compare"));
    return section;
  });
  if (!parts.length) parts.push(el("p", { "class": "mute", "data-field": "empty" }, "no service version seen yet"));
  document.getElementById("releases").replaceChildren(...parts);
  incidents.releases = releaseRegressions(doc);
  renderIncidents();
}
