// The page of a crawl (mpcrawler web): figures from /api/events, pages from
// /api/pages, buttons through POST /api/control.  Every text that comes
// from the crawl (titles, URLs, errors, host names) goes into textContent,
// never into markup.
"use strict";

const $ = (id) => document.getElementById(id);

function text(value) {
  if (value === null || value === undefined || value === "") return "–";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

function number(value) {
  return typeof value === "number" ? value.toLocaleString("en") : text(value);
}

function cell(row, value, cls) {
  const td = document.createElement("td");
  td.textContent = text(value);
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

function fill(id, rows, make, empty) {
  // Rows as they were are left in place, with their buttons: a table rebuilt
  // at every status would lose a click that lands between two of them.
  const key = JSON.stringify([rows, empty || ""]);
  if ($(id).dataset.rows === key) return;
  $(id).dataset.rows = key;
  const body = $(id).tBodies[0];
  const fresh = document.createElement("tbody");
  for (const item of rows) {
    const tr = document.createElement("tr");
    make(tr, item);
    fresh.appendChild(tr);
  }
  if (!rows.length) {
    const tr = document.createElement("tr");
    const td = cell(tr, empty || "none", "empty");
    td.colSpan = $(id).tHead.rows[0].cells.length;
    fresh.appendChild(tr);
  }
  body.replaceWith(fresh);
}

function button(label, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.addEventListener("click", onClick);
  return b;
}

function bytes(n) {
  if (typeof n !== "number") return text(n);
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function figures(s) {
  const states = s.states || {};
  const shown = [
    ["pages", number(s.pages)],
    ["pages/s", number(s.pages_per_s)],
    ["errors", number(s.errors)],
    ["queued", number(states.queued)],
    ["buffered", number(states.buffered)],
    ["downloading", number(states.downloading)],
    ["parsing", number(states.parsing)],
    ["downloaded", bytes(s.bytes)],
  ];
  const dl = document.createElement("dl");
  dl.id = "figures";
  dl.className = "figures";
  for (const [name, value] of shown) {
    const div = document.createElement("div");
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = name;
    dd.textContent = value;
    dd.dataset.figure = name;
    div.append(dt, dd);
    dl.appendChild(div);
  }
  $("figures").replaceWith(dl);
}

function chart(id, points) {
  const svg = $(id);
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  if (points.length < 2) return;
  const xs = points.map((p) => p[0]);
  const ys = points.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs) || 1;
  const top = Math.max(...ys, 1);
  const ns = "http://www.w3.org/2000/svg";
  const line = document.createElementNS(ns, "polyline");
  const coords = points.map(([x, y]) => {
    const px = ((x - x0) / Math.max(x1 - x0, 1e-9)) * 296 + 2;
    const py = 96 - (y / top) * 86;
    return `${px.toFixed(1)},${py.toFixed(1)}`;
  });
  line.setAttribute("points", coords.join(" "));
  svg.appendChild(line);
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", "4");
  label.setAttribute("y", "10");
  label.textContent = `max ${top.toLocaleString("en", { maximumFractionDigits: 1 })}`;
  svg.appendChild(label);
}

function charts(history) {
  const h = history || [];
  chart("chart-pages", h.map((p) => [p[0], p[1]]));
  chart("chart-errors", h.map((p) => [p[0], p[2]]));
  const rate = [];
  for (let i = 1; i < h.length; i++) {
    const dt = h[i][0] - h[i - 1][0];
    if (dt > 0) rate.push([h[i][0], Math.max(0, (h[i][1] - h[i - 1][1]) / dt)]);
  }
  chart("chart-rate", rate);
}

function sorted(obj) {
  return Object.entries(obj || {}).sort((a, b) => b[1] - a[1]);
}

function render(s) {
  $("job").textContent = text(s.job_dir || s.crawl);
  const state = $("state");
  const paused = s.paused && s.running;
  state.textContent = paused ? "paused" : text(s.state);
  state.className = "state " + (paused ? "paused" : s.running ? "running" : "");
  figures(s);
  charts(s.history);
  fill("statuses", sorted(s.statuses), (tr, [k, v]) => { cell(tr, k); cell(tr, number(v)); });
  fill("error-kinds", sorted(s.errors_by_kind), (tr, [k, v]) => { cell(tr, k, "bad"); cell(tr, number(v)); });
  const hosts = s.hosts || {};
  fill("busiest", hosts.busiest || [], (tr, h) => {
    cell(tr, h.host, "url");
    cell(tr, h.in_flight); cell(tr, h.held); cell(tr, h.queued);
    cell(tr, h.delay); cell(tr, h.pace); cell(tr, h.wait);
    const td = document.createElement("td");
    td.appendChild(button("Pause host", () => pauseHost(h.host)));
    tr.appendChild(td);
  });
  fill("slowed", hosts.slowed || [], (tr, h) => {
    cell(tr, h.host, "url"); cell(tr, h.pace); cell(tr, h.hold); cell(tr, h.held); cell(tr, h.in_flight);
  });
  fill("paused-hosts", s.paused_hosts || [], (tr, name) => {
    cell(tr, name, "url");
    const td = document.createElement("td");
    td.appendChild(button("Resume host", () => send("resume-host", { host: name })));
    tr.appendChild(td);
  });
  const w = s.workers || {};
  $("restarts").textContent = `${text(w.slots)} slots a worker; restarts this run: ${text(w.restarts)}, before: ${text(w.restarts_before)}`;
  fill("workers", w.processes || [], (tr, p) => { cell(tr, `#${p.index}`); cell(tr, p.pid); cell(tr, `${p.busy} of ${w.slots}`); });
  fill("settings", Object.entries(s.settings || {}), (tr, [k, v]) => { cell(tr, k); cell(tr, v); });
  const b = s.budget || {};
  fill("budget", [
    ["pages", b.pages_left], ["seconds", b.seconds_left === undefined || b.seconds_left === null ? null : Math.round(b.seconds_left)],
    ["bytes", b.bytes_left === undefined || b.bytes_left === null ? null : bytes(b.bytes_left)],
  ], (tr, [k, v]) => { cell(tr, k); cell(tr, v === null || v === undefined ? "no limit" : v); });
  fill("commands", (s.commands || []).slice().reverse(), (tr, c) => {
    const args = Object.entries(c.args || {}).map(([k, v]) => `${k}=${text(v)}`).join(" ");
    cell(tr, `${text(c.command)} ${args}`.trim()); cell(tr, c.answer);
  });
  const delay = $("delay");
  if (document.activeElement !== delay && s.settings) delay.placeholder = text(s.settings.delay);
}

async function send(command, args) {
  $("answer").textContent = `${command}: sent…`;
  try {
    const response = await fetch("/api/control", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ command, args: args || {} }),
      credentials: "same-origin",
    });
    const body = await response.json();
    $("answer").textContent = `${command}: ${text(body.answer || body.error)}`;
  } catch (e) {
    $("answer").textContent = `${command}: ${e}`;
  }
}

