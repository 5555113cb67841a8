// Judge vs people: per metric, the share of people's verdicts on the judge's side of the defect rule,
// with its 95% interval and the number of verdicts, from /api/agreement. A block under the metrics
// table, on its own refresh: that endpoint is not one of the four-at-a-time API routes, so it
// does not take a turn from the page's other requests. A monitor without it (404) shows nothing.

const agreementState = { key: null };

function agreementBlock() {
  let block = document.getElementById("agreement");
  if (block) return block;
  block = el("div", { "id": "agreement", "data-section": "agreement", "hidden": "" },
             el("h3", {}, "Judge vs people"),
             el("p", { "class": "sub" }, "agreement = people's verdicts on the same side of the metric's defect rule " +
                "as the judge's, weighted back to all judged turns by the review queue's sampling \u00b7 [95% interval]" +
                " \u00b7 n = verdicts joined with a judge score"),
             el("p", { "class": "error", "id": "agreement-message", "data-field": "message" }),
             el("div", { "class": "scroll", "id": "agreement-table" }));
  const rates = document.getElementById("rates");
  rates.parentNode.insertBefore(block, rates.nextSibling);
  return block;
}

function agreementFigure(f) {
  const td = el("td", { "class": "rate" });
  td.append(el("span", { "class": "value" + (f.rate === null ? " nodata" : ""), "data-field": "agreement-rate" },
               fmtRate(f.rate)));
  if (f.lower !== null && f.upper !== null) {
    td.append(" ", el("span", { "class": "sub", "title": "95% Wilson interval" }, "[",
                      el("span", { "data-field": "agreement-lower" }, pct(f.lower)), ", ",
                      el("span", { "data-field": "agreement-upper" }, pct(f.upper)), "]"));
  }
  return td;
}

function renderAgreement(doc) {
  const block = agreementBlock();
  const table = document.getElementById("agreement-table");
  const metrics = Object.keys(doc.metrics || {}).sort();
  block.hidden = false;
  if (!metrics.length) {
    table.replaceChildren(el("p", { "class": "sub", "data-field": "agreement-empty" },
                             "no person's verdict joined with a judge score yet"));
    return;
  }
  const rows = metrics.map(metric => {
    const m = doc.metrics[metric];
    const models = Object.entries(m.judge_models || {}).map(([model, f]) =>
      el("div", { "class": "sub", "data-judge-model": model }, model + ": " + fmtRate(f.rate) + " of " + f.n));
    return el("tr", { "data-metric": metric },
              el("th", { "scope": "row" }, metric), agreementFigure(m),
              el("td", { "data-field": "agreement-n" }, fmtCount(m.n)),
              el("td", { "data-field": "agreement-agree" }, fmtCount(m.agree)),
              el("td", { "data-field": "agreement-models" }, ...models));
  });
  table.replaceChildren(el("table", {},
    el("thead", {}, el("tr", {}, el("th", {}, "metric"), el("th", {}, "agreement"), el("th", {}, "n"),
                       el("th", {}, "agree"), el("th", {}, "by judge model"))),
    el("tbody", {}, ...rows)));
}

async function refreshAgreement() {
  let result;
  try {
    result = await getJSON("/api/agreement");
  } catch (e) {
    result = null;
  }
  if (result && result.status === 404) {
    const block = document.getElementById("agreement");
    if (block) block.hidden = true;
  } else if (result && result.status === 200 && result.body) {
    const key = JSON.stringify({ ...result.body, at: 0 });
    if (agreementState.key !== key) renderAgreement(result.body);
    agreementState.key = key;
    document.getElementById("agreement-message").textContent = "";
  } else if (document.getElementById("agreement")) {
    document.getElementById("agreement-message").textContent =
      result ? problem(result) : "cannot reach the monitor; the agreement below is from before";
  }
  setTimeout(refreshAgreement, REFRESH_MS);
}

// After the whole script has run (status.js reads the token first).
setTimeout(refreshAgreement, 0);
