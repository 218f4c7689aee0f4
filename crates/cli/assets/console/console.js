// kroupier console: draws the snapshots the console's server sends (Server-Sent Events).
// All the diffing (moves, unowned times, rebalances, failovers) happens on the server, in
// crates/cli/src/console/board.rs; this script only renders and keeps the view's own state
// (search, collapsed workers, the open worker panel).
"use strict";

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) =>
  ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const secs = (ms) => (ms / 1000).toFixed(2) + " s";
const clock = (ms) => new Date(ms).toLocaleTimeString();
// Columns with more tasks than this start collapsed (state counts only).
const AUTO_COLLAPSE = 60;
// How long a moved task stays highlighted.
const HIGHLIGHT_MS = 10000;

const view = { snapshot: null, collapsed: new Map(), search: "", byState: false, panel: null };

function draw() {
  const s = view.snapshot;
  if (!s) return;
  $("summary").innerHTML =
    `group <b>${esc(s.group)}</b> at ${esc(s.bootstrap)} · state <b>${esc(s.state ?? "?")}</b>` +
    ` · generation <b>${s.generation ?? "-"}</b> · leader <b>${esc(s.leader ?? "-")}</b>` +
    ` · ${esc(s.protocol ?? "")} · ${s.workers.length} workers · ${s.owned} tasks owned` +
    (s.unplaced.length ? ` · <b>${s.unplaced.length} unplaced</b>` : "");
  $("error").hidden = !s.error;
  $("error").textContent = s.error ?? "";
  drawWorkers(s);
  drawFailovers(s);
  drawTimeline(s);
  if (view.panel) drawPanel();
}

function recentlyMoved(s) {
  const moved = new Set();
  const now = Date.now();
  for (const r of s.timeline) {
    if (r.ended_ms && now - r.ended_ms > HIGHLIGHT_MS) break;
    for (const m of r.moves) moved.add(m.task);
  }
  return moved;
}

function drawWorkers(s) {
  const q = view.search.toLowerCase();
  const moved = recentlyMoved(s);
  const columns = [];
  if (s.unplaced.length) {
    columns.push(column({
      name: "unplaced", cls: "unplaced", title: "Unplaced", meta: "tasks no worker owns now",
      tasks: s.unplaced.map((u) => ({ id: u.id, state: "UNPLACED",
        tip: `unowned for ${secs(u.unowned_ms)}: ${u.reason}` })),
    }, q, moved));
  }
  for (const w of s.workers) {
    const link = w.status_addr
      ? `<a data-panel="${esc(w.name)}" title="This worker's /status, fetched through the console">status</a> · ` +
        `<span title="The worker's own status API">${esc(w.status_addr)}</span>`
      : "no status API";
    const probe = w.probe === "ok" || w.probe === "none" ? "" : ` · <span class="counts">${esc(w.probe)}</span>`;
    columns.push(column({
      name: w.name, cls: w.probe === "refused" ? "gone" : "",
      title: esc(w.name) + (w.leader ? ' <span class="badge leader" title="group leader">leader</span>' : "") +
        (w.rebalancing ? ' <span class="badge">rebalancing</span>' : ""),
      meta: `${link}${probe}`,
      tasks: w.tasks.map((t) => ({ id: t.id, state: t.state, leaving: t.leaving,
        tip: `${t.state}${t.restarts ? `, ${t.restarts} restarts` : ""}` +
          `${t.last_error ? `, last error: ${t.last_error}` : ""}${t.leaving ? " (no longer assigned here)" : ""}` })),
    }, q, moved));
  }
  $("workers").innerHTML = columns.join("");
}

function column(c, q, moved) {
  const nameHit = q && c.name.toLowerCase().includes(q);
  const tasks = q && !nameHit ? c.tasks.filter((t) => t.id.toLowerCase().includes(q)) : c.tasks;
  const hidden = q && !nameHit && tasks.length === 0;
  const collapsed = !q && (view.collapsed.get(c.name) ?? c.tasks.length > AUTO_COLLAPSE);
  const chip = (t) =>
    `<span class="task s-${esc(t.state)}${t.leaving ? " leaving" : ""}${moved.has(t.id) ? " moved" : ""}"` +
    ` data-task="${esc(t.id)}" title="${esc(t.tip)}">${esc(t.id)}</span>`;
  let body;
  if (collapsed) {
    const counts = {};
    for (const t of c.tasks) counts[t.state] = (counts[t.state] ?? 0) + 1;
    const order = ["FAILED", "UNPLACED", "RUNNING", "STARTING", "RESTARTING", "STOPPING", "ASSIGNED"];
    const rank = (k) => (order.indexOf(k) + order.length + 1) % (order.length + 1);
    const entries = Object.entries(counts).sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b));
    body = `<div class="counts">${entries.map(([k, n]) =>
      `<span class="${k === "FAILED" ? "count-failed" : ""}">${n} ${esc(k.toLowerCase())}</span>`).join(", ") || "no tasks"}` +
      ` (collapsed; click the name)</div>`;
  } else if (view.byState) {
    const groups = {};
    for (const t of tasks) (groups[t.state] ??= []).push(t);
    body = Object.keys(groups).sort().map((k) =>
      `<div class="group-label">${esc(k.toLowerCase())} (${groups[k].length})</div>${groups[k].map(chip).join("")}`).join("");
  } else {
    body = tasks.map(chip).join("");
  }
  return `<div class="worker ${c.cls}${hidden ? " hidden" : ""}" data-worker="${esc(c.name)}">` +
    `<h3 data-toggle="${esc(c.name)}"><span class="name">${c.title}</span>` +
    `<span class="badge count">${c.tasks.length}</span></h3>` +
    `<div class="meta">${c.meta}</div><div class="tasks">${body}</div></div>`;
}