function pauseHost(name) {
  if (name) send("pause-host", { host: name });
}

let query = "";
async function loadPages() {
  try {
    const response = await fetch(`/api/pages?limit=50&q=${encodeURIComponent(query)}`, { credentials: "same-origin" });
    const body = await response.json();
    fill("pages", body.pages || [], (tr, p) => {
      cell(tr, p.status === null ? "–" : p.status, p.error ? "bad" : "");
      cell(tr, p.url, "url"); cell(tr, p.title); cell(tr, p.error, "bad"); cell(tr, bytes(p.bytes));
    }, query ? "no page matches" : "no page yet");
    $("pages-note").textContent = query
      ? `${body.pages.length} found${body.complete ? "" : " (the newest; more may match)"}`
      : "";
  } catch (e) {
    $("pages-note").textContent = `pages: ${e}`;
  }
}

function connect() {
  const events = new EventSource("/api/events");
  events.onmessage = (event) => render(JSON.parse(event.data));
  events.onerror = () => { $("state").textContent = "reconnecting…"; };
}

document.addEventListener("DOMContentLoaded", () => {
  $("pause").addEventListener("click", () => send("pause"));
  $("resume").addEventListener("click", () => send("resume"));
  $("stop").addEventListener("click", () => send("stop"));
  $("delay-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const value = $("delay").value.trim();
    if (value) send("set", { delay: value });
  });
  $("host-form").addEventListener("submit", (e) => {
    e.preventDefault();
    pauseHost($("host").value.trim());
  });
  $("search-form").addEventListener("submit", (e) => {
    e.preventDefault();
    query = $("search").value;
    loadPages();
  });
  connect();
  loadPages();
  setInterval(loadPages, 2000);
});
