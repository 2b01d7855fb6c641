/* judgerl view: renders the JSON blocks of this page. Every text from a run (responses, judge outputs,
   names) is inserted with textContent / text nodes only, never parsed as HTML. Nothing is fetched. */
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const DATA = JSON.parse($("judgerl-data").textContent);
  const PAGE = 50;
  const chunks = {};
  const state = { v: 0, f: "all", s: "all", q: "", p: 0, open: {}, k: "all", step: null };

  function el(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === "class") e.className = v;
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
      else if (k === "data") for (const [dk, dv] of Object.entries(v)) e.dataset[dk] = String(dv);
      else if (k === "title") e.title = String(v);
      else e.setAttribute(k, String(v));
    }
    kids.forEach((c) => add(e, c));
    return e;
  }
  function add(e, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) c.forEach((x) => add(e, x));
    else if (c instanceof Node) e.appendChild(c);
    else e.appendChild(document.createTextNode(String(c)));
  }
  const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");
  const num = (x, d = 3) => (x === null || x === undefined ? "–" : Number(x).toFixed(d));
  const ciText = (ci) => (ci ? "[" + pct(ci[0]) + ", " + pct(ci[1]) + "]" : "–");
  function ciBar(x, ci, lo = 0, hi = 1) {
    const b = el("div", { class: "bar" });
    const pos = (v) => Math.max(0, Math.min(100, (100 * (v - lo)) / (hi - lo))) + "%";
    if (ci) { const c = el("div", { class: "ci" }); c.style.left = pos(ci[0]); c.style.width = "calc(" + pos(ci[1]) + " - " + pos(ci[0]) + ")"; b.appendChild(c); }
    if (x !== null && x !== undefined) { const p = el("div", { class: "pt" }); p.style.left = pos(x); b.appendChild(p); }
    return b;
  }
  const card = (k, v, sub) => el("div", { class: "card" }, el("div", { class: "k" }, k), el("div", { class: "v" }, v), sub ? el("div", { class: "k" }, sub) : null);
  const tag = (t, extra) => el("span", { class: "tag " + t }, extra || t.replace("_", " "));
  const table = (head, rows) => el("table", {}, el("tr", {}, head.map((h) => el("th", {}, h))),
    rows.map((r) => el("tr", {}, r.map((c) => (c instanceof Node && c.tagName === "TD" ? c : el("td", {}, c))))));
  const td = (v, cls) => el("td", { class: cls || "num" }, v);

  /* ---- long texts: the first FOLD characters, and a button that shows all (a 10 MB response would
     otherwise freeze the page for seconds). parts: [[text, make(text) -> Node or string]] ---- */
  const FOLD = 100000;
  function folded(cls, parts) {
    const pre = el("pre", { class: cls });
    const total = parts.reduce((n, [t]) => n + t.length, 0);
    const fill = (all) => {
      let budget = all ? Infinity : FOLD;
      pre.replaceChildren();
      for (const [text, make] of parts) {
        if (budget <= 0) break;
        let cut = Math.min(text.length, budget);
        if (cut < text.length && text.charCodeAt(cut - 1) >= 0xd800 && text.charCodeAt(cut - 1) < 0xdc00) cut -= 1;  // keep pairs whole
        budget -= cut;
        add(pre, make(cut < text.length ? text.slice(0, cut) : text));
      }
      if (!all && total > FOLD) pre.appendChild(el("button", { class: "more", on: { click: () => fill(true) } }, "… show all " + total + " characters"));
    };
    fill(false);
    return pre;
  }
  const str = (x) => (x === null || x === undefined ? "" : String(x));
  const textPre = (cls, text) => folded(cls, [[str(text), (t) => t]]);

  function detail(vi, i) {
    const view = DATA[vi];
    const c = Math.floor(i / view.chunk);
    const key = vi + "-" + c;
    if (!(key in chunks)) chunks[key] = JSON.parse($("judgerl-chunk-" + key).textContent);
    return chunks[key][i % view.chunk];
  }

  /* ---- state in the URL hash, so a filtered list can be linked and reloaded ---- */
  function readHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    state.v = Math.min(DATA.length - 1, Math.max(0, parseInt(h.get("v") || "0", 10) || 0));
    state.f = h.get("f") || "all"; state.s = h.get("s") || "all"; state.q = h.get("q") || "";
    state.p = parseInt(h.get("p") || "0", 10) || 0; state.k = h.get("k") || "all"; state.step = h.get("step");
    state.open = {};
    h.getAll("o").forEach((k) => { state.open[k] = true; });  // one "o" per opened pair: ids may hold ","
  }
  function writeHash() {
    const h = new URLSearchParams({ v: state.v, f: state.f, s: state.s, q: state.q, p: state.p, k: state.k });
    if (state.step !== null) h.set("step", state.step);
    const open = Object.keys(state.open).filter((k) => state.open[k]);
    open.forEach((k) => h.append("o", k));
    history.replaceState(null, "", "#" + h.toString());
  }
  function set(changes) { Object.assign(state, changes); writeHash(); render(); }

  function renderTabs() {
    const nav = $("tabs");
    nav.replaceChildren(...DATA.map((v, i) => el("button", { class: i === state.v ? "active" : "", data: { view: i },
      on: { click: () => set({ v: i, f: "all", s: "all", q: "", p: 0, k: "all", step: null, open: {} }) } },
      (v.type === "eval" ? "" : v.type + ": ") + v.name)));
  }

  /* ---- one judgment sample: decision, why invalid, and the coloured output ---- */
  function decisionLine(s) {
    const bits = [];
    if (s.valid) {
      if (s.label) bits.push("label " + s.label);
      if (s.verdict) bits.push("verdict " + s.verdict);
      if (s.scores) bits.push("scores " + s.scores.join(" / "));
      if (s.ranking) bits.push("ranking " + s.ranking.join(" > "));
    }
    const res = s.correct === true ? el("b", { class: "ok" }, "correct") : s.correct === false ? el("b", { class: "bad" }, "wrong") : null;
    return el("div", { class: "decision" },
      s.valid ? bits.join(" · ") : el("span", { class: "why" }, "invalid: " + (s.reason || "?") + (s.reason_text ? " — " + s.reason_text : "")),
      s.choice ? " → " + s.choice + " " : " ", res, s.forced ? tag("forced") : null,
      s.tool_calls ? tag("tool", s.tool_calls + " tool run" + (s.tool_calls > 1 ? "s" : "") + (s.tool_errors ? ", " + s.tool_errors + " failed" : "")) : null,
      el("span", { class: "muted" }, " " + (s.tokens ?? "?") + " tokens, finish " + s.finish + (s.final === false ? " (will be retried)" : "")),
      s.error ? el("div", { class: "why" }, "error: " + s.error) : null, s.note ? el("div", { class: "note" }, s.note) : null);
  }
  function output(pieces) {
    const pre = folded("text judgment", (pieces || []).map(([kind, text]) => [text, (t) => el("span", { class: "piece " + kind, title: kind }, t)]));
    if (!pieces || !pieces.length) pre.appendChild(el("span", { class: "muted" }, "(empty output)"));
    return pre;
  }
  const legend = () => el("div", { class: "legend muted" }, ["think", "code", "tool", "forced", "answer"].map((k) =>
    el("span", {}, el("span", { class: "piece " + k }, k === "tool" ? "interpreter output" : k === "answer" ? "final answer" : k))));

  function orderColumns(view, det, label) {
    return el("div", {},
      label ? el("h3", {}, label) : null,
      el("div", { class: "cols" }, view.orders.filter((o) => det.judgments[o]).map((o) => {
        const samples = det.judgments[o];
        const ci = samples[0].chosen_index;
        const where = view.kind === "pointwise" ? "the " + o + " response scored alone"
          : "position " + (ci === 0 ? "A" : "B") + " = chosen, " + (ci === 0 ? "B" : "A") + " = rejected";
        return el("div", { class: "box order", data: { order: o } }, el("h4", {}, "order " + o + " (" + where + ")"),
          samples.map((s) => el("div", { class: "sample" }, samples.length > 1 ? el("div", { class: "muted" }, "sample " + s.sample) : null,
            decisionLine(s), output(s.pieces))));
      })));
  }
  function pairTexts(det) {
    const out = [];
    if (det.warning) out.push(el("div", { class: "warning" }, det.warning));
    if (det.prompt !== undefined) {
      out.push(el("div", { class: "box" }, el("h4", {}, "prompt"), textPre("text prompt", det.prompt)));
      out.push(el("div", { class: "cols" },
        el("div", { class: "box" }, el("h4", {}, "chosen response"), textPre("text response chosen", det.chosen)),
        el("div", { class: "box" }, el("h4", {}, "rejected response"), textPre("text response rejected", det.rejected))));
    } else if (det.messages) {
      out.push(el("div", { class: "box" }, el("h4", {}, "judge prompt (saved messages)"),
        det.messages.map((m) => textPre("text prompt", str(m.role) + ":\n" + str(m.content)))));
    } else out.push(el("div", { class: "note" }, "pair texts unavailable"));
    return out;
  }

  function pairRow(key, head, body) {
    const isOpen = !!state.open[key];
    const row = el("div", { class: "pair" + (isOpen ? " open" : ""), data: { key } });
    row.appendChild(el("div", { class: "head", on: { click: () => { state.open[key] = !state.open[key]; writeHash(); render(); } } }, head));
    if (isOpen) row.appendChild(el("div", { class: "body" }, body()));
    return row;
  }
  function pager(n) {
    const pages = Math.max(1, Math.ceil(n / PAGE));
    const p = Math.min(state.p, pages - 1);
    return [p, el("div", { class: "pager" },
      el("button", { id: "prev", on: { click: () => set({ p: Math.max(0, p - 1) }) } }, "‹ prev"),
      el("span", { id: "page-info" }, "page " + (p + 1) + " of " + pages + " · " + n + " shown"),
      el("button", { id: "next", on: { click: () => set({ p: Math.min(pages - 1, p + 1) }) } }, "next ›"))];
  }
  function flagSelect(counts, labels) {
    return el("select", { id: "flag-filter", on: { change: (e) => set({ f: e.target.value, p: 0 }) } },
      labels.map(([v, t]) => { const o = el("option", { value: v }, t + (v in counts ? " (" + counts[v] + ")" : "")); o.selected = state.f === v; return o; }));
  }
  function sourceSelect(sources) {
    return el("select", { id: "source-filter", on: { change: (e) => set({ s: e.target.value, p: 0 }) } },
      ["all", ...sources].map((s) => { const o = el("option", { value: s }, s === "all" ? "all sources" : s || "(no source)"); o.selected = state.s === s; return o; }));
  }
  const FLAGS = [["all", "all pairs"], ["correct", "correct"], ["wrong", "wrong"], ["flipped", "flipped"], ["invalid", "invalid"],
    ["forced", "forced"], ["quoted", "quoted"], ["tool_errors", "tool errors"], ["gold_tie", "gold tie"]];

  /* ---- eval run ---- */
  function renderEval(view, vi) {
    const app = [];
    const cfg = view.config || {}, s = view.summary || {};
    app.push(el("h2", {}, view.name), el("div", { class: "muted" }, "judge " + (cfg.model || "?") + " · protocol " + ((cfg.protocol || {}).name || "?") +
      " (" + view.kind + ") · samples " + (cfg.samples ?? "?") + " · tools " + (cfg.tools || "none") + (view.info && view.info.data ? " · data " + view.info.data : "")));
    if (view.note) app.push(el("div", { class: "note" }, view.note));
    app.push(el("div", { class: "cards" }, card("accuracy", pct(s.accuracy), "95% CI " + ciText(s.accuracy_ci)),
      card("position-consistent accuracy", pct(s.position_consistent_accuracy), "95% CI " + ciText(s.position_consistent_accuracy_ci)),
      card("flip rate", pct(s.flip_rate), s.n_flip_pairs !== undefined ? "over " + s.n_flip_pairs + " pairs" : ""), card("tie rate", pct(s.tie_rate)),
      card("invalid (samples)", pct(s.invalid_rate)), card("pairs", s.n_pairs ?? view.index.length),
      s.forced_answer_rate !== undefined ? card("answer forced", pct(s.forced_answer_rate)) : null,
      s.tool_use_rate !== undefined ? card("tool use", pct(s.tool_use_rate), "errors " + pct(s.tool_error_rate)) : null,
      s.krippendorff_alpha !== undefined && s.krippendorff_alpha !== null ? card("Krippendorff α", num(s.krippendorff_alpha)) : null));
    const by = s.by_source || {};
    if (Object.keys(by).length) {
      app.push(el("h3", {}, "By source"), table(["source", "pairs", "accuracy", "95% CI", "", "pos.-consistent", "flip", "tie", "invalid"],
        Object.entries(by).map(([src, m]) => [el("td", {}, src || "(no source)"), td(m.n_pairs), td(pct(m.accuracy)), td(ciText(m.accuracy_ci)),
          el("td", {}, ciBar(m.accuracy, m.accuracy_ci)), td(pct(m.position_consistent_accuracy)), td(pct(m.flip_rate)), td(pct(m.tie_rate)), td(pct(m.invalid_rate))])));
    }
    if (s.invalid_reasons && Object.keys(s.invalid_reasons).length)
      app.push(el("h3", {}, "Invalid outputs"), table(["reason", "samples"], Object.entries(s.invalid_reasons).map(([k, n]) => [el("td", {}, k), td(n)])));
    const counts = { all: view.index.length };
    view.index.forEach((r) => r.flags.forEach((f) => { counts[f] = (counts[f] || 0) + 1; }));
    const q = state.q.toLowerCase();
    const rows = [];
    view.index.forEach((r, i) => { if ((state.f === "all" || r.flags.includes(state.f)) && (state.s === "all" || r.src === state.s) && (!q || r.id.toLowerCase().includes(q))) rows.push(i); });
    app.push(el("h3", {}, "Pairs"), el("div", { class: "filters" }, el("label", {}, "show ", flagSelect(counts, FLAGS)),
      el("label", {}, "source ", sourceSelect(view.sources)),
      el("label", {}, "pair id ", el("input", { type: "search", id: "id-filter", value: state.q, on: { change: (e) => set({ q: e.target.value, p: 0 }) } }))));
    const [p, pg] = pager(rows.length);
    app.push(pg, el("div", { id: "pairs" }, rows.slice(p * PAGE, (p + 1) * PAGE).map((i) => {
      const r = view.index[i];
      return pairRow(vi + ":" + r.id, [el("span", { class: "id" }, r.id), el("span", { class: "muted" }, r.src), r.flags.map((f) => tag(f)),
        el("span", { class: "muted" }, Object.entries(r.choices).map(([o, c]) => o + ": " + (c === null ? "invalid" : c)).join(" · "))],
      () => { const d = detail(vi, i); return [pairTexts(d), legend(), orderColumns(view, d)]; });
    })));
    return app;
  }

  /* ---- two eval runs: disagreements first ---- */
  function renderCompare(view) {
    const A = DATA[view.a], B = DATA[view.b];
    const app = [el("h2", {}, view.name), el("div", { class: "cards" }, card("pairs in both", view.n_both), card("disagree", view.n_disagree),
      card(A.name + " accuracy", pct(A.summary.accuracy)), card(B.name + " accuracy", pct(B.summary.accuracy)))];
    const rows = view.rows.filter((r) => state.f !== "disagree" || r.disagree);
    app.push(el("div", { class: "filters" }, el("label", {}, "show ", flagSelect({ all: view.rows.length, disagree: view.n_disagree }, [["all", "all pairs (disagreements first)"], ["disagree", "disagreements only"]]))));
    const [p, pg] = pager(rows.length);
    app.push(pg, el("div", { id: "pairs" }, rows.slice(p * PAGE, (p + 1) * PAGE).map((r) => pairRow("c:" + r.id,
      [el("span", { class: "id" }, r.id), el("span", { class: "muted" }, r.src), r.disagree ? tag("disagree") : null,
        el("span", {}, A.name + ": "), (r.fa || ["absent"]).map((f) => tag(f)), el("span", {}, " " + B.name + ": "), (r.fb || ["absent"]).map((f) => tag(f))],
      () => { const da = r.ia !== null ? detail(view.a, r.ia) : null, db = r.ib !== null ? detail(view.b, r.ib) : null;
        return [pairTexts(da || db), legend(), da ? orderColumns(A, da, A.name) : null, db ? orderColumns(B, db, B.name) : null]; }))));
    return app;
  }

  /* ---- arena leaderboard ---- */
  function renderArena(view) {
    const conf = Math.round(100 * (view.confidence || 0.95));
    const app = [el("h2", {}, view.name), el("div", { class: "muted" }, "judge " + ((view.config || {}).model || "?") + " · baseline " + view.baseline)];
    app.push(el("h3", {}, "Leaderboard"), table(["rank", "system", "win rate vs baseline", conf + "% CI", "", "Bradley-Terry (Elo)", conf + "% CI", "prompts", "dropped", "audit flags"],
      view.leaderboard.map((r) => { const inp = view.inputs[r.system] || {}; const fl = (inp.audit_counts || {}).any;
        return [td(r.rank), el("td", {}, r.system + (r.baseline ? " (baseline)" : "")), td(pct(r.win_rate)), td(ciText(r.win_rate_ci)),
          el("td", {}, ciBar(r.win_rate, r.win_rate_ci)), td(num(r.bt_elo, 0)), td(r.bt_elo_ci ? "[" + num(r.bt_elo_ci[0], 0) + ", " + num(r.bt_elo_ci[1], 0) + "]" : "–"),
          td(r.n_prompts ?? "–"), td(r.n_dropped ?? "–"), td(fl === undefined ? "–" : fl + "/" + inp.n_responses)]; })));
    app.push(el("h3", {}, "Game series"), table(["series", "pairs", "missing prompts", ""], Object.entries(view.matchups).map(([label, m]) => {
      const target = DATA.findIndex((v) => v.type === "eval" && v.name === view.name + ": " + label);
      return [el("td", {}, label), td(m.pairs), td(m.n_missing), el("td", {}, target >= 0 ? el("button", { on: { click: () => set({ v: target, f: "all", p: 0 }) } }, "open judgments") : "–")];
    })));
    return app;
  }

  /* ---- audit: flagged responses with their evidence ---- */
  function renderAudit(view) {
    const s = view.summary || {};
    const kinds = s.kinds || [];
    const app = [el("h2", {}, view.name), el("div", { class: "muted" }, view.n + " responses audited" + (view.info && view.info.input ? " from " + view.info.input : ""))];
    if (view.note) app.push(el("div", { class: "note" }, view.note));
    app.push(table(["kind", "flagged", "rate"], [...kinds, "any"].map((k) => [el("td", {}, k), td((s.counts || {})[k]), td(pct((s.rates || {})[k]))])));
    const steps = Object.entries(s.by_step || {});
    if (steps.length) app.push(el("h3", {}, "Rates per step"), table(["step", "n", ...kinds, "any"], steps.map(([st, v]) => [td(st), td(v.n), ...[...kinds, "any"].map((k) => td(pct(v.rates[k])))])));
    const items = view.items.filter((it) => state.k === "all" || it.flags.includes(state.k));
    app.push(el("h3", {}, "Flagged responses"), el("div", { class: "filters" }, el("label", {}, "kind ", el("select", { id: "kind-filter", on: { change: (e) => set({ k: e.target.value, p: 0 }) } },
      ["all", ...kinds].map((k) => { const o = el("option", { value: k }, k); o.selected = state.k === k; return o; })))));
    const [p, pg] = pager(items.length);
    app.push(pg, el("div", { id: "pairs" }, items.slice(p * PAGE, (p + 1) * PAGE).map((it) => pairRow("a:" + it.id,
      [el("span", { class: "id" }, it.id), it.step !== undefined && it.step !== null ? el("span", { class: "muted" }, "step " + it.step) : null, it.flags.map((f) => tag("flag", f))],
      () => [it.prompt ? el("div", { class: "box" }, el("h4", {}, "prompt"), textPre("text prompt", it.prompt)) : null,
        el("div", { class: "box" }, el("h4", {}, "response (evidence marked)"), it.pieces ? folded("text response",
          it.pieces.map(([text, ks]) => [text, (t) => (ks.length ? el("mark", { class: "ev", title: ks.join(", ") }, t) : t)])) : el("span", { class: "note" }, "response text unavailable")),
        table(["kind", "rule", "evidence"], it.evidence.map((e) => [el("td", {}, e.kind), el("td", {}, e.rule), el("td", {}, textPre("text", e.text))]))]))));
    return app;
  }

  /* ---- policy study: train judge vs gold, and the rollouts behind a point ---- */
  function svg(tagName, attrs, ...kids) {
    const e = document.createElementNS("http://www.w3.org/2000/svg", tagName);
    for (const [k, v] of Object.entries(attrs || {})) { if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn); else e.setAttribute(k, String(v)); }
    kids.forEach((c) => { if (c) e.appendChild(c instanceof Node ? c : document.createTextNode(String(c))); });
    return e;
  }
  function chart(view) {
    const W = 760, H = 300, L = 48, R = 12, T = 14, Bm = 34;
    const series = [["judge_score_mean", view.heldout, "#2b6cb0", "held-out: training judge"], ["gold_score_mean", view.heldout, "#dd6b20", "held-out: gold judge"],
      ["judge_score_mean", view.rollout, "#a0aec0", "rollouts: training judge"]];
    const pts = series.flatMap(([k, recs]) => recs.filter((r) => typeof r[k] === "number").map((r) => [r.step, r[k]]));
    const g = svg("svg", { class: "chart", width: W, height: H, viewBox: "0 0 " + W + " " + H });
    if (!pts.length) return el("div", { class: "muted" }, "no scored points yet");
    const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
    const x0 = Math.min(...xs), x1 = Math.max(...xs) === x0 ? x0 + 1 : Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys) === y0 ? y0 + 1 : Math.max(...ys);
    const X = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R), Y = (y) => H - Bm - ((y - y0) / (y1 - y0)) * (H - T - Bm);
    g.appendChild(svg("line", { x1: L, y1: H - Bm, x2: W - R, y2: H - Bm, stroke: "#999" }));
    g.appendChild(svg("line", { x1: L, y1: T, x2: L, y2: H - Bm, stroke: "#999" }));
    [y0, (y0 + y1) / 2, y1].forEach((v) => g.appendChild(svg("text", { x: 4, y: Y(v) + 4, "font-size": 11 }, num(v, 2))));
    [[x0, "start"], [x1, "end"]].forEach(([v, anchor]) => g.appendChild(svg("text", { x: X(v), y: H - Bm + 16, "font-size": 11, "text-anchor": anchor }, "step " + v)));  // inside the frame
    view.heldout.filter((r) => (r.hacking || {}).suspected).forEach((r) => g.appendChild(svg("line", { x1: X(r.step), x2: X(r.step), y1: T, y2: H - Bm, stroke: "#e53e3e", "stroke-opacity": 0.35, "stroke-width": 6 })));
    series.forEach(([k, recs, colour, label], si) => {
      const ps = recs.filter((r) => typeof r[k] === "number");
      if (!ps.length) return;
      g.appendChild(svg("polyline", { points: ps.map((r) => X(r.step) + "," + Y(r[k])).join(" "), fill: "none", stroke: colour, "stroke-width": 2 }));
      if (si < 2) ps.forEach((r) => g.appendChild(svg("circle", { cx: X(r.step), cy: Y(r[k]), r: String(state.step) === String(r.step) ? 6 : 4, fill: colour, class: "point", "data-step": r.step,
        on: { click: () => set({ step: String(r.step), p: 0 }) } }, svg("title", {}, label + " at step " + r.step + ": " + num(r[k], 3)))));
      g.appendChild(svg("text", { x: L + 10 + si * 230, y: H - 4, fill: colour, "font-size": 12 }, "— " + label));
    });
    return g;
  }
  function renderPolicy(view) {
    const app = [el("h2", {}, view.name), el("div", { class: "muted" }, "click a held-out point (or a row) to see the rollouts behind it; red bands: reward hacking suspected"), chart(view)];
    app.push(el("h3", {}, "Held-out evaluations"), table(["step", "n", "training judge", "gold judge", "judge valid", "gold valid", "audit (any)", "hacking suspected"],
      view.heldout.map((r) => [el("td", {}, el("button", { on: { click: () => set({ step: String(r.step), p: 0 }) } }, String(r.step))), td(r.n), td(num(r.judge_score_mean)), td(num(r.gold_score_mean)),
        td(pct(r.judge_valid_rate)), td(pct(r.gold_valid_rate)), td(pct((r.audit || {}).any)), td((r.hacking || {}).suspected ? "yes" : "no")])));
    if (state.step !== null && Object.hasOwn(view.steps, state.step)) {  // a hash "__proto__" is no step
      const rows = view.steps[state.step];
      app.push(el("h3", { id: "step-rollouts" }, "Held-out rollouts at step " + state.step + " (" + rows.length + ")"));
      const [p, pg] = pager(rows.length);
      app.push(pg, el("div", { id: "pairs" }, rows.slice(p * PAGE, (p + 1) * PAGE).map((r, i) => pairRow("s:" + state.step + ":" + (p * PAGE + i),
        [el("span", { class: "id" }, String(r.id)), el("span", {}, "gold " + num(r.gold_score, 2) + " · judge " + num(r.judge_score, 2)), (r.audit || []).map((f) => tag("flag", f))],
        () => [el("div", { class: "box" }, el("h4", {}, "prompt"), textPre("text prompt", r.prompt)),
          el("div", { class: "box" }, el("h4", {}, "response"), textPre("text response", r.response))]))));
    }
    return app;
  }

  function render() {
    renderTabs();
    const view = DATA[state.v];
    const fn = { eval: renderEval, compare: renderCompare, arena: renderArena, audit: renderAudit, policy: renderPolicy }[view.type];
    $("app").replaceChildren(...[].concat(fn(view, state.v)).filter(Boolean));
    window.judgerlRendered = (window.judgerlRendered || 0) + 1;
  }
  readHash();
  render();
})();
