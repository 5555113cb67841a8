// The review view (/api/review, POST /api/feedback): judged turns drawn for people to check, each
// with the judge's verdict and reason, and buttons to agree, disagree or give a value. Shown only
// when the monitor has a review token (the queue says "writable"). The reviewer types that token
// and a reviewer id here; both stay in this tab's memory (never in storage, the URL or the page),
// and the token goes only in the Authorization header of the verdicts. The queue is loaded when
// the page opens and on demand, not on the page's refresh, so cards do not move under the cursor.

const review = { token: null, reviewer: "", loaded: false };
const REVIEW_PARTS = ["review-head", "review-note", "review-form", "review"];

function showReview(on) { for (const id of REVIEW_PARTS) document.getElementById(id).hidden = !on; }

function judgeVerdictText(j) {
  const value = j.value === null ? "" : " " + fmtNum(j.value) + " on " + fmtScale(j.scale);
  return j.verdict + value + (j.label ? " \u00b7 " + j.label : "");
}

function opposite(verdict) { return verdict === "defect" ? "pass" : "defect"; }

async function postVerdict(body) {
  const headers = { "Accept": "application/json", "Content-Type": "application/json",
                    "Authorization": "Bearer " + review.token };
  const response = await fetch("/api/feedback", { method: "POST", headers, body: JSON.stringify(body),
                                                  cache: "no-store", credentials: "omit" });
  let doc = null;
  try { doc = await response.json(); } catch (e) { doc = null; }
  return { status: response.status, body: doc };
}

function sentText(kind, doc) {
  const join = doc && doc.join ? doc.join : {};
  const state = join.state === "pending" ? " (the judge's result is not stored yet: counted when it is)" : "";
  return "sent: " + kind + state;
}

async function sendVerdict(item, card, kind) {
  const message = document.getElementById("review-message");
  const result = card.querySelector("[data-field=review-result]");
  if (!review.token || !review.reviewer) {
    message.textContent = "type the review token and your reviewer id above first";
    return;
  }
  const body = { trace_id: item.trace_id, metric: item.metric, reviewer: review.reviewer };
  if (kind === "agree") body.verdict = item.judge.verdict;
  else if (kind === "disagree") body.verdict = opposite(item.judge.verdict);
  else {
    const value = Number(card.querySelector("[data-field=value-input]").value);
    const [low, high] = item.judge.scale;
    if (!Number.isFinite(value) || value < low || value > high) {
      result.textContent = "a value from " + fmtScale(item.judge.scale);
      return;
    }
    body.value = value;
  }
  const buttons = card.querySelectorAll("button");
  for (const b of buttons) b.disabled = true;
  let answer;
  try {
    answer = await postVerdict(body);
  } catch (e) {
    answer = { status: 0, body: { error: "cannot reach the monitor (" + e.message + ")" } };
  }
  if (answer.status === 202) {
    card.dataset.sent = kind;
    card.classList.add("sent");
    result.textContent = sentText(kind, answer.body);
    message.textContent = "";
    return;
  }
  for (const b of buttons) b.disabled = false;
  const why = answer.body && typeof answer.body.error === "string" ? answer.body.error : "no details";
  result.textContent = "not sent";
  message.textContent = "HTTP " + answer.status + ": " + why;
}

function reviewCard(item) {
  const j = item.judge;
  const card = el("article", { "data-field": "review-item", "data-trace": item.trace_id, "data-metric": item.metric,
                               "data-stratum": item.stratum },
    el("div", { "class": "head" },
       el("strong", {}, item.metric),
       el("span", { "data-field": "judge-verdict", "class": j.verdict === "defect" ? "error" : "" },
          "judge: " + judgeVerdictText(j)),
       el("span", { "class": "sub", "data-field": "judge-model" },
          (j.judge_model || "judge") + (j.prompt_version ? " \u00b7 prompt " + j.prompt_version : "")),
       el("span", { "class": "sub", "data-field": "probability" },
          "drawn with p = " + fmtNum(item.inclusion_probability)),
       el("span", { "class": "sub", "data-field": "when", "data-ts": item.timestamp }, fmtDateTime(item.timestamp))),
    el("dl", {},
       el("dt", {}, "question"), el("dd", { "data-field": "question" }, item.question ?? "\u2013"),
       el("dt", {}, "answer"), el("dd", { "data-field": "answer" }, item.answer ?? "\u2013"),
       el("dt", {}, "judge's reason"), el("dd", { "data-field": "reason" }, j.reason ?? "\u2013"),
       el("dt", {}, "trace"), el("dd", {}, el("code", { "data-field": "trace" }, item.trace_id))));
  const value = el("input", { "type": "number", "step": "any", "min": j.scale[0], "max": j.scale[1],
                              "data-field": "value-input", "aria-label": "your value for " + item.metric });
  const actions = el("div", { "class": "review-actions" },
    el("button", { "type": "button", "data-action": "agree" }, "agree (" + j.verdict + ")"),
    el("button", { "type": "button", "data-action": "disagree" }, "disagree (" + opposite(j.verdict) + ")"),
    value,
    el("button", { "type": "button", "data-action": "value" }, "send value"),
    el("span", { "class": "sub", "data-field": "review-result" }));
  for (const button of actions.querySelectorAll("button")) {
    button.addEventListener("click", () => sendVerdict(item, card, button.dataset.action));
  }
  card.append(actions);
  return card;
}

function renderReview(doc) {
  if (!doc.writable) {
    showReview(false);
    return;
  }
  showReview(true);
  const waiting = (doc.strata || []).reduce((n, s) => n + (s.waiting || 0), 0);
  document.getElementById("review-note").textContent =
    waiting + " judged turns waiting, drawn per metric and judge verdict (defects more often than passes; " +
    "each verdict is weighted back by its p) \u00b7 your verdict goes with the review token typed here, " +
    "kept in this tab only";
  const cards = (doc.items || []).map(reviewCard);
  if (!cards.length) cards.push(el("p", { "class": "mute", "data-field": "empty" }, "nothing waiting for review"));
  document.getElementById("review").replaceChildren(...cards);
}

// 404 or 503 (no store, or an older monitor): no review view, and no error on the page.
function reviewUnavailable() { showReview(false); }

function loadReview() {
  return load("/api/review?limit=20", renderReview, "review-message", { unavailable: reviewUnavailable });
}

document.getElementById("review-form").addEventListener("submit", event => {
  event.preventDefault();
  review.token = document.getElementById("review-token").value.trim() || null;
  review.reviewer = document.getElementById("reviewer").value.trim();
  document.getElementById("review-token").value = "";
  document.getElementById("review-message").textContent = review.token ? "" : "no review token typed";
});
document.getElementById("review-reload").addEventListener("click", () => {
  shown["review-message"] = null;  // redraw even if unchanged: sent cards leave
  loadReview();
});
loadReview();
