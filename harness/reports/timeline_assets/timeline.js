/* timeline.html's drawing (harness/reports/timeline.py has the data's shape).
 *
 * The ops are decoded once into typed arrays and indexed per lane; a frame draws only the
 * lanes in view and, in each, only the ops overlapping the time in view (binary search on
 * the lane's running maximum of completion times), merging neighbouring bars of one type
 * that fall within a pixel. So a frame costs what is visible, not the history's length.
 * The pure parts (decode, firstVisible, hit, describe, niceStep) are on TL, and tested
 * under node (tests/test_serve_timeline.py).
 */
(function (root) {
  "use strict";
  var TYPE_COLOURS = {ok: "#6DB6FE", fail: "#FEB5DA", info: "#FFAA26", open: "#CCCCCC"};
  var LEFT = 84, TOP = 24;

  function decode(d) {
    var n = d.n, L = d.lanes.length, i;
    var start = new Float64Array(n), end = new Float64Array(n), index = new Float64Array(n);
    var counts = new Int32Array(L), s = 0, ix = 0;
    for (i = 0; i < n; i++) {
      s += d.ds[i]; start[i] = s; end[i] = s + d.dur[i];
      ix += d.di[i]; index[i] = ix; counts[d.lane[i]]++;
    }
    var byLane = [], prefEnd = [], fill = new Int32Array(L), l;
    for (l = 0; l < L; l++) { byLane.push(new Int32Array(counts[l])); prefEnd.push(new Float64Array(counts[l])); }
    for (i = 0; i < n; i++) {
      l = d.lane[i];
      var p = fill[l]++;
      byLane[l][p] = i;
      prefEnd[l][p] = p ? Math.max(prefEnd[l][p - 1], end[i]) : end[i];
    }
    var tEnd = d.end;
    for (i = 0; i < n; i++) if (end[i] > tEnd) tEnd = end[i];
    return {d: d, n: n, start: start, end: end, index: index, byLane: byLane, prefEnd: prefEnd, tEnd: tEnd};
  }

  /* The first position in lane's op list whose op (or an earlier one) ends at or after t. */
  function firstVisible(m, lane, t) {
    var pm = m.prefEnd[lane], lo = 0, hi = pm.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (pm[mid] < t) lo = mid + 1; else hi = mid; }
    return lo;
  }

  /* The op of lane nearest time t (µs) within tol (µs), or -1; ops failing keep(i) are skipped. */
  function hit(m, lane, t, tol, keep) {
    if (lane < 0 || lane >= m.byLane.length) return -1;
    var ops = m.byLane[lane], best = -1, bestDist = Infinity;
    for (var p = firstVisible(m, lane, t - tol); p < ops.length; p++) {
      var i = ops[p];
      if (m.start[i] > t + tol) break;
      if (keep && !keep(i)) continue;
      var dist = t < m.start[i] ? m.start[i] - t : (t > m.end[i] ? t - m.end[i] : 0);
      if (dist <= tol && dist < bestDist) { best = i; bestDist = dist; }
    }
    return best;
  }

  function secs(us) { return (us / 1e6).toFixed(6) + " s"; }

  /* The hover text of op i. */
  function describe(m, i) {
    var d = m.d, type = d.types[d.type[i]], node = d.node[i] >= 0 ? "  node " + d.nodes[d.node[i]] : "";
    var lines = [d.fs[d.f[i]] + "  " + type + "  process " + d.lanes[d.lane[i]] + node,
      "invoke   " + secs(m.start[i]) + "  (index " + m.index[i] + ")"];
    if (d.dc[i] >= 0) {
      lines.push(type + (type.length < 6 ? "       ".slice(type.length + 1) : " ") + "  " +
                 secs(m.end[i]) + "  (index " + (m.index[i] + d.dc[i]) + ")");
      lines.push("latency  " + ((m.end[i] - m.start[i]) / 1000).toFixed(3) + " ms");
    } else {
      lines.push("never completed (open to " + secs(m.end[i]) + ")");
    }
    if (d.desc[i]) lines.push(d.desc[i]);
    return lines.join("\n");
  }

  /* A round tick step (µs) giving about `count` ticks over `span` µs. */
  function niceStep(span, count) {
    var raw = span / Math.max(1, count), p = Math.pow(10, Math.floor(Math.log10(raw)));
    var r = raw / p;
    return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * p;
  }

  function init(doc) {
    var dataEl = doc.getElementById("tl-data");
    var m = decode(JSON.parse(dataEl.textContent)), d = m.d, L = d.lanes.length;
    var canvas = doc.getElementById("tl-canvas"), overlay = doc.getElementById("tl-overlay");
    var tip = doc.getElementById("tl-tip"), wrap = doc.getElementById("tl-wrap");
    var ctx = canvas.getContext("2d"), octx = overlay.getContext("2d");
    var faultColours = d.fault_colours || {};
    var v = {t0: 0, t1: 1, top: 0, laneH: 18, W: 0, H: 0, hover: -1};
    var showType = d.types.map(function () { return true; }), showF = d.fs.map(function () { return true; });
    var keep = function (i) { return showType[d.type[i]] && showF[d.f[i]]; };
    var pending = false;

    function fit() { v.t0 = 0; v.t1 = Math.max(m.tEnd * 1.01, 1000); v.top = 0; schedule(); }
    function px(t) { return LEFT + (t - v.t0) / (v.t1 - v.t0) * (v.W - LEFT); }
    function tAt(x) { return v.t0 + (x - LEFT) / (v.W - LEFT) * (v.t1 - v.t0); }
    function laneAt(y) { return Math.floor(v.top + (y - TOP) / v.laneH); }
    function schedule() {
      if (!pending) { pending = true; root.requestAnimationFrame(function () { pending = false; draw(); }); }
    }
    function resize() {
      var r = wrap.getBoundingClientRect(), dpr = root.devicePixelRatio || 1;
      v.W = r.width; v.H = r.height;
      [canvas, overlay].forEach(function (c) {
        c.width = Math.round(r.width * dpr); c.height = Math.round(r.height * dpr);
        c.getContext("2d").setTransform(dpr, 0, 0, dpr, 0, 0);
      });
      schedule();
    }
    function clampTop() { v.top = Math.max(0, Math.min(v.top, Math.max(0, L - (v.H - TOP) / v.laneH + 1))); }

    function draw() {
      var W = v.W, H = v.H, first = Math.max(0, Math.floor(v.top));
      var last = Math.min(L - 1, Math.floor(v.top + (H - TOP) / v.laneH));
      ctx.clearRect(0, 0, W, H);
      ctx.save(); ctx.beginPath(); ctx.rect(LEFT, 0, W - LEFT, H); ctx.clip();
      for (var l = first; l <= last; l++) {                    // lane stripes
        if (l % 2) { ctx.fillStyle = "#F6F6F6"; ctx.fillRect(LEFT, TOP + (l - v.top) * v.laneH, W - LEFT, v.laneH); }
      }
      ctx.globalAlpha = 0.35;                                   // fault bands
      d.faults.forEach(function (f) {
        if (f[2] < v.t0 || f[1] > v.t1) return;
        var x0 = Math.max(LEFT, px(f[1])), x1 = Math.min(W, px(f[2]));
        ctx.fillStyle = faultColours[f[0]] || "#DDDDDD";
        ctx.fillRect(x0, TOP, Math.max(1, x1 - x0), H - TOP);
      });
      ctx.globalAlpha = 1;
      ctx.font = "11px ui-monospace, monospace"; ctx.textBaseline = "middle";
      for (l = first; l <= last; l++) drawLane(l);
      drawAxis();
      ctx.restore();
      ctx.fillStyle = "#FFF"; ctx.fillRect(0, 0, LEFT, H);     // lane labels
      ctx.fillStyle = "#444"; ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "right";
      for (l = first; l <= last; l++) {
        var name = d.lanes[l];
        ctx.fillText(name === "nemesis" ? name : "process " + name, LEFT - 6, TOP + (l - v.top + 0.5) * v.laneH);
      }
      ctx.textAlign = "left";
      drawOverlay();
    }

    function drawLane(l) {
      var ops = m.byLane[l], y = TOP + (l - v.top) * v.laneH + 2, h = v.laneH - 4;
      var runX0 = 0, runX1 = -1, runType = -1;
      function flush() {
        if (runType >= 0) { ctx.fillStyle = TYPE_COLOURS[d.types[runType]]; ctx.fillRect(runX0, y, runX1 - runX0, h); }
      }
      for (var p = firstVisible(m, l, v.t0); p < ops.length; p++) {
        var i = ops[p];
        if (m.start[i] > v.t1) break;
        if (!keep(i)) continue;
        var x0 = px(m.start[i]), x1 = Math.max(px(m.end[i]), x0 + 1), t = d.type[i];
        if (t === runType && x0 <= runX1 + 1) { runX1 = Math.max(runX1, x1); continue; }
        flush(); runX0 = x0; runX1 = x1; runType = t;
        if (x1 - x0 > 40 && h > 8) {                            // room for a label
          flush(); runType = -1;
          ctx.fillStyle = "#222";
          var text = d.fs[d.f[i]] + " " + d.desc[i], room = Math.floor((x1 - Math.max(x0, LEFT) - 6) / 6.6);
          ctx.fillText(text.length > room ? text.slice(0, Math.max(0, room - 1)) + "…" : text,
                       Math.max(x0, LEFT) + 3, y + h / 2);
        }
      }
      flush();
    }

    function drawAxis() {
      var span = v.t1 - v.t0, step = niceStep(span, (v.W - LEFT) / 110);
      var digits = Math.max(0, Math.min(6, -Math.floor(Math.log10(step / 1e6))));
      ctx.fillStyle = "#FFF"; ctx.fillRect(LEFT, 0, v.W - LEFT, TOP);
      ctx.strokeStyle = "#DDD"; ctx.fillStyle = "#444"; ctx.font = "11px system-ui, sans-serif";
      for (var t = Math.ceil(v.t0 / step) * step; t <= v.t1; t += step) {
        var x = Math.round(px(t)) + 0.5;
        ctx.beginPath(); ctx.moveTo(x, TOP - 4); ctx.lineTo(x, v.H); ctx.stroke();
        ctx.fillText((t / 1e6).toFixed(digits) + " s", x + 3, TOP / 2);
      }
    }

    function drawOverlay() {
      octx.clearRect(0, 0, v.W, v.H);
      var i = v.hover;
      if (i < 0) return;
      var y = TOP + (d.lane[i] - v.top) * v.laneH + 1, x0 = px(m.start[i]);
      octx.strokeStyle = "#000"; octx.lineWidth = 2;
      octx.strokeRect(Math.max(LEFT, x0), y, Math.max(2, px(m.end[i]) - Math.max(LEFT, x0)), v.laneH - 2);
    }

    function onHover(x, y) {
      var i = -1;
      if (x > LEFT && y > TOP) i = hit(m, laneAt(y), tAt(x), 4 * (v.t1 - v.t0) / (v.W - LEFT), keep);
      if (i !== v.hover) { v.hover = i; drawOverlay(); }
      if (i < 0) { tip.hidden = true; return; }
      tip.textContent = describe(m, i);
      tip.hidden = false;
      var tx = x + 14, ty = y + 14;
      if (tx + tip.offsetWidth > v.W) tx = Math.max(0, x - tip.offsetWidth - 14);
      if (ty + tip.offsetHeight > v.H) ty = Math.max(0, y - tip.offsetHeight - 14);
      tip.style.left = tx + "px"; tip.style.top = ty + "px";
    }

    function zoom(factor, x) {
      var t = tAt(x), span = Math.max(10, (v.t1 - v.t0) * factor);
      var frac = (x - LEFT) / (v.W - LEFT);
      v.t0 = t - frac * span; v.t1 = v.t0 + span; schedule();
    }
    function pan(dx) { var dt = dx * (v.t1 - v.t0) / (v.W - LEFT); v.t0 += dt; v.t1 += dt; schedule(); }

    var drag = null;
    overlay.addEventListener("wheel", function (e) {
      e.preventDefault();
      var x = e.offsetX;
      if (e.ctrlKey || e.metaKey) zoom(Math.exp(e.deltaY * 0.002), x);
      else if (e.shiftKey) pan(e.deltaY);
      else { pan(e.deltaX); v.top += e.deltaY / v.laneH; clampTop(); schedule(); }
    }, {passive: false});
    overlay.addEventListener("mousedown", function (e) {
      drag = {x: e.clientX, y: e.clientY}; overlay.classList.add("dragging");
    });
    root.addEventListener("mouseup", function () { drag = null; overlay.classList.remove("dragging"); });
    overlay.addEventListener("mousemove", function (e) {
      if (drag) {
        pan(drag.x - e.clientX); v.top += (drag.y - e.clientY) / v.laneH; clampTop();
        drag = {x: e.clientX, y: e.clientY}; tip.hidden = true; return;
      }
      onHover(e.offsetX, e.offsetY);
    });
    overlay.addEventListener("mouseleave", function () { tip.hidden = true; v.hover = -1; drawOverlay(); });
    overlay.addEventListener("dblclick", function (e) { zoom(0.5, e.offsetX); });
    root.addEventListener("keydown", function (e) {
      var mid = LEFT + (v.W - LEFT) / 2, k = e.key;
      if (k === "+" || k === "=") zoom(0.7, mid);
      else if (k === "-") zoom(1 / 0.7, mid);
      else if (k === "ArrowLeft") pan(-(v.W - LEFT) / 8);
      else if (k === "ArrowRight") pan((v.W - LEFT) / 8);
      else if (k === "ArrowUp") { v.top -= 3; clampTop(); schedule(); }
      else if (k === "ArrowDown") { v.top += 3; clampTop(); schedule(); }
      else if (k === "Home") fit();
    });
    doc.getElementById("tl-fit").addEventListener("click", fit);
    root.addEventListener("resize", resize);

    var legend = doc.getElementById("tl-legend");             // legend: toggles per type and f
    function toggle(label, colour, arr, k) {
      var el = doc.createElement("label"), box = doc.createElement("input");
      box.type = "checkbox"; box.checked = true;
      box.addEventListener("change", function () { arr[k] = box.checked; schedule(); });
      el.appendChild(box);
      if (colour) { var sw = doc.createElement("span"); sw.className = "sw"; sw.style.background = colour; el.appendChild(sw); }
      el.appendChild(doc.createTextNode(label + " "));
      legend.appendChild(el);
    }
    d.types.forEach(function (t, k) { toggle(t, TYPE_COLOURS[t], showType, k); });
    d.fs.forEach(function (f, k) { toggle(f, null, showF, k); });
    var seen = {};
    d.faults.forEach(function (f) {
      if (seen[f[0]]) return;
      seen[f[0]] = true;
      var el = doc.createElement("span"), sw = doc.createElement("span");
      sw.className = "sw"; sw.style.background = faultColours[f[0]] || "#DDDDDD"; sw.style.opacity = 0.6;
      el.appendChild(sw); el.appendChild(doc.createTextNode(f[0]));
      legend.appendChild(el);
    });
    /* Op i's bar in CSS pixels of the canvas, {x, y, w, h}, as drawn now (x may be off screen). */
    v.box = function (i) {
      var x0 = px(m.start[i]);
      return {x: x0, y: TOP + (d.lane[i] - v.top) * v.laneH + 2, w: Math.max(px(m.end[i]), x0 + 1) - x0, h: v.laneH - 4};
    };
    resize(); fit();
    root.TL_VIEW = v;       // for a browser test (tests/test_serve_browser.py): the view and the model
    root.TL_MODEL = m;
  }

  var TL = {decode: decode, firstVisible: firstVisible, hit: hit, describe: describe, niceStep: niceStep, init: init};
  if (typeof module !== "undefined" && module.exports) module.exports = TL;
  else {
    root.TL = TL;
    if (root.document && root.document.getElementById("tl-data")) init(root.document);
  }
})(typeof window !== "undefined" ? window : globalThis);
