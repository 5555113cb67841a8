// Trend charts: defect rate per step with its interval band, on a time axis, against a reference
// level, all metrics on ONE y-scale. A per-chart scale stretched 2 points of f1 noise to the same
// height as a 60-point regression; a shared scale lets noise look like noise.

const CHART = { W: 300, H: 84, left: 34, right: 4, top: 6, bottom: 18 };
const NICE_TOPS = [0.05, 0.1, 0.2, 0.25, 0.5, 0.75, 1];
const TICK_STEPS = [10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
const HOUR_MINUTE = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
const HOUR_MINUTE_SECOND = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit",
                                                                hourCycle: "h23" });

// Where the axes start: the first step any metric has data in, so minutes after start the charts
// spread what there is instead of drawing it in the last sliver of an empty window.
function firstData(trends) {
  const starts = trends.map(points => points.find(p => p.evaluations > 0)).filter(Boolean).map(p => p.start);
  return starts.length ? Math.min(...starts) : null;
}

// The scale's top: the highest defect rate any metric's trend reached, rounded up to a nice value.
// Interval bounds are left out: a sparse metric's upper bound near 100% would flatten every line.
function sharedTop(trends) {
  const rates = trends.flatMap(points => points.map(p => p.defect_rate)).filter(r => r !== null);
  const high = Math.max(0, ...rates);
  return NICE_TOPS.find(t => high <= t) ?? 1;
}

function stepOf(points, seconds) {
  if (points.length > 1) return points[1].start - points[0].start;
  return seconds / 24;
}

// At most four round clock times; none hard against the left edge, where the rate labels are.
function timeTicks(t0, t1) {
  const step = TICK_STEPS.find(s => (t1 - t0) / s <= 4) ?? TICK_STEPS[TICK_STEPS.length - 1];
  const format = step < 60 ? HOUR_MINUTE_SECOND : HOUR_MINUTE;
  const ticks = [];
  for (let t = Math.ceil(t0 / step) * step; t <= t1 && ticks.length < 6; t += step) {
    if (t - t0 >= 0.08 * (t1 - t0)) ticks.push([t, format.format(new Date(t * 1000))]);
  }
  return ticks;
}

function svgText(attrs, text) {
  const node = svgEl("text", attrs);
  node.textContent = text;
  return node;
}

// all: oldest first ({start, evaluations, defect_rate, lower, upper}), drawn from ``from`` (unix s,
// the steps before it hold no data); reference: a rate or null; change: {start} or null. Every
// scored point is drawn (a polyline per run, a dot for a lone point).
function trendChart(all, { top, seconds, reference, change, from }) {
  const { W, H, left, right, top: pad, bottom } = CHART;
  const seen = all.filter(p => p.defect_rate !== null);
  const svg = svgEl("svg", { "class": "trend", "width": W, "height": H, "viewBox": `0 0 ${W} ${H}`,
                             "data-field": "trend", "data-points": seen.length, "data-top": top, "role": "img" });
  const title = svgEl("title", {});
  title.textContent = seen.length ? "defect rate per step with its 95% interval; the scale 0\u2013" + pct(top) +
                                    " is shared by every metric" : "no data";
  svg.append(title);
  const step = stepOf(all, seconds);
  const points = typeof from === "number" ? all.filter(p => p.start >= from) : all;
  if (!points.length) return svg;
  const t0 = points[0].start, t1 = points[points.length - 1].start + step;
  const x = t => left + ((t - t0) / Math.max(t1 - t0, 1)) * (W - left - right);
  const y = r => H - bottom - (Math.min(r, top) / top) * (H - bottom - pad);
  // Axes: 0, the top and half of it on the left; clock times along the bottom.
  for (const level of [0, top / 2, top]) {
    svg.append(svgEl("line", { "class": level ? "grid" : "axis", "x1": left, "y1": y(level), "x2": W - right, "y2": y(level) }),
               svgText({ "class": "tick", "x": left - 3, "y": y(level) + 3, "text-anchor": "end" }, pct(level).replace(".0%", "%")));
  }
  for (const [t, label] of timeTicks(t0, t1)) {
    const anchor = x(t) > W - right - 16 ? "end" : "middle";
    svg.append(svgEl("line", { "class": "axis", "x1": x(t), "y1": H - bottom, "x2": x(t), "y2": H - bottom + 3 }),
               svgText({ "class": "tick", "data-field": "time-tick", "x": x(t), "y": H - 4, "text-anchor": anchor },
                       label));
  }
  const mid = p => x(p.start + step / 2);
  const banded = points.filter(p => p.lower !== null && p.upper !== null);
  if (banded.length > 1) {
    const upper = banded.map(p => mid(p).toFixed(1) + "," + y(p.upper).toFixed(1));
    const lower = banded.slice().reverse().map(p => mid(p).toFixed(1) + "," + y(p.lower).toFixed(1));
    svg.append(svgEl("polygon", { "class": "band", "data-field": "band", "points": upper.concat(lower).join(" ") }));
  }
  if (reference !== null && reference !== undefined) {
    svg.append(svgEl("line", { "class": "reference", "data-field": "reference", "data-rate": reference,
                               "x1": left, "y1": y(reference), "x2": W - right, "y2": y(reference) }));
  }
  let run = [];
  const flush = () => {
    if (run.length === 1) svg.append(svgEl("circle", { "cx": run[0][0], "cy": run[0][1], "r": 1.8 }));
    if (run.length > 1) svg.append(svgEl("polyline", { "points": run.map(p => p.join(",")).join(" ") }));
    run = [];
  };
  points.forEach(p => { if (p.defect_rate === null) flush(); else run.push([mid(p).toFixed(1), y(p.defect_rate).toFixed(1)]); });
  flush();
  if (change) {
    const cx = x(change.start).toFixed(1);
    svg.append(svgEl("line", { "class": "change", "data-field": "change", "x1": cx, "y1": pad, "x2": cx, "y2": H - bottom }));
  }
  return svg;
}
