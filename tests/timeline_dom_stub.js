// Runs harness/reports/timeline_assets/timeline.js's init() against a stub DOM and canvas (no browser;
// tests/test_serve_timeline.py): it catches runtime errors in the drawing and interaction
// code and prints, as JSON, what was drawn and what the hover showed.
// argv: timeline.js, the page's data (JSON file), then optional hover x, y (CSS px).
const fs = require("fs");
const TL = require(require("path").resolve(process.argv[2]));
const data = fs.readFileSync(process.argv[3], "utf8");
let rects = 0, texts = 0;
function ctx() {
  return new Proxy({}, {get(t, k) {
    if (k === "fillRect") return () => { rects++; };
    if (k === "fillText") return () => { texts++; };
    if (k in t) return t[k];
    return () => {};
  }, set(t, k, v) { t[k] = v; return true; }});
}
const listeners = {};
function el(id) {
  return {id, hidden: false, style: {}, textContent: id === "tl-data" ? data : "", offsetWidth: 100, offsetHeight: 40,
    classList: {add() {}, remove() {}}, children: [],
    appendChild(c) { this.children.push(c); }, getContext: () => ctx(),
    getBoundingClientRect: () => ({width: 1200, height: 700}),
    addEventListener(type, fn) { (listeners[id + ":" + type] = listeners[id + ":" + type] || []).push(fn); }};
}
const els = {};
const doc = {getElementById: (id) => (els[id] = els[id] || el(id)), createElement: () => el("x"), createTextNode: (t) => ({t})};
global.requestAnimationFrame = (fn) => fn();
global.devicePixelRatio = 1;
global.addEventListener = (type, fn) => { (listeners["window:" + type] = listeners["window:" + type] || []).push(fn); };
TL.init.call(null, doc);
const fire = (k, e) => (listeners[k] || []).forEach((fn) => fn(Object.assign({preventDefault() {}}, e)));
const out = {rects_fit: rects, texts_fit: texts};
const hx = Number(process.argv[4] || 600), hy = Number(process.argv[5] || 24 + 18 * 1.5);
fire("tl-overlay:mousemove", {offsetX: hx, offsetY: hy});
out.tip = els["tl-tip"].textContent; out.tip_hidden = els["tl-tip"].hidden; out.hover = global.TL_VIEW.hover;
fire("tl-overlay:wheel", {offsetX: 600, offsetY: 300, deltaY: -800, ctrlKey: true});
fire("tl-overlay:mousedown", {clientX: 500, clientY: 300});
fire("tl-overlay:mousemove", {clientX: 400, clientY: 280});
fire("window:mouseup", {});
fire("window:keydown", {key: "+"});
fire("window:keydown", {key: "ArrowDown"});
fire("tl-overlay:wheel", {offsetX: 600, offsetY: 300, deltaY: 200});
fire("window:keydown", {key: "Home"});
console.log(JSON.stringify(Object.assign(out, {rects_total: rects, view: global.TL_VIEW})));
