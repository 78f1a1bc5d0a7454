/* lit explorer: draw a DMRS (PyDelphin's DMRS JSON) as an SVG arc diagram.
 *
 * Predicates are boxes in the order of their character spans; links are
 * arcs above them, labelled ROLE/POST (ARG1/NEQ, RSTR/H, MOD/EQ) with the
 * arrowhead at the argument. The INDEX node is highlighted and tagged, the
 * TOP node is tagged. Hovering a box shows its span and properties.
 * No dependencies: window.LitDmrs.draw(dmrs, sentence) returns an <svg>.
 */
(function () {
  "use strict";

  var NS = "http://www.w3.org/2000/svg";
  var CHAR_W = 7.2;     // width of a 12px monospace character
  var SMALL_W = 6.2;    // width of an 11px sans-serif character (estimate)
  var PAD = 10;
  var GAP = 14;
  var NODE_H = 26;
  var BASE_H = 18;      // height of the lowest arcs
  var LEVEL_H = 18;     // more height per level of nesting
  var serial = 0;

  function el(name, attrs, text) {
    var e = document.createElementNS(NS, name);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }

  function spanOf(node) {
    var lnk = node.lnk || {};
    return [typeof lnk.from === "number" ? lnk.from : -1, typeof lnk.to === "number" ? lnk.to : -1];
  }

  function labelOf(node) {
    return node.predicate + (node.carg !== undefined && node.carg !== null ? "(" + JSON.stringify(node.carg) + ")" : "");
  }

  function overlaps(a, b) {
    return (a.lo < b.hi && b.lo < a.hi) || (a.lo === b.lo && a.hi === b.hi);
  }

  function draw(dmrs, sentence) {
    var id = "dmrs-" + (++serial);
    var svg = el("svg", { "class": "dmrs", role: "img", "aria-label": "DMRS graph" });
    if (!dmrs || !dmrs.nodes || !dmrs.nodes.length) {
      svg.setAttribute("width", "260");
      svg.setAttribute("height", "30");
      svg.appendChild(el("text", { x: 4, y: 20, "class": "empty" }, "no DMRS for this reading"));
      return svg;
    }
    var nodes = dmrs.nodes.map(function (n, i) {
      var span = spanOf(n);
      return { data: n, order: i, from: span[0], to: span[1] };
    });
    nodes.sort(function (a, b) { return (a.from - b.from) || (a.order - b.order); });
    var x = 8;
    nodes.forEach(function (n, i) {
      n.i = i;
      n.label = labelOf(n.data);
      n.surface = sentence && n.from >= 0 && n.to >= n.from ? sentence.slice(n.from, n.to) : "";
      n.w = Math.max(n.label.length * CHAR_W, n.surface.length * SMALL_W) + 2 * PAD;
      n.x = x;
      n.ends = [];
      x += n.w + GAP;
    });
    var width = x - GAP + 8;
    var byId = {};
    nodes.forEach(function (n) { byId[n.data.nodeid] = n; });

    var links = (dmrs.links || []).filter(function (l) {
      return byId[l.from] !== undefined && byId[l.to] !== undefined && l.from !== l.to;
    }).map(function (l) {
      var a = byId[l.from], b = byId[l.to];
      return { data: l, a: a, b: b, lo: Math.min(a.i, b.i), hi: Math.max(a.i, b.i) };
    });
    // levels: short arcs low, an arc above every arc it overlaps that was placed before it
    var levels = [];
    links.slice().sort(function (p, q) {
      return ((p.hi - p.lo) - (q.hi - q.lo)) || (p.lo - q.lo);
    }).forEach(function (l) {
      var lev = 0;
      while (levels[lev] && levels[lev].some(function (o) { return overlaps(o, l); })) { lev++; }
      (levels[lev] = levels[lev] || []).push(l);
      l.level = lev;
    });
    // attachment points: spread the ends of each node over its top edge, outer arcs outside
    links.forEach(function (l) {
      l.a.ends.push({ link: l, other: l.b, end: "from" });
      l.b.ends.push({ link: l, other: l.a, end: "to" });
    });
    nodes.forEach(function (n) {
      n.ends.sort(function (p, q) {
        var dp = p.other.i - n.i, dq = q.other.i - n.i;
        if (dp !== dq) { return dp - dq; }
        return dp < 0 ? q.link.level - p.link.level : p.link.level - q.link.level;
      });
      n.ends.forEach(function (e, k) {
        e.link[e.end + "X"] = n.x + n.w * (k + 1) / (n.ends.length + 1);
      });
    });

    var arcTop = BASE_H + levels.length * LEVEL_H + 14;
    var y0 = arcTop;
    var height = y0 + NODE_H + 40;
    svg.setAttribute("width", String(Math.ceil(width)));
    svg.setAttribute("height", String(height));
    svg.setAttribute("viewBox", "0 0 " + Math.ceil(width) + " " + height);

    var defs = el("defs");
    var marker = el("marker", { id: id + "-arrow", viewBox: "0 0 8 8", refX: "7", refY: "4",
      markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
    marker.appendChild(el("path", { d: "M0,0 L8,4 L0,8 z", "class": "arrowhead" }));
    defs.appendChild(marker);
    svg.appendChild(defs);

    var arcs = el("g", { "class": "links" });
    links.forEach(function (l) {
      var x1 = l.fromX, x2 = l.toX;
      var h = BASE_H + l.level * LEVEL_H;
      var top = y0 - h;
      var dir = x2 >= x1 ? 1 : -1;
      var r = Math.min(6, Math.abs(x2 - x1) / 2);
      var d = "M" + x1 + "," + y0 + " L" + x1 + "," + (top + r) +
        " Q" + x1 + "," + top + " " + (x1 + dir * r) + "," + top +
        " L" + (x2 - dir * r) + "," + top +
        " Q" + x2 + "," + top + " " + x2 + "," + (top + r) +
        " L" + x2 + "," + (y0 - 1);
      var post = l.data.post || "";
      var role = (l.data.rargname || "") + "/" + post;
      var g = el("g", { "class": "link post-" + post.toLowerCase() });
      g.appendChild(el("title", {}, l.a.data.predicate + " " + role + " " + l.b.data.predicate));
      g.appendChild(el("path", { d: d, "class": "arc", "marker-end": "url(#" + id + "-arrow)" }));
      g.appendChild(el("text", { x: (x1 + x2) / 2, y: top - 3, "class": "role" }, role));
      arcs.appendChild(g);
    });
    svg.appendChild(arcs);

    var boxes = el("g", { "class": "nodes" });
    nodes.forEach(function (n) {
      var classes = ["node"];
      var tags = [];
      if (n.data.nodeid === dmrs.index) { classes.push("index"); tags.push("INDEX"); }
      if (n.data.nodeid === dmrs.top) { classes.push("top"); tags.push("TOP"); }
      var g = el("g", { "class": classes.join(" "), "data-predicate": n.data.predicate });
      var props = Object.keys(n.data.sortinfo || {}).map(function (k) {
        return k + " " + n.data.sortinfo[k];
      });
      var title = n.label + (n.from >= 0 ? " <" + n.from + ":" + n.to + "> \u201c" + n.surface + "\u201d" : "");
      if (props.length) { title += "\n" + props.join(", "); }
      g.appendChild(el("title", {}, title));
      g.appendChild(el("rect", { x: n.x, y: y0, width: n.w, height: NODE_H, rx: 4, "class": "box" }));
      g.appendChild(el("text", { x: n.x + n.w / 2, y: y0 + NODE_H / 2 + 4, "class": "pred" }, n.label));
      if (n.surface) {
        g.appendChild(el("text", { x: n.x + n.w / 2, y: y0 + NODE_H + 14, "class": "surface" }, n.surface));
      }
      if (tags.length) {
        g.appendChild(el("text", { x: n.x + n.w / 2, y: y0 + NODE_H + 30, "class": "tag" }, tags.join(" \u00b7 ")));
      }
      boxes.appendChild(g);
    });
    svg.appendChild(boxes);
    return svg;
  }

  window.LitDmrs = { draw: draw };
}());
