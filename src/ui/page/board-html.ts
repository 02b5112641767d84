/**
 * The board's page and its style sheet. Served by the controller itself (no CDN, no web fonts): the
 * page loads only `/board.css`, `/board.js` and the JSON endpoints of the same origin, which the
 * Content-Security-Policy enforces.
 */

export const boardHtml = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="referrer" content="no-referrer">
  <title>opstask task board</title>
  <link rel="stylesheet" href="/board.css">
  <script src="/board.js" defer></script>
</head>
<body>
  <header>
    <h1>opstask <span>task board</span></h1>
    <div id="totals" data-test="totals"></div>
    <div id="live" class="offline" data-test="live">connecting…</div>
  </header>
  <main>
    <section id="machine-panel">
      <h2>Lifecycle machine <small>tasks per state, live</small></h2>
      <div id="machine" data-test="machine">loading the machine…</div>
    </section>
    <section id="tasks-panel">
      <h2>Tasks</h2>
      <form id="filters" autocomplete="off">
        <input id="filter-text" type="search" placeholder="name or error contains…" aria-label="search">
        <select id="filter-namespace" aria-label="namespace"><option value="">all namespaces</option></select>
        <select id="filter-kind" aria-label="kind"><option value="">all kinds</option></select>
        <select id="filter-state" aria-label="state"><option value="">all states</option></select>
        <label><input id="filter-released" type="checkbox"> show released</label>
      </form>
      <table id="tasks" data-test="tasks">
        <thead><tr><th>Namespace</th><th>Name</th><th>Kind</th><th>State</th><th>Phase</th><th>Age</th><th>Machine</th><th>Last error</th></tr></thead>
        <tbody></tbody>
      </table>
      <p id="empty" hidden>No task matches.</p>
    </section>
    <section id="schedules-panel">
      <h2>Schedules <small>TaskSchedules of the watched namespaces</small></h2>
      <table id="schedules" data-test="schedules">
        <thead><tr><th>Namespace</th><th>Name</th><th>Cron</th><th>Time zone</th><th>Next run</th><th>Suspended</th><th>Active</th><th>Last schedule</th><th>Last success</th><th>Skipped or not ready</th></tr></thead>
        <tbody></tbody>
      </table>
      <p id="no-schedules">No schedule.</p>
    </section>
    <section id="detail-panel" hidden data-test="detail">
      <h2 id="detail-title"></h2>
      <p id="detail-why" data-test="why"></p>
      <dl id="detail-facts"></dl>
      <h3>Passes <small>newest first</small></h3>
      <ol id="detail-passes" reversed data-test="passes"></ol>
    </section>
  </main>
</body>
</html>
`;

export const boardCss = `
:root { --bg: #f6f7f9; --panel: #fff; --ink: #1d2330; --muted: #687085; --line: #d9dde5;
  --ok: #1f8a4c; --bad: #c0392b; --warn: #b7791f; --run: #2563eb; --idle: #687085; }
* { box-sizing: border-box; }
body { margin: 0; font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
header { display: flex; align-items: center; gap: 16px; padding: 8px 16px; background: #1d2330; color: #fff; }
header h1 { font-size: 16px; margin: 0; } header h1 span { font-weight: 400; color: #aab3c5; }
#totals { flex: 1; color: #cfd6e4; }
#live { padding: 2px 8px; border-radius: 10px; font-size: 12px; }
#live.online { background: var(--ok); } #live.offline { background: var(--bad); }
main { display: grid; grid-template-columns: minmax(320px, 35%) minmax(0, 1fr); grid-template-rows: auto auto; gap: 12px; padding: 12px; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; min-width: 0; }
#machine-panel { grid-row: 1 / span 3; overflow: auto; max-height: calc(100vh - 70px); }
h2 { font-size: 14px; margin: 0 0 8px; } h2 small, h3 small { color: var(--muted); font-weight: 400; }
h3 { font-size: 13px; margin: 12px 0 4px; }
#machine svg { width: 100%; height: auto; }
#machine g.node.occupied path, #machine g.node.occupied polygon, #machine g.node.occupied ellipse { fill: #dbe7ff; stroke: var(--run); stroke-width: 2; }
#machine g.node.visited path, #machine g.node.visited polygon { stroke: var(--warn); stroke-width: 2.5; }
#machine g.node.current path, #machine g.node.current polygon { stroke: var(--bad); stroke-width: 3.5; }
#machine .badge circle { fill: var(--run); } #machine .badge text { fill: #fff; font: bold 13px sans-serif; }
#filters { display: flex; flex-wrap: wrap; gap: 6px; margin-bottom: 8px; }
#filters input[type=search] { flex: 1; min-width: 160px; }
input, select { font: inherit; padding: 3px 6px; border: 1px solid var(--line); border-radius: 4px; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 4px 6px; border-bottom: 1px solid var(--line); white-space: nowrap; }
td[data-col=lastError] { white-space: normal; overflow-wrap: break-word; color: var(--bad); min-width: 160px; max-width: 300px; }
#tasks-panel, #schedules-panel { overflow-x: auto; }
#schedules tbody tr { cursor: default; }
td[data-col=timeZone] { white-space: normal; overflow-wrap: break-word; max-width: 200px; }
td[data-col=skipped] { white-space: normal; overflow-wrap: break-word; color: var(--warn); min-width: 160px; max-width: 300px; }
tbody tr { cursor: pointer; } tbody tr:hover { background: #f0f4ff; } tbody tr.selected { background: #dbe7ff; }
tr.released td { color: var(--muted); text-decoration: line-through; }
.state-Succeeded { color: var(--ok); font-weight: 600; } .state-Failed, .state-Rejected { color: var(--bad); font-weight: 600; }
.state-InProgress { color: var(--run); font-weight: 600; } .state-Pending { color: var(--warn); font-weight: 600; }
#detail-panel { grid-column: 2; }
#detail-why { font-size: 14px; padding: 6px 8px; background: #fff8e6; border-left: 3px solid var(--warn); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 6px 0; }
dt { color: var(--muted); } dd { margin: 0; }
#detail-passes { padding-left: 24px; margin: 0; }
#detail-passes li { margin-bottom: 8px; }
#detail-passes .head { font-weight: 600; } #detail-passes .head span { color: var(--muted); font-weight: 400; }
#detail-passes ul { margin: 2px 0; padding-left: 16px; list-style: none; }
#detail-passes li li::before { content: attr(data-label); display: inline-block; min-width: 64px; color: var(--muted); }
code { font: 12px ui-monospace, Menlo, Consolas, monospace; }
`;