function drawFailovers(s) {
  $("failovers").innerHTML = s.failovers.length === 0
    ? '<div class="counts">No worker has died since the console started.</div>'
    : s.failovers.map((f) => `<div class="entry" data-failover="${esc(f.worker)}">` +
      `<div class="when">${clock(f.detected_ms)} · ${esc(f.worker)} ${esc(f.via)}</div>` +
      (f.failover_ms == null
        ? `<div>its ${f.tasks} tasks are moving…</div>`
        : f.failover_ms === 0
          ? `<div><span class="big">≤ ${secs(f.done_ms - f.last_seen_ms)}</span> until its ${f.tasks} tasks had new owners` +
            ` <span class="counts">(gone and replaced within one poll)</span></div>`
          : `<div><span class="big">${secs(f.failover_ms)}</span> until its ${f.tasks} tasks had new owners</div>`) +
      `</div>`).join("");
}

function drawTimeline(s) {
  $("timeline").innerHTML = s.timeline.length === 0
    ? '<div class="counts">No rebalance since the console started.</div>'
    : s.timeline.map((r) => {
      const who = [r.joined.length ? `joined: ${r.joined.map(esc).join(", ")}` : "",
        r.left.length ? `left: ${r.left.map(esc).join(", ")}` : ""].filter(Boolean).join("; ");
      const took = r.ended_ms == null ? " · in progress"
        : r.ended_ms === r.started_ms ? " · between two polls" : ` · took ${secs(r.ended_ms - r.started_ms)}`;
      const moves = r.moves.map((m) => `<li>${esc(m.task)}: ${esc(m.from)} → ${esc(m.to)}` +
        ` <span class="counts">(${m.unowned_ms ? `unowned ${secs(m.unowned_ms)}` : "handed over between two polls"})</span></li>`).join("");
      const more = r.moved > r.moves.length ? `<li>… and ${r.moved - r.moves.length} more</li>` : "";
      return `<div class="entry" data-rebalance="${r.generation ?? ""}">` +
        `<div class="when">${clock(r.started_ms)}${took}</div>` +
        `<div>generation ${r.from_generation ?? "-"} → ${r.generation ?? "…"}${who ? " · " + who : ""}</div>` +
        (r.moved ? `<details${r.moved <= 12 ? " open" : ""}><summary>${r.moved} moved</summary><ul>${moves}${more}</ul></details>`
          : '<div class="counts">no task moved</div>') + `</div>`;
    }).join("");
}

async function drawPanel() {
  const name = view.panel;
  $("panel").hidden = false;
  $("panel-title").textContent = `worker ${name}`;
  const answer = await fetch(`/api/workers/${encodeURIComponent(name)}/status`);
  if (view.panel !== name) return;
  if (!answer.ok) {
    $("panel-body").textContent = await answer.text();
    return;
  }
  const st = await answer.json();
  const rows = (st.tasks ?? []).map((t) => `<tr><td>${esc(t.task_id)}</td><td>${esc(t.state)}</td>` +
    `<td>${t.restarts}</td><td>${esc(t.last_error ?? "")}</td>` +
    `<td><button type="button" data-restart="${esc(t.task_id)}">restart</button>` +
    (t.state === "PAUSED"
      ? `<button type="button" data-act="resume" data-task="${esc(t.task_id)}">resume</button>`
      : `<button type="button" data-act="pause" data-task="${esc(t.task_id)}">pause</button>`) +
    `<button type="button" data-act="delete" data-task="${esc(t.task_id)}">delete</button></td></tr>`).join("");
  $("panel-body").innerHTML =
    `<p>generation ${st.generation ?? "-"} · leader ${esc(st.leader ?? "-")} · ` +
    `${st.rebalancing ? "rebalancing" : "stable"}${st.shutting_down ? " · shutting down" : ""}</p>` +
    `<div id="panel-message" class="counts">${esc(view.message ?? "")}</div>` +
    `<table><tr><th>task</th><th>state</th><th>restarts</th><th>last error</th><th></th></tr>${rows}</table>` +
    `<details><summary>raw /status</summary><pre>${esc(JSON.stringify(st, null, 2))}</pre></details>`;
}

