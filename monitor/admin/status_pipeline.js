// The pipeline strip: what came in, what became turns, what was sampled, evaluated and judged,
// in the last minutes and since start; then what is wrong, in words, with the fix.

function sum(values) { return Object.values(values || {}).reduce((a, b) => a + b, 0); }
function breakdown(values, skip) {
  return Object.entries(values || {}).filter(([k, v]) => v > 0 && !(skip || []).includes(k))
    .sort((a, b) => b[1] - a[1]).map(([k, v]) => k + " " + fmtCount(v)).join(", ");
}

function stageCard(name, title, stage, extra) {
  const recent = sum(stage.recent), total = sum(stage.total);
  const card = el("div", { "class": "stage", "data-stage": name },
    el("div", { "class": "sub" }, title),
    el("div", { "class": "value", "data-field": "recent" }, fmtCount(recent)),
    el("div", { "class": "sub" }, "total ", el("span", { "data-field": "total" }, fmtCount(total))));
  const parts = breakdown(stage.total);
  if (parts) card.append(el("div", { "class": "sub", "data-field": "by" }, parts));
  for (const line of extra || []) if (line) card.append(line);
  return card;
}

function noTurnLine(stages) {
  const text = breakdown(stages.traces_without_turn.total);
  return text ? el("div", { "class": "sub warn", "data-field": "without-turn" }, "without a turn: " + text) : null;
}

function samplingCard(doc) {
  const s = doc.stages.sampling;
  const card = el("div", { "class": "stage", "data-stage": "sampling" },
    el("div", { "class": "sub" }, "conversations sampled"),
    el("div", { "class": "value" }, el("span", { "data-field": "recent" }, fmtCount(s.recent.sampled || 0)),
       el("span", { "class": "sub" }, " of " + fmtCount(sum(s.recent)))),
    el("div", { "class": "sub" }, "total ", el("span", { "data-field": "total" }, fmtCount(s.total.sampled || 0)),
       " of " + fmtCount(sum(s.total))));
  const rest = breakdown(s.total, ["sampled"]);
  if (rest) card.append(el("div", { "class": "sub", "data-field": "by" }, rest));
  if (doc.setup.sampling) card.append(el("div", { "class": "sub", "data-field": "policy" }, doc.setup.sampling));
  return card;
}

function judgeCard(doc) {
  const j = doc.stages.judge_requests;
  const circuit = doc.judge.circuit;
  const card = el("div", { "class": "stage", "data-stage": "judge" },
    el("div", { "class": "sub" }, "judge"),
    el("div", { "class": "value" + (doc.judge.enabled ? "" : " nodata"), "data-field": "judge" },
       doc.judge.enabled ? "on" : "off"),
    el("div", { "class": "sub" + (circuit === "closed" ? "" : " error"), "data-field": "circuit" },
       "circuit " + circuit.replace("_", "-")));
  if (doc.setup.judge) card.append(el("div", { "class": "sub", "data-field": "model" }, doc.setup.judge));
  const calls = breakdown(j.total);
  if (calls) card.append(el("div", { "class": "sub", "data-field": "by" }, "calls: " + calls));
  return card;
}

function queueCard(doc) {
  const card = el("div", { "class": "stage", "data-stage": "queues" }, el("div", { "class": "sub" }, "queues"));
  for (const [name, q] of Object.entries(doc.queues)) {
    card.append(el("div", { "class": "sub", "data-queue": name }, name + " " + fmtCount(q.depth) + "/" +
                   fmtCount(q.capacity)));
  }
  const dropped = breakdown(doc.stages.queue_dropped.total);
  card.append(el("div", { "class": "sub" + (dropped ? " error" : ""), "data-field": "dropped" },
                 dropped ? "dropped: " + dropped : "nothing dropped"));
  return card;
}

function renderPipeline(doc) {
  const st = doc.stages;
  const recent = doc.recent_since <= doc.started_at ? "since start (" + span(doc.generated_at - doc.started_at) + ")"
    : "last " + span(doc.generated_at - doc.recent_since);
  const spans = stageCard("spans_received", "spans in", st.spans_received, [
    sum(st.logs_received.total) ? el("div", { "class": "sub" }, "log records " + fmtCount(sum(st.logs_received.total))) : null,
    sum(st.requests_rejected.total) ? el("div", { "class": "sub error", "data-field": "refused" },
                                         "refused: " + breakdown(st.requests_rejected.total)) : null,
    sum(st.spans_dropped.total) ? el("div", { "class": "sub error" }, "dropped: " + breakdown(st.spans_dropped.total)) : null]);
  const turns = stageCard("turns_assembled", "turns built", st.turns_assembled, [noTurnLine(st)]);
  const evaluated = stageCard("evaluations", "evaluations", st.evaluations);
  const strip = el("div", { "class": "strip" }, spans, turns, samplingCard(doc), evaluated, judgeCard(doc),
                   queueCard(doc));
  const findings = el("ul", { "class": "findings", "data-field": "findings" },
    ...doc.findings.map(f => el("li", { "class": f.level, "data-finding": f.code }, f.text)));
  const setup = el("details", { "data-field": "setup" }, el("summary", {}, "configuration"),
    el("dl", {}, ...Object.entries(doc.setup).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])));
  document.getElementById("pipeline").replaceChildren(
    el("p", { "class": "sub", "data-field": "recent-span" }, "big numbers: " + recent + "; since start below"),
    strip, findings, setup);
}
