/* lit explorer: the page's behaviour. Talks to the JSON API of lit serve only. */
(function () {
  "use strict";

  var DEFAULT_RULES = { sentence: "p,pa,i,n", pair: "f;p+i,m;o,o;n" };
  var state = {
    mode: "sentence",
    info: null,
    registry: [],       // rules from /api/rules
    labels: null,       // /api/labels
    parses: [],         // /api/parse records, one per sentence
    chosen: [],         // the reading each sentence's chains run on
    transformed: false, // whether results are on the screen (then a reading toggle re-runs)
    edited: { sentence: false, pair: false },
    busy: 0
  };

  // -- small helpers -----------------------------------------------------------

  function $(id) { return document.getElementById(id); }

  function h(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) { return; }
      if (k === "class") { e.className = v; } else if (k === "text") { e.textContent = v; } else { e.setAttribute(k, v === true ? "" : v); }
    });
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) { return; }
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }

  function clear(e) { while (e.firstChild) { e.removeChild(e.firstChild); } return e; }

  function show(e, on) { e.hidden = !on; }

  function message(text, kind) {
    var m = $("message");
    m.textContent = text || "";
    m.className = "message " + (kind || "error");
    show(m, !!text);
  }

  function api(method, path, body) {
    var opts = { method: method, headers: { "Accept": "application/json" } };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    return fetch(path, opts).then(function (resp) {
      return resp.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        if (!resp.ok) {
          var why = data && data.error ? data.error : (text || resp.statusText);
          throw new Error(resp.status + ": " + why);
        }
        return data;
      });
    });
  }

  function busy(on, text) {
    state.busy += on ? 1 : -1;
    document.body.setAttribute("data-busy", String(state.busy > 0));
    $("parse-button").disabled = state.busy > 0;
    $("transform-button").disabled = state.busy > 0;
    if (on && text) { message(text, "busy"); }
  }

  function fmtScore(s) { return s === null || s === undefined ? "\u2014" : Number(s).toFixed(2); }

  // -- the rule registry ---------------------------------------------------------

  function ruleFor(token) {
    var name = token.trim();
    var found = null;
    state.registry.forEach(function (r) {
      if (!found && (r.name === name || r.aliases.indexOf(name) >= 0)) { found = r; }
    });
    return found;
  }

  function ruleChip(token) {
    if (token === "o") { return h("span", { "class": "chip" }, ["o ", h("span", { "class": "ph", text: "untouched" })]); }
    var r = ruleFor(token);
    if (!r) { return h("span", { "class": "chip unknown", text: token + ": unknown rule" }); }
    var chip = h("span", { "class": "chip" + (r.unsupported ? " unsupported" : ""), title: r.description + (r.unsupported ? "\n" + r.unsupported : "") },
      [r.name + " ", h("span", { "class": "ph", text: r.phenomenon })]);
    return chip;
  }

  function renderPreview() {
    var box = clear($("chain-preview"));
    $("rules").value.split(",").forEach(function (spec) {
      spec = spec.trim();
      if (!spec) { return; }
      var parts = [h("span", { "class": "name", text: spec }), "\u2192"];
      spec.split(/([+;])/).forEach(function (tok) {
        tok = tok.trim();
        if (!tok) { return; }
        if (tok === "+" || tok === ";") { parts.push(h("span", { "class": "muted", text: tok === ";" ? " ; " : "+" })); return; }
        parts.push(ruleChip(tok));
      });
      box.appendChild(h("span", { "class": "chain" }, parts));
    });
  }

  function renderRegistry() {
    var table = clear($("rule-table"));
    table.appendChild(h("tr", {}, ["name", "aliases", "phenomenon", "description", "this grammar"].map(function (t) { return h("th", { text: t }); })));
    state.registry.forEach(function (r) {
      var tr = h("tr", { "class": "rule" + (r.unsupported ? " unsupported" : ""), "data-rule": r.name }, [
        h("td", { "class": "mono", text: r.name }),
        h("td", { "class": "mono", text: r.aliases.join(", ") }),
        h("td", { text: r.phenomenon }),
        h("td", { text: r.description }),
        h("td", { text: r.unsupported || "supported" })
      ]);
      tr.addEventListener("click", function () {
        var token = r.aliases.length ? r.aliases[0] : r.name;
        var input = $("rules");
        var v = input.value.trim();
        input.value = v ? v + "," + token : token;
        state.edited[state.mode] = true;
        renderPreview();
      });
      table.appendChild(tr);
    });
  }

  function renderLabelRows() {
    var t = state.labels;
    if (!t) { return; }
    var gold = clear($("gold"));
    t.labels.forEach(function (l) { gold.appendChild(h("option", { value: l, text: l })); });
    var table = clear($("label-table"));
    table.appendChild(h("tr", {}, ["spec"].concat(t.labels).concat(["source", "rationale"]).map(function (x) { return h("th", { text: x }); })));
    t.rows.forEach(function (row) {
      var cells = [h("td", { "class": "mono", text: row.spec })];
      t.labels.forEach(function (l) { cells.push(h("td", { text: row.map[l] || "\u2014" })); });
      cells.push(h("td", { text: row.source }));
      cells.push(h("td", { "class": "muted", text: row.rationale }));
      var tr = h("tr", { "class": "row" }, cells);
      tr.addEventListener("click", function () {
        $("rules").value = row.spec;
        state.edited.pair = true;
        renderPreview();
      });
      table.appendChild(tr);
    });
  }

  // -- modes -----------------------------------------------------------------------

  function setMode(mode) {
    if (!state.edited[state.mode]) { state.edited[state.mode] = $("rules").value !== DEFAULT_RULES[state.mode]; }
    state.mode = mode;
    $("mode-sentence").classList.toggle("active", mode === "sentence");
    $("mode-pair").classList.toggle("active", mode === "pair");
    $("mode-sentence").setAttribute("aria-selected", String(mode === "sentence"));
    $("mode-pair").setAttribute("aria-selected", String(mode === "pair"));
    show($("sentence-fields"), mode === "sentence");
    show($("pair-fields"), mode === "pair");
    show($("label-rows"), mode === "pair");
    $("rules-label").textContent = mode === "pair" ? "Specs (premise;hypothesis, comma-separated)" : "Chains (comma-separated; + composes)";
    if (!state.edited[mode]) { $("rules").value = DEFAULT_RULES[mode]; }
    renderPreview();
    state.parses = [];
    state.transformed = false;
    clear($("readings"));
    clear($("results"));
    show($("readings-panel"), false);
    show($("rules-panel"), false);
    show($("results-panel"), false);
    message("");
  }

  // -- readings ----------------------------------------------------------------------

  function sentences() {
    if (state.mode === "pair") { return [$("premise").value, $("hypothesis").value]; }
    return [$("sentence").value];
  }

  // a pasted NLI record (an SNLI/MNLI JSON line) fills the pair fields
  function pastedPair(text) {
    var t = (text || "").trim();
    if (t.charAt(0) !== "{") { return null; }
    var rec;
    try { rec = JSON.parse(t); } catch (e) { return null; }
    var p = rec.sentence1 !== undefined ? rec.sentence1 : rec.premise;
    var q = rec.sentence2 !== undefined ? rec.sentence2 : rec.hypothesis;
    if (typeof p !== "string" || typeof q !== "string") { return null; }
    var gold = rec.gold_label !== undefined ? rec.gold_label : rec.label;
    return { premise: p, hypothesis: q, gold: typeof gold === "string" ? gold : null };
  }

  function onParse(ev) {
    ev.preventDefault();
    var pasted = pastedPair(state.mode === "pair" ? $("premise").value : $("sentence").value);
    if (pasted) {
      setMode("pair");
      $("premise").value = pasted.premise;
      $("hypothesis").value = pasted.hypothesis;
      if (pasted.gold && state.labels && state.labels.labels.indexOf(pasted.gold) >= 0) { $("gold").value = pasted.gold; }
    }
    var texts = sentences();
    if (texts.some(function (s) { return !s.trim(); })) {
      message(state.mode === "pair" ? "Type a premise and a hypothesis." : "Type a sentence.");
      return;
    }
    busy(true, "Parsing\u2026");
    Promise.all(texts.map(function (s) { return api("POST", "/api/parse", { sentence: s }); }))
      .then(function (records) {
        state.parses = records;
        state.chosen = records.map(function (r) { return r.selected; });
        state.transformed = false;
        message("");
        clear($("results"));
        renderReadings();
        show($("rules-panel"), true);
        show($("results-panel"), false);
      })
      .catch(function (err) { message(err.message); })
      .then(function () { busy(false); });
  }

  function badge(text, cls, title) { return h("span", { "class": "badge " + (cls || ""), text: text, title: title }); }

  function renderReadings() {
    var box = clear($("readings"));
    var titles = state.mode === "pair" ? ["Premise", "Hypothesis"] : ["Sentence"];
    state.parses.forEach(function (rec, k) {
      var block = h("div", { "class": "sentence-block", "data-sentence": String(k) }, [
        h("h3", {}, [titles[k] + ": ", h("q", { text: rec.sentence })]),
        h("p", { "class": "select-reason" }, [h("strong", { text: "Selection: " }), rec.select ? rec.select.reason : ""])
      ]);
      if (!rec.readings.length) {
        block.appendChild(h("p", { "class": "reason", text: "No readings: " + (rec.error || "no parse") }));
      }
      rec.readings.forEach(function (reading, i) {
        block.appendChild(readingCard(rec, reading, i, k));
      });
      box.appendChild(block);
    });
    show($("readings-panel"), true);
  }

  function readingCard(rec, reading, i, k) {
    var inUse = state.chosen[k] === i;
    var radio = h("input", { type: "radio", name: "reading-" + k, value: String(i), checked: inUse });
    radio.addEventListener("change", function () { chooseReading(k, i); });
    var badges = [];
    if (rec.selected === i) { badges.push(badge("selected (" + rec.select.method + ")", "selected", rec.select.reason)); }
    badges.push(reading.candidate ? badge("candidate", "yes") : badge("not a candidate", "no"));
    if (reading.roundtrip === true) { badges.push(badge("round-trips", "yes")); }
    if (reading.roundtrip === false) { badges.push(badge("does not round-trip", "no")); }
    if (reading.index_ep) { badges.push(badge("index: " + reading.index_ep, "")); }
    var card = h("div", { "class": "reading" + (inUse ? " in-use" : "") + (rec.selected === i ? " selected" : ""), "data-reading": String(i) }, [
      h("div", { "class": "reading-head" }, [h("label", {}, [radio, "Reading " + i])].concat(badges)),
      h("p", { "class": "note", text: reading.note })
    ]);
    if (reading.roundtrip === false && reading.realizations && reading.realizations.length) {
      card.appendChild(h("p", { "class": "note" }, ["The grammar realizes: ", reading.realizations.map(function (s) { return "\u201c" + s + "\u201d"; }).join("; ")]));
    }
    var graph = h("div", { "class": "graph" });
    graph.appendChild(window.LitDmrs.draw(reading.dmrs, rec.sentence));
    // fragment analyses and other non-candidates: the graph is a click away
    var open = reading.candidate || rec.selected === i || inUse;
    card.appendChild(h("details", { "class": "dmrs-graph", open: open }, [h("summary", { text: "DMRS graph" }), graph]));
    card.appendChild(h("details", {}, [h("summary", { text: "SimpleMRS" }), h("pre", { text: reading.mrs })]));
    return card;
  }

  function chooseReading(k, i) {
    state.chosen[k] = i;
    document.querySelectorAll('.sentence-block[data-sentence="' + k + '"] .reading').forEach(function (card) {
      card.classList.toggle("in-use", card.getAttribute("data-reading") === String(i));
    });
    if (state.transformed) { runTransform(); }
  }

  // -- transform ---------------------------------------------------------------------

  function onTransform(ev) {
    ev.preventDefault();
    runTransform();
  }

  function runTransform() {
    var rules = $("rules").value.trim();
    if (!rules) { message("Give at least one chain or spec."); return; }
    var k = parseInt($("candidates").value, 10) || 5;
    var body = { rules: rules, candidates: k, verify: $("verify").checked };
    if (state.mode === "pair") {
      body.sentence1 = state.parses[0].sentence;
      body.sentence2 = state.parses[1].sentence;
      body.gold_label = $("gold").value;
      body.reading1 = state.chosen[0];
      body.reading2 = state.chosen[1];
    } else {
      body.sentence = state.parses[0].sentence;
      body.reading = state.chosen[0];
    }
    busy(true, "Transforming\u2026");
    api("POST", "/api/transform", body)
      .then(function (resp) {
        message("");
        state.transformed = true;
        renderResults(resp);
      })
      .catch(function (err) { message(err.message); })
      .then(function () { busy(false); });
  }

  function readingNote(name, used, selected) {
    if (used === null || used === undefined) { return name + ": no reading"; }
    if (used === selected) { return name + ": reading " + used + " (the selected one)"; }
    return name + ": reading " + used + " (your choice; the selection strategy chose " + (selected === null ? "none" : selected) + ")";
  }

  function renderResults(resp) {
    var note;
    if (state.mode === "pair") {
      note = [readingNote("premise", resp.readings[0], resp.selected[0]), readingNote("hypothesis", resp.readings[1], resp.selected[1])].join("; ");
    } else {
      note = "Chains run on " + readingNote("the sentence", resp.reading, resp.selected).replace("the sentence: ", "");
    }
    $("results-note").textContent = note + ". Scores are LM perplexities (lower is better)" + (state.info && !state.info.lm ? "; no LM: grammar order, no scores." : ".");
    var box = clear($("results"));
    resp.records.forEach(function (rec) {
      box.appendChild(state.mode === "pair" ? pairCard(rec) : sentenceCard(rec));
    });
    show($("results-panel"), true);
  }

  function resultHead(rec) {
    return h("div", { "class": "result-head" }, [
      h("span", { "class": "spec", text: rec.spec }),
      badge(rec.status, rec.status)
    ]);
  }

  function rulesLine(explain) {
    if (!explain || !explain.rules) { return null; }
    return h("div", { "class": "chain" }, explain.rules.map(function (r) {
      return h("span", { "class": "chip", title: r.description }, [r.name + " ", h("span", { "class": "ph", text: r.phenomenon })]);
    }));
  }

  function candidatesTable(cands, explain, chosen) {
    if (!cands || !cands.length) { return null; }
    var verified = {};
    var hasVerify = explain && explain.verify;
    if (hasVerify) { explain.verify.results.forEach(function (v) { verified[v.sentence] = v.ok; }); }
    var head = ["#", "candidate", state.info && state.info.lm ? "perplexity" : "score"].concat(hasVerify ? ["verify"] : []);
    var table = h("table", { "class": "candidates" }, [h("tr", {}, head.map(function (t) { return h("th", { text: t }); }))]);
    cands.forEach(function (c, i) {
      var cells = [h("td", { "class": "rank", text: String(i + 1) }), h("td", { "class": "sentence", text: c.sentence }), h("td", { "class": "score", text: fmtScore(c.score) })];
      if (hasVerify) {
        var ok = verified[c.sentence];
        cells.push(h("td", { "class": ok ? "pass" : "fail", text: ok ? "\u2713 shows the change" : "\u2717 no reading shows it" }));
      }
      table.appendChild(h("tr", { "class": c.sentence === chosen ? "best" : "" }, cells));
    });
    return table;
  }

  function sideBody(side, explain) {
    var parts = [rulesLine(explain)];
    if (side.sentence && side.chain !== null) {
      parts.push(h("p", { "class": "chosen" }, [h("span", { "class": "chosen-sentence", text: side.sentence }),
        side.score === null || side.score === undefined ? null : h("span", { "class": "score", text: "perplexity " + fmtScore(side.score) })]));
    } else if (side.chain === null) {
      parts.push(h("p", { "class": "chosen" }, [h("span", { "class": "chosen-sentence", text: side.sentence }), h("span", { "class": "score", text: "untouched (o)" })]));
    }
    parts.push(candidatesTable(side.candidates, explain, side.sentence));
    if (explain && explain.verify) {
      parts.push(h("p", { "class": "note", text: "verify: " + explain.verify.expectation }));
    }
    if (explain && explain.generated !== null && explain.generated !== undefined) {
      var extra = [h("summary", { text: "generation: " + explain.generated + " string(s), " + explain.dropped.length + " dropped" })];
      if (explain.dropped.length) {
        extra.push(h("table", {}, explain.dropped.map(function (d) { return h("tr", {}, [h("td", { text: d.sentence }), h("td", { "class": "muted", text: d.reason })]); })));
      }
      parts.push(h("details", {}, extra));
    }
    if (side.mrs) { parts.push(h("details", {}, [h("summary", { text: "transformed MRS" }), h("pre", { text: side.mrs })])); }
    return parts;
  }

  function sentenceCard(rec) {
    var card = h("div", { "class": "result " + rec.status, "data-spec": rec.spec }, [resultHead(rec)]);
    if (rec.reason) { card.appendChild(h("p", { "class": "reason", text: rec.reason })); }
    sideBody({ chain: rec.chain, sentence: rec.sentence, score: rec.candidates && rec.candidates.length && rec.status === "ok" ? rec.candidates[0].score : null, candidates: rec.candidates, mrs: rec.mrs }, rec.explain)
      .forEach(function (p) { if (p) { card.appendChild(p); } });
    return card;
  }

  function labelBox(rec) {
    var ex = rec.explain || {};
    var row = ex.label_row;
    var lr = rec.label_rule;
    var parts = [];
    if (lr && rec.gold_label) {
      parts.push(h("div", {}, ["label: " + lr.from + " \u2192 ", h("span", { "class": "new", text: rec.gold_label })]));
    } else if (lr) {
      parts.push(h("div", {}, ["label: " + lr.from + " \u2192 ", h("span", { "class": "new", text: row && row.map[lr.from] ? row.map[lr.from] : "?" }), h("span", { "class": "muted", text: " (if both sides transform)" })]));
    } else if (ex.label_reason && !(rec.reason || "").startsWith("unlabeled")) {
      parts.push(h("div", { "class": "reason", text: "no label: " + ex.label_reason }));
    }
    if (row) {
      var via = lr && lr.via ? " via " + lr.via : "";
      parts.push(h("div", {}, ["table row ", h("code", { text: row.spec }), " (" + row.source + ")" + via + ": ", h("span", { "class": "muted", text: row.rationale })]));
      var labels = Object.keys(row.map);
      parts.push(h("table", {}, [
        h("tr", {}, labels.map(function (l) { return h("th", { text: l + " \u2192" }); })),
        h("tr", {}, labels.map(function (l) { return h("td", { text: row.map[l] }); }))
      ]));
    }
    return h("div", { "class": "label-box" }, parts);
  }

  function pairCard(rec) {
    var card = h("div", { "class": "result " + rec.status, "data-spec": rec.spec }, [resultHead(rec)]);
    if (rec.reason) { card.appendChild(h("p", { "class": "reason", text: rec.reason })); }
    card.appendChild(labelBox(rec));
    ["premise", "hypothesis"].forEach(function (name) {
      var side = rec[name];
      if (!side) { return; }
      var div = h("div", { "class": "side " + name }, [h("h4", { text: name + (side.chain ? ": " + side.chain : ": untouched") })]);
      sideBody(side, rec.explain ? rec.explain[name] : null).forEach(function (p) { if (p) { div.appendChild(p); } });
      card.appendChild(div);
    });
    return card;
  }

  // -- start -------------------------------------------------------------------------

  function init() {
    $("mode-sentence").addEventListener("click", function () { setMode("sentence"); });
    $("mode-pair").addEventListener("click", function () { setMode("pair"); });
    $("parse-form").addEventListener("submit", onParse);
    $("transform-form").addEventListener("submit", onTransform);
    $("rules").addEventListener("input", function () { state.edited[state.mode] = true; renderPreview(); });
    Promise.all([api("GET", "/api/info"), api("GET", "/api/rules"), api("GET", "/api/labels")])
      .then(function (res) {
        state.info = res[0];
        state.registry = res[1].rules;
        state.labels = res[2];
        var i = state.info;
        $("setup").textContent = "grammar " + i.grammar + (i.ace_version ? " (ACE " + i.ace_version + ")" : "") +
          " \u00b7 LM " + (i.lm || "none (grammar order)") + " \u00b7 selection " + i.select +
          " \u00b7 " + i.readings + " readings per parse \u00b7 " + i.pool.size + " ACE worker(s)";
        renderRegistry();
        renderLabelRows();
        renderPreview();
        document.body.setAttribute("data-ready", "true");
      })
      .catch(function (err) { message("Cannot reach lit serve: " + err.message); });
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
}());
