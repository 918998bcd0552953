/// The stylesheet and the script, served from /assets/ (the Content-Security-Policy
/// allows scripts and styles from this origin only: no inline script, no CDN).
enum Assets {
    static let css = """
        :root { --fg: #1d2330; --muted: #667085; --line: #d0d5dd; --ok: #12805c; --bad: #c4320a; --bg: #f8f9fb; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
        header { display: flex; gap: 1em; align-items: center; padding: .6em 1.2em; background: #1d2330; color: #fff; flex-wrap: wrap; }
        header nav a { color: #cfd6e4; margin-right: .9em; text-decoration: none; }
        header nav a[aria-current] { color: #fff; border-bottom: 2px solid #7aa2ff; }
        main { padding: 1em 1.4em; max-width: 1400px; }
        h1 { font-size: 1.5em; margin: .2em 0 .5em; } h2 { font-size: 1.1em; margin: 1.2em 0 .4em; }
        table { border-collapse: collapse; background: #fff; width: 100%; margin-bottom: .6em; }
        th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid var(--line); vertical-align: top; word-break: break-all; }
        th { font-weight: 600; color: var(--muted); }
        .facts th { width: 12em; }
        .muted { color: var(--muted); } .error { color: var(--bad); } .notice { background: #e8f5ee; padding: .5em .8em; border-left: 4px solid var(--ok); }
        .badge { background: #c4320a; padding: .1em .5em; border-radius: 3px; font-size: .85em; }
        .cards { display: flex; gap: 1em; flex-wrap: wrap; } .card { background: #fff; border: 1px solid var(--line); padding: .4em 1em; min-width: 12em; }
        .big { font-size: 1.8em; margin: 0; }
        .columns { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 1em; }
        .chart { width: 100%; height: 140px; background: #fff; border: 1px solid var(--line); }
        .chart path { fill: none; stroke-width: 2; vector-effect: non-scaling-stroke; }
        .chart .ok, .legend .ok { stroke: var(--ok); color: var(--ok); } .chart .failed, .legend .failed { stroke: var(--bad); color: var(--bad); }
        .legend { font-weight: normal; font-size: .85em; margin-left: 1em; }
        form.inline { display: inline-block; margin: 0 .3em .3em 0; } .filters { margin-bottom: .8em; } .filters label { margin-right: .6em; }
        button { padding: .25em .8em; cursor: pointer; } button[disabled] { cursor: not-allowed; opacity: .5; }
        pre { background: #fff; border: 1px solid var(--line); padding: .6em; white-space: pre-wrap; word-break: break-all; }
        .timeline li { margin-bottom: .4em; } .state-open { color: var(--bad); font-weight: 600; } .state-half_open { color: #b54708; }
        """

    /// Polls the JSON endpoint named by `data-poll` every 2 s and updates the overview in
    /// place. Only textContent and attributes are set, so no value can become markup.
    static let js = """
        "use strict";
        (function () {
          const status = document.getElementById("live-status");
          if (!status) return;
          const url = status.getAttribute("data-poll");
          function text(id, value) { const el = document.getElementById(id); if (el) el.textContent = value; }
          function count(c) { return (c.capped ? "more than " : "") + c.value.toLocaleString("en-US"); }
          function rows(id, items) {
            const body = document.getElementById(id); if (!body) return;
            body.replaceChildren(...items.map(cells => {
              const tr = document.createElement("tr");
              for (const cell of cells) { const td = document.createElement("td"); td.textContent = cell; tr.appendChild(td); }
              return tr;
            }));
          }
          async function poll() {
            try {
              const response = await fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } });
              if (!response.ok) throw new Error("HTTP " + response.status);
              const s = await response.json();
              text("taken-at", s.taken_at);
              text("live-workers", String(s.live_workers));
              text("held", count(s.held));
              text("open-breakers", String(s.open_breakers.length));
              rows("depth-rows", s.queues.map(q => [q.queue, count(q.available), String(q.running)]));
              rows("class-rows", Object.entries(s.attempts_by_class).sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, v.toLocaleString("en-US")]));
              rows("reason-rows", Object.entries(s.dead_letters).filter(([, c]) => c.value > 0).sort().map(([k, c]) => [k, count(c)]));
              rows("breaker-rows", s.open_breakers.map(b => [b.destination, b.state, Math.round(b.seconds) + "s"]));
              const ok = document.getElementById("chart-ok"), failed = document.getElementById("chart-failed");
              if (ok && s.chart) { ok.setAttribute("d", s.chart.succeeded); failed.setAttribute("d", s.chart.failed); }
              status.classList.remove("error");
            } catch (e) {
              status.classList.add("error");
            }
            setTimeout(poll, 2000);
          }
          setTimeout(poll, 2000);
        })();
        """
}