// Sends a write with the console's header and the status token, asking for the token once
// when a worker answers 401.
async function write(method, url, body) {
  const send = (token) => fetch(url, { method, body, headers: Object.assign(
    { "X-Kroupier-Console": "1" }, body ? { "Content-Type": "application/json" } : {},
    token ? { Authorization: `Bearer ${token}` } : {}) });
  let token = sessionStorage.getItem("kroupier-status-token");
  let answer = await send(token);
  if (answer.status === 401) {
    token = prompt("The workers' status API needs its bearer token (kroupier.status.token):");
    if (token) {
      sessionStorage.setItem("kroupier-status-token", token);
      answer = await send(token);
    }
  }
  return answer;
}

// Shows the outcome of an action; kept in the view, as the panel is redrawn with every snapshot.
function say(text) {
  view.message = text;
  const message = $("panel-message");
  if (message) message.textContent = text;
}

async function restart(task) {
  const worker = view.panel;
  const url = `/api/workers/${encodeURIComponent(worker)}/tasks/${encodeURIComponent(task)}/restart`;
  const answer = await write("POST", url);
  say(`restart ${task}: ${answer.status} ${await answer.text()}`);
}

// pause, resume or delete, through the group's task store.
async function act(action, task) {
  const base = `/api/tasks/${encodeURIComponent(task)}`;
  const answer = action === "delete"
    ? await write("DELETE", base)
    : await write("POST", `${base}/${action}`);
  say(`${action} ${task}: ${answer.status} ${await answer.text()}`);
}

function openTaskForm() {
  view.panel = null;
  $("panel").hidden = false;
  $("panel-title").textContent = "Add or change a task";
  $("panel-body").innerHTML =
    `<form id="task-form" class="task-form">` +
    `<label>id <input name="id" required></label>` +
    `<label>kind <input name="kind" required></label>` +
    `<label>config (JSON) <textarea name="config" rows="4">{}</textarea></label>` +
    `<label>weight <input name="weight" type="number" min="1" value="1"></label>` +
    `<label><input name="paused" type="checkbox"> paused</label>` +
    `<button type="submit">Store task</button></form>` +
    `<div id="panel-message" class="counts"></div>`;
  view.message = null;
  $("task-form").onsubmit = async (e) => {
    e.preventDefault();
    const f = e.target.elements;
    let config;
    try { config = JSON.parse(f.config.value || "null"); } catch (err) {
      say(`the config is not valid JSON: ${err.message}`);
      return;
    }
    const body = JSON.stringify({ kind: f.kind.value.trim(), config,
      weight: Number(f.weight.value) || 1, state: f.paused.checked ? "paused" : "running" });
    const answer = await write("PUT", `/api/tasks/${encodeURIComponent(f.id.value.trim())}`, body);
    say(`put ${f.id.value.trim()}: ${answer.status} ${await answer.text()}`);
  };
}

document.addEventListener("click", (e) => {
  const t = e.target.closest("[data-toggle],[data-panel],[data-restart],[data-act]");
  if (!t) return;
  if (t.dataset.panel) { view.panel = t.dataset.panel; view.message = null; drawPanel(); return; }
  if (t.dataset.restart) { restart(t.dataset.restart); return; }
  if (t.dataset.act) { act(t.dataset.act, t.dataset.task); return; }
  const name = t.dataset.toggle;
  const col = view.snapshot.workers.find((w) => w.name === name);
  const size = col ? col.tasks.length : view.snapshot.unplaced.length;
  view.collapsed.set(name, !(view.collapsed.get(name) ?? size > AUTO_COLLAPSE));
  draw();
});
$("add-task").onclick = openTaskForm;
$("panel-close").onclick = () => { view.panel = null; $("panel").hidden = true; };
$("search").oninput = (e) => { view.search = e.target.value.trim(); draw(); };
$("by-state").onchange = (e) => { view.byState = e.target.checked; draw(); };
$("collapse").onclick = () => { for (const w of view.snapshot.workers) view.collapsed.set(w.name, true); draw(); };
$("expand").onclick = () => { for (const w of view.snapshot.workers) view.collapsed.set(w.name, false); draw(); };

view.snapshot = JSON.parse($("initial").textContent);
draw();
const events = new EventSource("/events");
events.addEventListener("snapshot", (e) => {
  view.snapshot = JSON.parse(e.data);
  // A burst of events costs one drawing.
  if (!view.pending) {
    view.pending = true;
    setTimeout(() => { view.pending = false; draw(); }, 20);
  }
  $("live").textContent = `live · ${new Date().toLocaleTimeString()}`;
  $("live").classList.remove("down");
});
events.onerror = () => { $("live").textContent = "disconnected; retrying…"; $("live").classList.add("down"); };
