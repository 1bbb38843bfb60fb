/* sgg-eval model page (issue 49): the charts, the compare view and the image browser, drawn from
   window.SGG_BOARD (data/<board>.js). No library, no network: the page works from file://. */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var B, E, me, other = null;
  var GROUP_FILL = { head: "#fde7c8", body: "#dcefd9", tail: "#dbe6f5" };

  function el(tag, attrs, parent, text) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) { node.textContent = text; }
    if (parent) { parent.appendChild(node); }
    return node;
  }
  function h(tag, attrs, parent, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) { node.textContent = text; }
    if (parent) { parent.appendChild(node); }
    return node;
  }
  function title(node, text) { el("title", {}, node, text); return node; }
  function scale(metric) { return B.unscaled.indexOf(metric) >= 0 ? 1 : 100; }
  function fmt(metric, v) { return v === null || v === undefined ? "-" : (scale(metric) * v).toFixed(2); }
  function groupOf(name) {
    if (!B.groups) { return null; }
    for (var g in B.groups) { if (B.groups[g].indexOf(name) >= 0) { return g; } }
    return null;
  }
  function ordered() { return B.order.map(function (i) { return B.predicates[i]; }); }

  /* ---- compare: the selector, the grid's differences ---- */
  function setupCompare() {
    var select = document.getElementById("compare");
    Object.keys(B.entries).forEach(function (key) {
      if (key !== me) { h("option", { value: key }, select, B.entries[key].label); }
    });
    var wanted = (location.hash.match(/compare=([^&]+)/) || [])[1];
    if (wanted && B.entries[decodeURIComponent(wanted)]) { select.value = decodeURIComponent(wanted); }
    select.addEventListener("change", function () {
      other = select.value || null;
      history.replaceState(null, "", other ? "#compare=" + encodeURIComponent(other) : "#");
      redraw();
    });
    other = select.value || null;
  }
  function gridDiffs() {
    var mine = E.metrics, theirs = other ? B.entries[other].metrics : null;
    document.querySelectorAll("td[data-m]").forEach(function (td) {
      var old = td.querySelector(".d"); if (old) { td.removeChild(old); }
      if (!theirs) { return; }
      var name = td.getAttribute("data-m"), a = mine[name], b = theirs[name];
      if (a === null || a === undefined || b === null || b === undefined) { return; }
      var d = scale(name) * (a - b), better = name === "PRk" ? d < 0 : d > 0;
      h("span", { "class": "d " + (d === 0 ? "dim" : better ? "up" : "down") }, td, (d >= 0 ? "+" : "") + d.toFixed(2));
    });
    document.getElementById("compare-note").textContent = other ? "differences: " + E.label + " minus " + B.entries[other].label : "";
  }

  /* ---- per-predicate bars in training-frequency order, groups shaded ---- */
  function ppMetrics() {
    var names = Object.keys(E.per_predicate);
    var first = B.columns.filter(function (c) { return names.indexOf(c) >= 0; });
    return first.concat(names.filter(function (n) { return first.indexOf(n) < 0; }).sort());
  }
  function axisChart(host, values, opts) {
    var names = ordered(), n = names.length, bw = Math.max(8, Math.min(22, 900 / n));
    var left = 46, top = 22, height = opts.height || 200, width = left + n * bw + 10, bottom = 110;
    var svg = el("svg", { width: width, height: top + height + bottom, "class": opts.cls || "" }, host);
    var lo = opts.lo, hi = opts.hi, y = function (v) { return top + height * (hi - v) / (hi - lo || 1); };
    names.forEach(function (name, i) {  // the group bands
      var g = groupOf(name);
      if (g) { el("rect", { x: left + i * bw, y: top, width: bw, height: height, fill: GROUP_FILL[g], "class": "band-" + g }, svg); }
    });
    if (B.groups) {
      ["head", "body", "tail"].forEach(function (g) {
        var idx = names.map(function (p, i) { return groupOf(p) === g ? i : -1; }).filter(function (i) { return i >= 0; });
        if (idx.length) { el("text", { x: left + (idx[0] + idx[idx.length - 1] + 1) / 2 * bw, y: top - 6, "text-anchor": "middle", "font-weight": "600" }, svg, g + " (" + idx.length + ")"); }
      });
    }
    for (var t = 0; t <= 4; t++) {  // the value axis
      var v = lo + (hi - lo) * t / 4;
      el("line", { x1: left, x2: width - 10, y1: y(v), y2: y(v), stroke: "#ccc", "stroke-width": 0.5 }, svg);
      el("text", { x: left - 4, y: y(v) + 3, "text-anchor": "end" }, svg, v.toFixed(opts.digits || 0));
    }
    names.forEach(function (name, i) {
      var x = left + i * bw, v = values[i];
      if (v !== null && v !== undefined) { opts.bar(svg, x, bw, v, y, name, i); }
      el("text", { transform: "translate(" + (x + bw / 2 + 3) + "," + (top + height + 6) + ") rotate(-60)", "text-anchor": "end" }, svg, name);
    });
    el("line", { x1: left, x2: width - 10, y1: y(Math.max(lo, Math.min(hi, 0))), y2: y(Math.max(lo, Math.min(hi, 0))), stroke: "#444" }, svg);
    return svg;
  }
  function drawPerPredicate() {
    var host = document.getElementById("pp-chart"), gains = document.getElementById("gains");
    host.innerHTML = ""; gains.innerHTML = "";
    var metric = document.getElementById("pp-metric").value;
    if (!metric) { host.textContent = "no per-predicate values in this document"; return; }
    var s = scale(metric), names = ordered();
    var mine = names.map(function (p) { var v = E.per_predicate[metric][p]; return v === undefined ? null : s * v; });
    var theirs = other && B.entries[other].per_predicate[metric] ? names.map(function (p) {
      var v = B.entries[other].per_predicate[metric][p]; return v === undefined ? null : s * v; }) : null;
    var top = Math.max.apply(null, mine.concat(theirs || []).filter(function (v) { return v !== null; }).concat([1e-9]));
    axisChart(host, mine, {
      lo: 0, hi: s === 100 ? Math.min(100, Math.ceil(top / 10) * 10) : top, cls: "pp", digits: s === 100 ? 0 : 2,
      bar: function (svg, x, bw, v, y, name, i) {
        title(el("rect", { x: x + 1, y: y(v), width: bw - 2, height: y(0) - y(v), fill: "#4a78b5", "class": "pbar" }, svg),
          name + ": " + v.toFixed(2) + (theirs && theirs[i] !== null ? " (" + B.entries[other].label + ": " + theirs[i].toFixed(2) + ")" : ""));
        if (theirs && theirs[i] !== null) { el("line", { x1: x, x2: x + bw, y1: y(theirs[i]), y2: y(theirs[i]), stroke: "#000", "stroke-width": 2, "class": "tick" }, svg); }
      }
    });
    if (!theirs) { return; }
    var diff = mine.map(function (v, i) { return v === null || theirs[i] === null ? null : v - theirs[i]; });
    var span = Math.max.apply(null, diff.map(function (d) { return Math.abs(d || 0); }).concat([1e-9]));
    h("h3", {}, gains, metric + ": " + E.label + " minus " + B.entries[other].label + " (gains up, losses down)");
    axisChart(gains, diff, {
      lo: -span, hi: span, height: 160, cls: "gains", digits: 1,
      bar: function (svg, x, bw, d, y, name) {
        var y0 = y(0), y1 = y(d);
        title(el("rect", { x: x + 1, y: Math.min(y0, y1), width: bw - 2, height: Math.abs(y1 - y0), fill: d >= 0 ? "#2e8b57" : "#c62828", "class": "diff" }, svg),
          name + ": " + (d >= 0 ? "+" : "") + d.toFixed(2));
      }
    });
    var up = diff.filter(function (d) { return d > 0; }).length, down = diff.filter(function (d) { return d < 0; }).length;
    var words = [up + " predicates gain, " + down + " lose"];
    if (B.groups) {
      ["head", "body", "tail"].forEach(function (g) {
        var ds = names.map(function (p, i) { return groupOf(p) === g ? diff[i] : null; }).filter(function (d) { return d !== null; });
        if (ds.length) { words.push(g + " " + (ds.reduce(function (a, b) { return a + b; }, 0) / ds.length >= 0 ? "+" : "") + (ds.reduce(function (a, b) { return a + b; }, 0) / ds.length).toFixed(2) + " on average"); }
      });
    }
    h("p", { "class": "note" }, gains, words.join("; "));
  }

  /* ---- the confusion heatmap, rows normalised, training-frequency order ---- */
  function drawConfusion() {
    var host = document.getElementById("confusion-chart"); host.innerHTML = "";
    var counts = E.confusion;
    if (!counts) { host.textContent = "no confusion matrix for this task or protocol"; return; }
    var order = B.order, n = order.length, cell = Math.max(6, Math.min(14, 640 / n)), left = 110, top = 110;
    var svg = el("svg", { width: left + n * cell + 20, height: top + n * cell + 20, "class": "heatmap" }, host);
    order.forEach(function (g, r) {
      var row = counts[g], total = row.reduce(function (a, b) { return a + b; }, 0);
      el("text", { x: left - 4, y: top + r * cell + cell - 2, "text-anchor": "end" }, svg, B.predicates[g]);
      order.forEach(function (t, c) {
        var share = total ? row[t] / total : 0, shade = Math.round(255 * (1 - Math.sqrt(share)));
        var rect = el("rect", { x: left + c * cell, y: top + r * cell, width: cell, height: cell, "class": "cell",
          fill: total ? "rgb(" + shade + "," + shade + ",255)" : "#f4f4f4", stroke: g === t ? "#000" : "none", "stroke-width": 0.8 }, svg);
        if (row[t]) { title(rect, B.predicates[g] + " \u2192 " + B.predicates[t] + ": " + (100 * share).toFixed(1) + "% of " + total + " matched rows"); }
      });
    });
    order.forEach(function (t, c) {
      el("text", { transform: "translate(" + (left + c * cell + cell - 2) + "," + (top - 4) + ") rotate(-60)" }, svg, B.predicates[t]);
    });
    el("text", { x: 4, y: 12, "font-weight": "600" }, svg, "rows: GT predicate");
    el("text", { x: 4, y: 26, "font-weight": "600" }, svg, "columns: ranked first");
  }

  /* ---- the image browser ---- */
  var view = { index: 0, predicate: "", filter: "all", k: 20 };
  function ranksOf(entry, i) { var g = B.graphs[entry] && B.graphs[entry][i]; return g ? g.ranks : null; }
  function hit(rank, k) { return rank !== null && rank !== undefined && rank < k; }
  function rowsShown(i) {
    var img = B.images[i], mine = ranksOf(me, i), theirs = other ? ranksOf(other, i) : null;
    return img.gt.map(function (row, r) {
      if (view.predicate !== "" && row[2] !== +view.predicate) { return false; }
      if (view.filter === "mine" && !(mine && theirs && hit(mine[r], view.k) && !hit(theirs[r], view.k))) { return false; }
      if (view.filter === "theirs" && !(mine && theirs && !hit(mine[r], view.k) && hit(theirs[r], view.k))) { return false; }
      return true;
    });
  }
  function visibleImages() {
    return B.images.map(function (_, i) { return i; }).filter(function (i) {
      return B.graphs[me] && B.graphs[me][i] && rowsShown(i).some(function (x) { return x; });
    });
  }
  function drawGraph(host, img, objects, triplets, colours, heading) {
    var panel = h("div", { "class": "panel" }, host);
    h("h3", {}, panel, heading);
    var w = img.width, ht = img.height, width = 480, height = Math.round(480 * ht / w);
    var svg = el("svg", { width: width, height: height, viewBox: "0 0 " + w + " " + ht, "class": "graph" }, panel);
    if (img.file) { el("image", { href: "../" + img.file, x: 0, y: 0, width: w, height: ht, preserveAspectRatio: "none" }, svg); }
    else { el("rect", { x: 0, y: 0, width: w, height: ht, fill: "#fafafa", stroke: "#bbb" }, svg); }
    var px = w / width, used = {};
    triplets.forEach(function (t) { used[t[0]] = used[t[1]] = true; });
    objects.forEach(function (o, j) {
      if (!used[j]) { return; }
      el("rect", { x: o[1], y: o[2], width: Math.max(1, o[3] - o[1]), height: Math.max(1, o[4] - o[2]), fill: "none", stroke: "#f0a030", "stroke-width": 2 * px, "class": "box" }, svg);
      el("text", { x: o[1] + 2 * px, y: o[2] + 11 * px, "font-size": 11 * px, fill: "#7a4a00", stroke: "#fff", "stroke-width": 3 * px, "paint-order": "stroke" }, svg, B.objects[o[0]] + " " + j);
    });
    triplets.forEach(function (t, q) {
      var a = objects[t[0]], b = objects[t[1]], ax = (a[1] + a[3]) / 2, ay = (a[2] + a[4]) / 2, bx = (b[1] + b[3]) / 2, by = (b[2] + b[4]) / 2;
      el("line", { x1: ax, y1: ay, x2: bx, y2: by, stroke: colours[q], "stroke-width": 2 * px, "class": "rel" }, svg);
      el("circle", { cx: bx, cy: by, r: 3 * px, fill: colours[q] }, svg);
      el("text", { x: (ax + bx) / 2, y: (ay + by) / 2, "font-size": 11 * px, fill: colours[q], stroke: "#fff", "stroke-width": 3 * px, "paint-order": "stroke", "text-anchor": "middle" }, svg, B.predicates[t[2]]);
    });
    return panel;
  }
  function tripletText(objects, t) {  // "man 0 — riding → horse 2": class and index of each end
    var end = function (j) { return B.objects[objects[j][0]] + " " + j; };
    return end(t[0]) + " \u2014 " + B.predicates[t[2]] + " \u2192 " + end(t[1]);
  }
  function drawBrowser() {
    var host = document.getElementById("browser");
    if (!host) { return; }  // a page without the browser (the benchmarking service hides its ground truth)
    host.innerHTML = "";
    if (!B.images || !B.images.length || !B.graphs[me]) { host.textContent = "no image browser here: the graphs come from the box tasks' evaluate --per-image (site.images)"; return; }
    var controls = h("div", { "class": "controls" }, host);
    var shown = visibleImages();
    if (shown.indexOf(view.index) < 0) { view.index = shown.length ? shown[0] : -1; }
    var prev = h("button", { id: "img-prev" }, controls, "\u2190 previous");
    var pick = h("select", { id: "img-pick" }, controls);
    shown.forEach(function (i) { var o = h("option", { value: i }, pick, "image " + B.images[i].image); if (i === view.index) { o.selected = true; } });
    var next = h("button", { id: "img-next" }, controls, "next \u2192");
    var pred = h("select", { id: "img-predicate" }, h("label", {}, controls, "predicate "));
    h("option", { value: "" }, pred, "(any)");
    ordered().forEach(function (p) { var o = h("option", { value: B.predicates.indexOf(p) }, pred, p); if (String(B.predicates.indexOf(p)) === view.predicate) { o.selected = true; } });
    var filt = h("select", { id: "img-filter" }, h("label", {}, controls, "show "));
    [["all", "every GT relation"], ["mine", "hit by this model, missed by the compared one"], ["theirs", "missed by this model, hit by the compared one"]].forEach(function (f) {
      var o = h("option", { value: f[0] }, filt, f[1]); if (f[0] === view.filter) { o.selected = true; } if (f[0] !== "all" && !other) { o.disabled = true; }
    });
    var ks = h("select", { id: "img-k" }, h("label", {}, controls, "K "));
    [20, 50, 100].forEach(function (k) { var o = h("option", { value: k }, ks, String(k)); if (k === view.k) { o.selected = true; } });
    h("span", { "class": "note" }, controls, shown.length + " of " + B.images.length + " images");
    prev.onclick = function () { var p = shown.indexOf(view.index); if (p > 0) { view.index = shown[p - 1]; drawBrowser(); } };
    next.onclick = function () { var p = shown.indexOf(view.index); if (p < shown.length - 1) { view.index = shown[p + 1]; drawBrowser(); } };
    pick.onchange = function () { view.index = +pick.value; drawBrowser(); };
    pred.onchange = function () { view.predicate = pred.value; drawBrowser(); };
    filt.onchange = function () { view.filter = filt.value; drawBrowser(); };
    ks.onchange = function () { view.k = +ks.value; drawBrowser(); };
    if (view.index < 0) { h("p", { "class": "note" }, host, "no image has a GT relation that passes these filters"); return; }
    var i = view.index, img = B.images[i], g = B.graphs[me][i], mine = g.ranks, theirs = other ? ranksOf(other, i) : null;
    var keep = rowsShown(i), gt = img.gt.filter(function (_, r) { return keep[r]; });
    var gtColours = img.gt.map(function (_, r) { return hit(mine[r], view.k) ? "#1a7f37" : "#c62828"; }).filter(function (_, r) { return keep[r]; });
    var top = g.predicted.slice(0, view.k), firsts = {};
    mine.forEach(function (rank) { if (rank !== null) { firsts[rank] = true; } });
    var predColours = top.map(function (_, q) { return firsts[q] ? "#1a7f37" : "#999"; });
    var panels = h("div", { "class": "panels", id: "img-panels", "data-image": String(img.image) }, host);
    var left = drawGraph(panels, img, img.objects, gt, gtColours, "GT of image " + img.image + (img.file ? "" : " (blank canvas: no picture; site.image_dir)"));
    h("p", { "class": "note" }, left, "rank of each GT relation in this model's list" + (theirs ? " / in the compared model's" : "") + " (1 = first; none = never matched); \u2713 within the top " + view.k);
    var list = h("ul", { "class": "triplets" }, left);
    img.gt.forEach(function (row, r) {
      if (!keep[r]) { return; }
      var text = tripletText(img.objects, row);
      var ranks = " rank " + (mine[r] === null ? "none" : mine[r] + 1) + (theirs ? " / " + (theirs[r] === null ? "none" : theirs[r] + 1) : "");
      h("li", { "class": hit(mine[r], view.k) ? "hit" : "miss" }, list, (hit(mine[r], view.k) ? "\u2713 " : "\u2717 ") + text + ranks);
    });
    var right = drawGraph(panels, img, g.objects, top, predColours, E.label + ": top " + view.k + " predicted (green: the first to hit a GT relation)");
    var plist = h("ol", { "class": "triplets" }, right);
    top.forEach(function (t, q) {
      h("li", { "class": firsts[q] ? "hit" : "dim" }, plist, tripletText(g.objects, t));
    });
  }

  function redraw() { gridDiffs(); drawPerPredicate(); drawConfusion(); drawBrowser(); }

  document.addEventListener("DOMContentLoaded", function () {
    B = window.SGG_BOARD; me = document.body.getAttribute("data-entry"); E = B.entries[me];
    var select = document.getElementById("pp-metric");
    ppMetrics().forEach(function (m) { h("option", { value: m }, select, m); });
    select.addEventListener("change", drawPerPredicate);
    setupCompare();
    redraw();
    document.body.setAttribute("data-ready", "1");
  });
})();
