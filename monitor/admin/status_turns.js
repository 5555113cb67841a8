// The worst recent turns: one card per turn with where it ran (route, model, version), all its
// failing metrics, the judge's reasons or the local metrics' evidence, the retrieved documents;
// filterable by metric.

function copyButton(text) {
  const button = el("button", { "type": "button", "title": "copy the trace id" }, "copy");
  button.addEventListener("click", async () => {
    try { await navigator.clipboard.writeText(text); button.textContent = "copied"; }
    catch (e) { button.textContent = "select and copy"; }
  });
  return button;
}

function scoreText(s) {
  if (s.value === null) return s.error_type ? s.outcome + " (" + s.error_type + ")" : s.outcome;
  const text = fmtNum(s.value) + " on " + fmtScale(s.scale);
  return s.label ? text + " \u00b7 " + s.label : text;
}

// Local metrics give their evidence as the reason (the answer terms the documents lack, the
// offending sentence); a score stored without one (older results) says which rule made it a defect.
function why(s) {
  if (s.reason) return { text: s.reason, kind: "reason" };
  const info = state.catalogue[s.metric];
  if (info && s.value !== null) return { text: "by its rule: " + info.defect_rule, kind: "rule" };
  return { text: "\u2013", kind: "none" };
}

function scoreItem(s) {
  const because = why(s);
  return el("li", { "data-score": s.metric, "class": s.outcome === "defect" ? "defect" : "" },
    el("strong", {}, s.metric), " ",
    el("span", { "class": s.outcome === "defect" ? "error" : "sub", "data-field": "outcome" }, s.outcome), " ",
    el("span", { "data-field": "value" }, scoreText(s)), " ",
    el("span", { "class": "sub", "data-field": "reason", "data-kind": because.kind }, because.text));
}

function documentItem(d) {
  const head = [d.title || d.id || "document", d.score === null ? "" : "score " + fmtNum(d.score)]
    .filter(Boolean).join(" \u00b7 ");
  return el("li", { "data-field": "document" }, el("div", { "class": "sub", "data-field": "document-head" }, head),
            el("div", { "class": "doc", "data-field": "document-content" }, d.content ?? "(no text in the spans)"));
}

// Where the turn ran: route, model and version first (what an incident is narrowed down by), then
// any other allow-listed label.
const LABEL_ORDER = ["route", "model", "version", "service.version"];
function labelTags(labels) {
  const names = Object.keys(labels || {}).sort((a, b) => {
    const ia = LABEL_ORDER.indexOf(a), ib = LABEL_ORDER.indexOf(b);
    return (ia < 0 ? LABEL_ORDER.length : ia) - (ib < 0 ? LABEL_ORDER.length : ib) || a.localeCompare(b);
  });
  if (!names.length) return null;
  return el("span", { "class": "labels", "data-field": "labels" }, ...names.map(name =>
    el("span", { "class": "tag", "data-label": name }, name + " ", el("strong", {}, labels[name]))));
}

function turnCard(item) {
  const defects = item.scores.filter(s => s.outcome === "defect");
  const others = item.scores.filter(s => s.outcome !== "defect");
  const card = el("article", { "data-field": "turn", "data-id": item.result_id },
    el("div", { "class": "head" },
      el("span", { "data-field": "failing", "class": "error" },
         item.failing.length ? item.failing.join(", ") : "no defect"),
      el("span", { "class": "sub", "data-field": "when", "data-ts": item.timestamp, "title": ago(item.timestamp) },
         fmtDateTime(item.timestamp)),
      el("span", {}, "trace ", el("code", { "data-field": "trace_id" }, item.trace_id), " ", copyButton(item.trace_id)),
      el("span", { "class": "sub" }, item.service + " \u00b7 conversation ",
         el("span", { "data-field": "conversation_id" }, item.conversation_id)),
      labelTags(item.labels)),
    el("dl", {},
      el("dt", {}, "question"), el("dd", { "data-field": "question" }, item.question),
      el("dt", {}, "answer"), el("dd", { "data-field": "answer" }, item.answer)),
    el("ul", { "class": "scores", "data-field": "scores" }, ...defects.map(scoreItem)));
  if (others.length) {
    card.append(el("details", {}, el("summary", {}, others.length + " other scores"),
                   el("ul", { "class": "scores" }, ...others.map(scoreItem))));
  }
  const docs = el("details", { "data-field": "documents" },
    el("summary", {}, item.documents.length ? item.documents.length + " retrieved documents" : "no retrieved documents"));
  if (item.documents.length) docs.append(el("ol", {}, ...item.documents.map(documentItem)));
  card.append(docs);
  return card;
}

function renderTurns(doc) {
  const cards = doc.items.map(turnCard);
  if (!cards.length) {
    const what = state.metric ? "no scored " + state.metric + " evaluation" : "no scored evaluation";
    cards.push(el("p", { "class": "mute", "data-field": "empty" }, what + " in this period"));
  }
  document.getElementById("worst").replaceChildren(...cards);
}

function renderFilter() {
  const select = el("select", { "id": "metric-filter", "data-field": "filter" },
                    el("option", { "value": "" }, "all metrics"),
                    ...state.metrics.map(m => el("option", m === state.metric ? { "value": m, "selected": "" }
                                                                             : { "value": m }, m)));
  select.value = state.metrics.includes(state.metric) ? state.metric : "";
  select.addEventListener("change", () => setMetric(select.value));
  document.getElementById("filter").replaceChildren(el("label", {}, "metric ", select));
}

function turnsPath() {
  return "/api/turns?limit=20" + (state.metric ? "&metric=" + encodeURIComponent(state.metric) : "");
}

function setMetric(metric) {
  state.metric = metric;
  const params = new URLSearchParams(location.hash.slice(1));
  if (metric) params.set("metric", metric); else params.delete("metric");
  history.replaceState(null, "", location.pathname + location.search + (params.toString() ? "#" + params : ""));
  const select = document.getElementById("metric-filter");
  if (select) select.value = metric;
  load(turnsPath(), renderTurns, "worst-message");
}
