// linearizability.html: draws the explanation embedded in #lin-data (inlined by
// checkers/linearizability/html.py). Porcupine's view: a lane per process, a bar
// per op, the shown linearization numbered and green, the stuck op red.
// Everything from the history goes into the page through textContent or
// attributes, never as markup.
'use strict';
(function () {
  const SVG = 'http://www.w3.org/2000/svg';
  const ROW_H = 36;        // one sub-row of a lane
  const BAR_Y = 14;        // bar top inside its row
  const BAR_H = 18;
  const AXIS_H = 26;
  const LABEL_W = 96;
  const TAIL = 150;        // px past the last time: where crashed ops end
  const LP_GAP = 12;       // min px between successive linearization points
  const TICK_PX = 90;      // aim for a tick every this many px
  const MAX_W = 400000;    // widest chart (px)
  const CHAR_W = 6.7;      // px per char of the 11px monospace font

  const data = JSON.parse(document.getElementById('lin-data').textContent);
  const ns = data.time_unit === 'ns';
  const tip = document.getElementById('tooltip');
  const main = document.getElementById('partitions');

  function svg(tag, attrs, parent) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function h(tag, cls, text, parent) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function show(v) { return typeof v === 'string' ? v : JSON.stringify(v); }
  function fmtTime(t) {
    if (t === null || t === undefined) return '+\u221e (crashed)';
    return ns ? (t / 1e6).toFixed(3) + ' ms' : 'event ' + t;
  }
  function nice(x) {
    const p = Math.pow(10, Math.floor(Math.log10(x)));
    for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
    return 10 * p;
  }
  function plural(n, word) { return n + ' ' + word + (n === 1 ? '' : word.endsWith('s') ? 'es' : 's'); }
  function partName(key) { return key === null ? 'whole history' : 'partition key=' + show(key); }
  function opName(op) { return op.index !== null && op.index !== undefined ? 'op #' + op.index : 'op id=' + op.id; }
  function cmpProc(a, b) {
    const na = typeof a === 'number', nb = typeof b === 'number';
    if (na && nb) return a - b;
    if (na !== nb) return na ? -1 : 1;
    return String(a).localeCompare(String(b));
  }

  // --- the global x scale: real time or event order (distinct times ranked) ---
  const allTimes = [];
  for (const p of data.partitions) for (const op of p.ops) {
    allTimes.push(op.call);
    if (op.return !== null) allTimes.push(op.return);
  }
  const times = [...new Set(allTimes)].sort((a, b) => a - b);
  const rank = new Map(times.map((t, i) => [t, i]));
  const t0 = times.length ? times[0] : 0;
  const t1 = times.length > 1 ? times[times.length - 1] : t0 + 1;
  const view = {mode: 'time', k: 1};
  // u: a position in scale units (time since t0, or a rank); x = u * k.
  function uOf(t) { return view.mode === 'time' ? t - t0 : rank.get(t); }
  function spanU() { return view.mode === 'time' ? t1 - t0 : Math.max(1, times.length - 1); }
  function tOfU(u) {
    if (view.mode === 'time') return u + t0;
    const i = Math.max(0, Math.min(times.length - 1, Math.floor(u)));
    const j = Math.min(times.length - 1, i + 1);
    return times[i] + (times[j] - times[i]) * Math.max(0, Math.min(1, u - i));
  }
  function uOfT(t) {  // any time, also one between two ranked times
    if (view.mode === 'time') return t - t0;
    let lo = 0, hi = times.length - 1;
    if (!times.length) return 0;
    if (t <= times[0]) return 0;
    if (t >= times[hi]) return hi;
    while (hi - lo > 1) { const m = (lo + hi) >> 1; if (times[m] <= t) lo = m; else hi = m; }
    return lo + (t - times[lo]) / (times[hi] - times[lo]);
  }
  function x(t) { return uOf(t) * view.k; }
  function xEnd() { return spanU() * view.k + TAIL - 12; }
  function availW() {
    const s = document.querySelector('.scroller');
    const w = s ? s.clientWidth : (window.innerWidth - 40 - LABEL_W);
    return Math.max(200, w - TAIL - 16);
  }
  function fitK() { return availW() / spanU(); }
  function maxK() {
    const cap = view.mode === 'time' ? fitK() * 5000 : 140;
    return Math.max(fitK(), Math.min(cap, MAX_W / spanU()));
  }
  function defaultK() {
    // Fit when the typical op is wide enough for a typical label, else zoom until it is.
    const d = [], chars = [];
    for (const p of data.partitions) for (const op of p.ops) {
      chars.push(op.desc.length);
      if (op.return !== null) d.push(uOf(op.return) - uOf(op.call));
    }
    d.sort((a, b) => a - b);
    chars.sort((a, b) => a - b);
    const med = d.length ? d[d.length >> 1] : 0;
    const want = Math.min(110, Math.max(40, (chars.length ? chars[chars.length >> 1] : 0) * CHAR_W + 12));
    const f = fitK();
    if (!(med > 0) || med * f >= want * 0.6) return f;
    return Math.min(maxK(), want / med);
  }

  // --- per partition state ---
  const parts = data.partitions.map((p, pi) => {
    const byId = new Map(p.ops.map((op) => [op.id, op]));
    // linearizations[0] is the checker's explanation (the prefix the stuck op
    // could not follow); for a valid partition it is the full linearization.
    let longest = 0;
    if (!p.stuck) {
      p.linearizations.forEach((lin, i) => { if (lin.length > p.linearizations[longest].length) longest = i; });
    }
    // Lanes: one per process; ops of a process that overlap go to extra rows.
    const procs = [...new Set(p.ops.map((op) => op.process))].sort(cmpProc);
    const lanes = procs.map((proc) => ({proc, rows: []}));
    const laneOf = new Map(procs.map((proc, i) => [proc, lanes[i]]));
    const rowOf = new Map();
    for (const op of [...p.ops].sort((a, b) => a.call - b.call)) {
      const lane = laneOf.get(op.process);
      let r = lane.rows.findIndex((end) => end < op.call);
      if (r < 0) { r = lane.rows.length; lane.rows.push(0); }
      lane.rows[r] = op.return === null ? Infinity : op.return;
      rowOf.set(op.id, {lane, r});
    }
    let y = AXIS_H;
    for (const lane of lanes) { lane.y = y; y += lane.rows.length * ROW_H; }
    return {p, pi, byId, lanes, rowOf, height: y + 6, longest, sel: longest, selOp: null,
      status: '', stuckOp: p.stuck ? byId.get(p.stuck.id) : null};
  });
  function opY(st, op) { const {lane, r} = st.rowOf.get(op.id); return lane.y + r * ROW_H; }

  // --- page skeleton ---
  // The fades of crashed ops, shared by every chart.
  const defs = svg('defs', {}, svg('svg', {width: 0, height: 0, style: 'position:absolute'}, document.body));
  for (const [name, colour] of [['lin', '#a5d6a7'], ['other', '#e3e3e3'], ['stuck', '#ef9a9a']]) {
    const g = svg('linearGradient', {id: 'fade-' + name, x1: 0, x2: 1, y1: 0, y2: 0}, defs);
    svg('stop', {offset: '0%', 'stop-color': colour, 'stop-opacity': 1}, g);
    svg('stop', {offset: '55%', 'stop-color': colour, 'stop-opacity': 1}, g);
    svg('stop', {offset: '100%', 'stop-color': colour, 'stop-opacity': 0}, g);
  }
  for (const st of parts) {
    const {p, pi} = st;
    const box = h('section', 'partition', null, main);
    box.id = 'part-' + pi;
    const head = h('div', 'phead', null, box);
    h('h2', null, partName(p.key), head);
    const verdict = p.valid === true ? 'valid' : p.valid === false ? 'INVALID' : 'unknown';
    h('span', 'pill ' + (p.valid === true ? 'ok' : p.valid === false ? 'bad' : 'unk'), verdict, head);
    h('span', 'pmeta', plural(p.ops.length, 'op') + ' \u00b7 ' + plural(st.lanes.length, 'process') + ' \u00b7 initial state: ' +
      show(p.initial_state), head);
    const ctl = h('div', 'pctl', null, head);
    if (p.linearizations.length) {
      h('span', null, 'showing linearization ', ctl);
      const sel = h('select', null, null, ctl);
      p.linearizations.forEach((lin, i) => {
        const o = h('option', null, '#' + (i + 1) + ': ' + lin.length + ' of ' + p.ops.length + ' ops' +
          (i === st.longest ? (st.p.stuck ? ' (the explanation)' : ' (longest)') : ''), sel);
        o.value = String(i);
      });
      sel.addEventListener('change', () => { st.sel = Number(sel.value); st.selOp = null; st.status = ''; draw(st); });
      st.select = sel;
    } else {
      h('span', null, 'no linearization found', ctl);
    }
    st.statusEl = h('span', 'pstatus', '', ctl);
    if (st.stuckOp) {
      const s = p.stuck;
      h('div', 'pstuck', 'after ' + s.after + ' linearized op' + (s.after === 1 ? '' : 's') + ' (state: ' +
        show(s.state) + '), ' + opName(st.stuckOp) + ' ' + (s.desc ?? st.stuckOp.desc) + ' by process ' +
        show(s.process ?? st.stuckOp.process) + ' cannot be placed' +
        (s.needs !== null && s.needs !== undefined && s.needs !== '' ? ': it needs ' + show(s.needs) : ''), head);
    }
    if (!p.ops.length) { h('div', 'empty', 'no ops', box); continue; }
    const body = h('div', 'pbody', null, box);
    st.labels = svg('svg', {width: LABEL_W, class: 'labels-svg'}, h('div', 'labels', null, body));
    st.scroller = h('div', 'scroller', null, body);
    st.chart = svg('svg', {}, st.scroller);
    st.scroller.addEventListener('wheel', (e) => {
      if (!e.ctrlKey && !e.metaKey) return;
      e.preventDefault();
      const rect = st.scroller.getBoundingClientRect();
      zoomTo(view.k * Math.exp(-e.deltaY * 0.0025), st, e.clientX - rect.left);
    }, {passive: false});
  }

  // --- drawing one partition ---
  function draw(st) {
    const {p} = st;
    if (st.select) st.select.value = String(st.sel);
    st.statusEl.textContent = st.status;
    if (!st.chart) return;
    const lin = p.linearizations[st.sel] || [];
    const pos = new Map(lin.map((step, i) => [step.id, i]));
    const W = Math.ceil(Math.max(xEnd() + 16, st.scroller ? st.scroller.clientWidth : 0));
    const H = st.height;

    // Lane labels (a fixed column left of the scroller).
    const L = st.labels;
    L.replaceChildren();
    svg('rect', {x: 0, y: 0, width: LABEL_W, height: H, class: 'bg'}, L);
    svg('text', {x: LABEL_W - 8, y: 16, 'text-anchor': 'end', class: 'lane-caption'}, L).textContent =
      ns ? 'time (ms)' : 'event';
    st.lanes.forEach((lane, i) => {
      if (i % 2) svg('rect', {x: 0, y: lane.y, width: LABEL_W, height: lane.rows.length * ROW_H, class: 'stripe'}, L);
      const t = svg('text', {x: LABEL_W - 10, y: lane.y + BAR_Y + BAR_H / 2 + 4, 'text-anchor': 'end', class: 'lane-label'}, L);
      const name = 'process ' + show(lane.proc);
      t.textContent = name.length > 14 ? name.slice(0, 13) + '\u2026' : name;
      svg('title', {}, t).textContent = name;
    });
    svg('line', {x1: 0, x2: LABEL_W, y1: AXIS_H - 0.5, y2: AXIS_H - 0.5, class: 'axis-line'}, L);
    L.setAttribute('height', H);

    const C = st.chart;
    C.replaceChildren();
    C.setAttribute('width', W);
    C.setAttribute('height', H);
    const bg = svg('rect', {x: 0, y: 0, width: W, height: H, class: 'bg'}, C);
    bg.addEventListener('click', () => {
      st.sel = st.longest; st.selOp = null; st.status = ''; draw(st);
    });
    st.lanes.forEach((lane, i) => {
      if (i % 2) svg('rect', {x: 0, y: lane.y, width: W, height: lane.rows.length * ROW_H, class: 'stripe', 'pointer-events': 'none'}, C);
    });
    drawAxis(C, W, H);

    // Bars.
    const xe = xEnd();
    for (const op of p.ops) {
      const y = opY(st, op);
      const x0 = x(op.call);
      const crashed = op.return === null;
      const x1 = crashed ? xe : Math.max(x(op.return), x0 + 3);
      const stuck = st.stuckOp && st.stuckOp.id === op.id;
      const cls = ['op', stuck ? 'stuck' : pos.has(op.id) ? 'lin' : 'other'];
      if (crashed) cls.push('crashed');
      if (st.selOp === op.id) cls.push('selected');
      const g = svg('g', {class: cls.join(' '), 'data-id': op.id}, C);
      svg('rect', {x: x0, y: y + BAR_Y, width: x1 - x0, height: BAR_H, rx: 3}, g);
      const label = op.desc + (crashed ? '  \u00b7 crashed' : '');
      const room = Math.floor((x1 - x0 - 8) / CHAR_W);
      if (room >= Math.min(4, label.length)) {
        svg('text', {x: x0 + 5, y: y + BAR_Y + BAR_H / 2 + 4}, g).textContent =
          label.length > room ? label.slice(0, room - 1) + '\u2026' : label;
      }
      g.addEventListener('mouseenter', (e) => showTip(st, op, e));
      g.addEventListener('mousemove', moveTip);
      g.addEventListener('mouseleave', () => { tip.hidden = true; });
      g.addEventListener('click', (e) => { e.stopPropagation(); selectFor(st, op); });
    }

    // Linearization points: in order, each inside its op, LP_GAP px after the previous one.
    const pts = [];
    let prev = -Infinity;
    for (const step of lin) {
      const op = st.byId.get(step.id);
      const lo = x(op.call) + 7;
      const hi = op.return === null ? xe - 10 : Math.max(lo, x(op.return) - 7);
      const px = Math.min(Math.max(lo, prev + LP_GAP), hi);
      prev = px;
      pts.push([px, opY(st, op) + BAR_Y - 4]);
    }
    let stuckPt = null;
    if (st.stuckOp && lin.length === p.stuck.after) {
      const op = st.stuckOp;
      const lo = x(op.call) + 7;
      const hi = op.return === null ? xe - 10 : Math.max(lo, x(op.return) - 7);
      stuckPt = [Math.min(Math.max(lo, prev + LP_GAP), hi), opY(st, op) + BAR_Y - 4];
    }
    if (pts.length > 1) svg('polyline', {points: pts.map((q) => q.join(',')).join(' '), class: 'lp-line'}, C);
    if (stuckPt && pts.length) {
      const q = pts[pts.length - 1];
      svg('path', {d: 'M' + q[0] + ',' + q[1] + ' L' + stuckPt[0] + ',' + stuckPt[1], class: 'stuck-line'}, C);
    }
    pts.forEach((q, i) => {
      const b = svg('g', {class: 'badge'}, C);
      const label = String(i + 1);
      svg('circle', {cx: q[0], cy: q[1], r: label.length > 2 ? 9.5 : 7.5}, b);
      svg('text', {x: q[0], y: q[1] + 3.2, 'text-anchor': 'middle'}, b).textContent = label;
    });
    if (stuckPt) {
      const b = svg('g', {class: 'badge stuck'}, C);
      svg('circle', {cx: stuckPt[0], cy: stuckPt[1], r: 7.5}, b);
      svg('text', {x: stuckPt[0], y: stuckPt[1] + 4, 'text-anchor': 'middle'}, b).textContent = '\u2717';
    }
  }

  function drawAxis(C, W, H) {
    const ticks = [];  // [x, label]
    if (view.mode === 'time') {
      const unitsPerTick = TICK_PX / view.k;
      const step = ns ? nice(unitsPerTick / 1e6) * 1e6 : Math.max(1, nice(unitsPerTick));
      const digits = ns ? Math.max(0, -Math.floor(Math.log10(step / 1e6) + 1e-9)) : 0;
      for (let t = Math.ceil(t0 / step) * step; t <= t1 + 1e-9; t += step) {
        ticks.push([x(t), ns ? (t / 1e6).toFixed(digits) : String(t)]);
      }
    } else {
      const every = Math.max(1, Math.ceil(TICK_PX / view.k));
      for (let i = 0; i < times.length; i += every) {
        const t = times[i];
        ticks.push([i * view.k, ns ? (t / 1e6).toFixed(t % 1e6 ? 3 : 0) : String(t)]);
      }
    }
    for (const [tx, label] of ticks) {
      svg('line', {x1: tx + 0.5, x2: tx + 0.5, y1: AXIS_H - 5, y2: H, class: 'grid'}, C);
      const t = svg('text', {x: tx + 3, y: AXIS_H - 9, class: 'tick'}, C);
      t.textContent = label;
    }
    svg('line', {x1: 0, x2: W, y1: AXIS_H - 0.5, y2: AXIS_H - 0.5, class: 'axis-line'}, C);
  }

  // --- interaction ---
  function selectFor(st, op) {
    const k = st.p.largest[String(op.id)];
    st.selOp = op.id;
    if (k === undefined) {
      st.status = opName(op) + ' is in no linearization found';
    } else {
      st.sel = k;
      st.status = 'longest linearization containing ' + opName(op) + ': ' +
        st.p.linearizations[k].length + ' ops (click the background to go back)';
    }
    draw(st);
  }

  function row(table, key, value) {
    const tr = h('tr', null, null, table);
    h('td', null, key, tr);
    h('td', 'v', value, tr);
  }
  function showTip(st, op, e) {
    const p = st.p;
    tip.replaceChildren();
    h('div', 'tt-title', op.desc, tip);
    const t = h('table', null, null, tip);
    row(t, 'op', opName(op) + (op.index !== null && op.index !== undefined ? ' (id ' + op.id + ')' : ''));
    row(t, 'process', show(op.process));
    row(t, 'call', fmtTime(op.call));
    row(t, 'return', fmtTime(op.return));
    if (op.return !== null && ns) row(t, 'latency', ((op.return - op.call) / 1e6).toFixed(3) + ' ms');
    const lin = p.linearizations[st.sel] || [];
    const i = lin.findIndex((step) => step.id === op.id);
    if (i >= 0) {
      row(t, 'linearized', 'step ' + (i + 1) + ' of ' + lin.length + ' (linearization #' + (st.sel + 1) + ')');
      row(t, 'state before', show(i === 0 ? p.initial_state : lin[i - 1].state));
      row(t, 'state after', show(lin[i].state));
    }
    if (st.stuckOp && st.stuckOp.id === op.id) {
      row(t, 'state', show(p.stuck.state) + ' (after ' + p.stuck.after + ' linearized ops)');
      if (p.stuck.needs !== null && p.stuck.needs !== undefined) row(t, 'needs', show(p.stuck.needs));
      h('div', 'tt-bad', 'cannot be placed after the longest linearizable prefix', tip);
    } else if (i < 0) {
      const k = p.largest[String(op.id)];
      h('div', 'tt-note', k === undefined ? 'in no linearization found' :
        'not in this linearization; click to show the longest one containing it (' +
        p.linearizations[k].length + ' ops)', tip);
    }
    tip.hidden = false;
    moveTip(e);
  }
  function moveTip(e) {
    const r = tip.getBoundingClientRect();
    let left = e.clientX + 14, top = e.clientY + 16;
    if (left + r.width > window.innerWidth - 8) left = Math.max(4, e.clientX - r.width - 14);
    if (top + r.height > window.innerHeight - 8) top = Math.max(4, e.clientY - r.height - 16);
    tip.style.left = left + 'px';
    tip.style.top = top + 'px';
  }

  // --- zoom and scale ---
  const slider = document.getElementById('zoom');
  const zoomLabel = document.getElementById('zoom-label');
  function sliderFromK() {
    const lo = fitK(), hi = maxK();
    slider.disabled = hi <= lo * 1.0001;
    slider.value = String(slider.disabled ? 0 : Math.round(1000 * Math.log(view.k / lo) / Math.log(hi / lo)));
    const fit = view.k / lo;
    zoomLabel.textContent = (fit < 1.05 ? 'fit' : '\u00d7' + (fit < 10 ? fit.toFixed(1) : Math.round(fit))) +
      (view.mode === 'time' ? ' \u00b7 ' + (ns ? (view.k * 1e6).toFixed(view.k * 1e6 < 10 ? 2 : 0) + ' px/ms'
        : view.k.toFixed(1) + ' px/event') : ' \u00b7 ' + view.k.toFixed(1) + ' px/step');
  }
  function drawAll() { for (const st of parts) draw(st); sliderFromK(); }
  // Change the scale (k: px per unit, or a function computing it after `change`), keeping the time under `anchorPx` of `anchorSt`'s scroller (else the
  // centre of each scroller) where it was.
  function zoomTo(k, anchorSt, anchorPx, change) {
    const anchors = parts.filter((st) => st.scroller).map((st) => {
      const a = st === anchorSt && anchorPx !== undefined ? anchorPx : st.scroller.clientWidth / 2;
      return [st, a, tOfU((st.scroller.scrollLeft + a) / view.k)];
    });
    if (change) change();
    view.k = Math.max(fitK(), Math.min(maxK(), typeof k === 'function' ? k() : k));
    drawAll();
    for (const [st, a, t] of anchors) st.scroller.scrollLeft = uOfT(t) * view.k - a;
  }
  slider.addEventListener('input', () => {
    const lo = fitK(), hi = maxK();
    zoomTo(lo * Math.pow(hi / lo, Number(slider.value) / 1000));
  });
  document.getElementById('fit').addEventListener('click', () => zoomTo(fitK()));
  const scaleSel = document.getElementById('scale');
  if (!ns) scaleSel.options[0].textContent = 'event positions';
  scaleSel.addEventListener('change', () => {
    zoomTo(defaultK, undefined, undefined, () => { view.mode = scaleSel.value; });
  });

  // Show an op: scroll its partition into view and the op to 40% of the scroller.
  function reveal(st, op, smooth) {
    if (!st.scroller) return;
    st.scroller.scrollLeft = Math.max(0, x(op.call) - st.scroller.clientWidth * 0.4);
    if (smooth) {
      st.scroller.parentNode.parentNode.scrollIntoView({behavior: 'smooth', block: 'start'});
      const box = st.scroller.parentNode.parentNode;
      box.classList.add('flash');
      setTimeout(() => box.classList.remove('flash'), 1200);
    }
  }
  for (const a of document.querySelectorAll('.problems a[data-part]')) {
    a.addEventListener('click', (e) => {
      const st = parts[Number(a.dataset.part)];
      if (!st || !st.stuckOp) return;
      e.preventDefault();
      st.sel = st.longest; st.selOp = null; st.status = '';
      draw(st);
      reveal(st, st.stuckOp, true);
    });
  }

  document.getElementById('toolbar').hidden = false;
  view.k = defaultK();
  drawAll();
  for (const st of parts) if (st.stuckOp) reveal(st, st.stuckOp, false);
  let resizeTimer = null;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => zoomTo(view.k), 150);
  });
}());
