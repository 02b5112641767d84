/**
 * The board's browser script, served as `/board.js`. Plain ES2020 for the browser, kept as text here so
 * that the bundled controller (one file, no assets beside it) serves it too. Everything the server
 * sends is put into the page with `textContent` or SVG attributes, never parsed as HTML, so a task name
 * or an error text cannot inject markup. The page only reads: nothing it does reaches other viewers.
 * The token comes from the page's `?token=`, stays in this tab's sessionStorage (scoped to the board's
 * origin, port included) and rides as `Authorization: Bearer` on the page's own requests; so the event
 * stream is read with fetch, as EventSource cannot send a header (why no cookie: docs/design-notes.md §19).
 */
export const boardScript = `"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";
  const tasks = new Map(); // key -> summary
  const schedules = new Map(); // key -> schedule summary
  let selected = new URLSearchParams(location.hash.slice(1)).get("task") || "";
  let detailTimer = 0;
  const nodes = new Map(); // machine state path -> <g>

  const token = (() => {
    const query = new URLSearchParams(location.search);
    const given = query.get("token");
    if (given === null) return sessionStorage.getItem("opstask-board-token") || "";
    sessionStorage.setItem("opstask-board-token", given);
    // Out of the address bar and the history.
    query.delete("token");
    const rest = query.toString();
    history.replaceState(null, "", location.pathname + (rest === "" ? "" : "?" + rest) + location.hash);
    return given;
  })();
  const request = { headers: { authorization: "Bearer " + token }, credentials: "omit", cache: "no-store" };

  const el = (tag, attrs, text) => {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    if (text !== undefined) node.textContent = text;
    return node;
  };

  const age = (ms) => {
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s < 120) return s + "s";
    const m = Math.floor(s / 60);
    if (m < 180) return m + "m";
    const h = Math.floor(m / 60);
    return h < 48 ? h + "h" : Math.floor(h / 24) + "d";
  };

  const getJson = async (path) => {
    const response = await fetch(path, request);
    if (!response.ok) throw new Error(path + ": HTTP " + response.status);
    return response.json();
  };

  // ---- the machine ------------------------------------------------------------------------------
  const loadMachine = async () => {
    const response = await fetch("/api/machine.svg", request);
    if (!response.ok) throw new Error("machine: HTTP " + response.status);
    const doc = new DOMParser().parseFromString(await response.text(), "image/svg+xml");
    const svg = document.importNode(doc.documentElement, true);
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    $("machine").replaceChildren(svg);
    for (const group of svg.querySelectorAll("g.node")) {
      const title = group.querySelector("title");
      if (title === null) continue;
      const path = title.textContent;
      group.dataset.state = path;
      nodes.set(path, group);
      const box = group.getBBox();
      const badge = document.createElementNS(SVG, "g");
      badge.setAttribute("class", "badge");
      badge.setAttribute("visibility", "hidden");
      const circle = document.createElementNS(SVG, "circle");
      circle.setAttribute("cx", String(box.x + box.width));
      circle.setAttribute("cy", String(box.y));
      circle.setAttribute("r", "12");
      const text = document.createElementNS(SVG, "text");
      text.setAttribute("x", String(box.x + box.width));
      text.setAttribute("y", String(box.y + 4.5));
      text.setAttribute("text-anchor", "middle");
      badge.append(circle, text);
      group.append(badge);
    }
    paintMachine();
  };

  const paintMachine = () => {
    const counts = {};
    for (const task of tasks.values())
      if (!task.released) counts[task.machineState] = (counts[task.machineState] || 0) + 1;
    for (const [path, group] of nodes) {
      const count = counts[path] || 0;
      group.dataset.count = String(count);
      group.classList.toggle("occupied", count > 0);
      const badge = group.querySelector(".badge");
      badge.setAttribute("visibility", count > 0 ? "visible" : "hidden");
      badge.querySelector("text").textContent = String(count);
    }
  };

  const paintPath = (detail) => {
    for (const group of nodes.values()) group.classList.remove("visited", "current");
    if (!detail) return;
    for (const pass of detail.history)
      for (const step of pass.transitions)
        for (const path of [step.from, step.to]) nodes.get(path)?.classList.add("visited");
    nodes.get(detail.released ? "released" : detail.machineState)?.classList.add("current");
  };

  // ---- the list ---------------------------------------------------------------------------------
  const fillSelect = (id, values) => {
    const select = $(id);
    const current = select.value;
    const first = select.options[0];
    select.replaceChildren(first, ...[...values].sort().map((value) => el("option", { value }, value)));
    select.value = values.has(current) ? current : "";
  };

  const renderList = () => {
    const text = $("filter-text").value.trim().toLowerCase();
    const namespace = $("filter-namespace").value;
    const kind = $("filter-kind").value;
    const state = $("filter-state").value;
    const released = $("filter-released").checked;
    const all = [...tasks.values()];
    fillSelect("filter-namespace", new Set(all.map((t) => t.namespace)));
    fillSelect("filter-kind", new Set(all.map((t) => t.kind)));
    fillSelect("filter-state", new Set(all.map((t) => t.state || "(none)")));
    const now = Date.now();
    const shown = all
      .filter((t) => released || !t.released)
      .filter((t) => namespace === "" || t.namespace === namespace)
      .filter((t) => kind === "" || t.kind === kind)
      .filter((t) => state === "" || (t.state || "(none)") === state)
      .filter((t) => text === "" || (t.name + " " + t.lastError).toLowerCase().includes(text))
      .sort((a, b) => b.createdAt - a.createdAt || a.key.localeCompare(b.key));
    const rows = shown.map((t) => {
      const row = el("tr", { "data-key": t.key });
      if (t.released) row.classList.add("released");
      if (t.key === selected) row.classList.add("selected");
      const cells = [
        ["namespace", t.namespace], ["name", t.name], ["kind", t.kind], ["state", t.state],
        ["phase", t.phase], ["age", age(now - t.createdAt)], ["machine", t.machineState], ["lastError", t.lastError],
      ];
      for (const [col, value] of cells) {
        const cell = el("td", { "data-col": col }, value);
        if (col === "state") cell.className = "state-" + value;
        row.append(cell);
      }
      row.tabIndex = 0;
      row.addEventListener("click", () => select(t.key));
      row.addEventListener("keydown", (event) => { if (event.key === "Enter") select(t.key); });
      return row;
    });
    $("tasks").tBodies[0].replaceChildren(...rows);
    $("empty").hidden = rows.length > 0;
    const active = all.filter((t) => !t.released).length;
    $("totals").textContent = active + " task" + (active === 1 ? "" : "s") + " known, " + (all.length - active) + " released";
    paintMachine();
  };

  // ---- the schedules ----------------------------------------------------------------------------
  const renderSchedules = () => {
    const rows = [...schedules.values()]
      .sort((a, b) => a.key.localeCompare(b.key))
      .map((s) => {
        const row = el("tr", { "data-key": s.key });
        const cells = [
          ["namespace", s.namespace], ["name", s.name], ["cron", s.schedule], ["timeZone", s.timeZone],
          ["nextRun", s.suspended ? "(suspended)" : s.nextRunTime], ["suspended", s.suspended ? "yes" : "no"],
          ["active", s.active.join(", ")], ["lastSchedule", s.lastScheduleTime], ["lastSuccess", s.lastSuccessfulTime],
          ["skipped", [s.notReady, ...s.skippedRuns].filter((text) => text !== "").join("; ")],
        ];
        for (const [col, value] of cells) row.append(el("td", { "data-col": col }, value));
        return row;
      });
    $("schedules").tBodies[0].replaceChildren(...rows);
    $("no-schedules").hidden = rows.length > 0;
  };

  // ---- one task ---------------------------------------------------------------------------------
  const select = (key) => {
    selected = key;
    history.replaceState(null, "", "#task=" + encodeURIComponent(key));
    renderList();
    loadDetail();
  };

  const line = (label, text) => el("li", { "data-label": label }, text);

  const renderDetail = (d) => {
    $("detail-panel").hidden = false;
    $("detail-title").textContent = d.namespace + "/" + d.name;
    $("detail-why").textContent = d.why;
    const facts = [
      ["kind", d.kind], [d.groupWord || "group", d.group], ["state", d.state || "(none)"], ["phase", d.phase || "(none)"],
      ["machine", d.machineState], ["uid", d.uid], ["finalizers", d.finalizers.join(", ") || "(none)"],
      ["passes", String(d.passes) + (d.droppedPasses > 0 ? " (" + d.droppedPasses + " oldest not kept)" : "")],
    ];
    $("detail-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
    const flying = d.inFlight;
    const inFlight = flying.calls.length + flying.writes.length + flying.events.length > 0
      ? [{ runId: "in flight", state: d.machineState, at: d.updatedAt, end: "running now", transitions: [], ...flying }]
      : [];
    const passes = [...inFlight, ...[...d.history].reverse()].map((pass) => {
      const item = el("li", { "data-run": pass.runId });
      const head = el("div", { class: "head" }, "pass " + pass.runId + " → " + pass.state + " ");
      head.append(el("span", {}, new Date(pass.at).toLocaleTimeString() + ", " + pass.end));
      const list = el("ul");
      // The machine's path in this pass, eventless steps as plain arrows.
      if (pass.transitions.length > 0)
        list.append(line("path", pass.transitions.map((step, index) =>
          (index === 0 ? step.from : "") + (step.event === "always" ? " → " : " —" + step.event + "→ ") + step.to).join("")));
      for (const call of pass.calls)
        list.append(line("handler", call.phase + ": " + call.outcome + (call.description ? " — " + call.description : "") +
          (call.error ? " [" + call.error + "]" : "") + (call.ms !== undefined ? " (" + call.ms + " ms)" : "")));
      for (const write of pass.writes)
        list.append(line("write", write.write + (write.fields ? " " + write.fields.join(",") : "") + ": " + write.result));
      for (const event of pass.events) list.append(line("event", event.type + " " + event.reason + ": " + event.note));
      item.append(head, list);
      return item;
    });
    $("detail-passes").replaceChildren(...passes);
    paintPath(d);
  };

  const loadDetail = async () => {
    if (selected === "") return;
    const [namespace, ...rest] = selected.split("/");
    try {
      renderDetail(await getJson("/api/tasks/" + encodeURIComponent(namespace) + "/" + encodeURIComponent(rest.join("/"))));
    } catch (error) {
      $("detail-panel").hidden = false;
      $("detail-why").textContent = String(error.message || error);
    }
  };

  const detailSoon = () => {
    clearTimeout(detailTimer);
    detailTimer = setTimeout(loadDetail, 150);
  };

  // ---- live -------------------------------------------------------------------------------------
  const live = (online, text) => {
    $("live").className = online ? "online" : "offline";
    $("live").textContent = text;
  };

  const onEvent = (event, data) => {
    if (event === "snapshot") {
      tasks.clear();
      for (const task of JSON.parse(data)) tasks.set(task.key, task);
      renderList();
      detailSoon();
    } else if (event === "schedules") {
      const update = JSON.parse(data);
      if (update.all) schedules.clear();
      for (const schedule of update.schedules) schedules.set(schedule.key, schedule);
      for (const key of update.removed) schedules.delete(key);
      renderSchedules();
    } else if (event === "tasks") {
      let touched = false;
      for (const task of JSON.parse(data)) {
        tasks.set(task.key, task);
        if (task.key === selected) touched = true;
      }
      renderList();
      if (touched) detailSoon();
    }
  };

  /** One Server-Sent Events frame: its event name and data lines (comments and retry: ignored). */
  const onFrame = (frame) => {
    let event = "message";
    const data = [];
    for (const line of frame.split("\\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
    }
    if (data.length > 0) onEvent(event, data.join("\\n"));
  };

  /** The event stream, read with fetch (for the header), reconnecting 2 s after it ends or fails. */
  const connect = async () => {
    for (;;) {
      try {
        const response = await fetch("/api/events", request);
        if (!response.ok || response.body === null) throw new Error("HTTP " + response.status);
        live(true, "live");
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          for (let end = buffer.indexOf("\\n\\n"); end >= 0; end = buffer.indexOf("\\n\\n")) {
            onFrame(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
          }
        }
      } catch {
        // Shown below; the loop reconnects.
      }
      live(false, "reconnecting…");
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  };

  for (const id of ["filter-text", "filter-namespace", "filter-kind", "filter-state", "filter-released"])
    $(id).addEventListener("input", renderList);
  setInterval(renderList, 5000);
  if (token === "") {
    live(false, "a token is needed: open the URL the controller printed (…/?token=…)");
    return;
  }
  loadMachine().catch((error) => { $("machine").textContent = String(error.message || error); });
  connect();
  if (selected !== "") loadDetail();
})();
`;
