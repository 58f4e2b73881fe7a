// The statestream dashboard page: history from /api/history, then live updates from /ws.
// The server applies the display policy to window results; this page draws what it is sent.
// With ?thing=NAME (the fleet overview's click through) it shows that one machine only.
"use strict";

(() => {
  const PALETTE = ["#38bdf8", "#f472b6", "#a3e635", "#fbbf24", "#c084fc", "#2dd4bf"];
  const MAX_ALERTS = 30;
  // Cards of charts a page can draw live; a bigger fleet is for /fleet, one machine for /?thing=.
  const MAX_CARDS = 24;

  const state = {
    layout: null,
    things: new Map(), // name → { card, charts: Map(chartId → chart), levels, duty, latest }
    results: new Map(), // key → result message on display
    seenAlerts: new Set(),
    pending: [], // live messages that arrived before the history
    historyLoaded: false,
    connected: false, // the websocket is open
    historyPoints: 0,
    livePoints: 0,
    dirty: new Set(),
    notShown: new Set(), // things beyond MAX_CARDS
    latencyChart: null, // made with the first health that reaches the page
  };

  const { clock, seriesChart, levelsChart, dutyChart, latencyChart } = window.statestreamCharts;
  const onlyThing = new URLSearchParams(location.search).get("thing");
  const wanted = (thing) => !onlyThing || thing === onlyThing;
  const percent = (x) => `${(100 * x).toFixed(1)} %`;
  const number = (x) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2));
  const components = []; // every component seen, sorted: a component has one colour everywhere
  const colorOf = (component) => PALETTE[Math.max(0, components.indexOf(component)) % PALETTE.length];

  function registerComponent(component) {
    if (components.includes(component)) return;
    components.push(component);
    components.sort();
    for (const view of state.things.values()) {
      for (const { chart } of view.charts.values()) {
        chart.data.datasets.forEach((d) => (d.borderColor = d.backgroundColor = colorOf(d.component)));
        state.dirty.add(chart);
      }
    }
    for (const thing of state.things.keys()) redrawResults(thing);
  }

  // ---- things -------------------------------------------------------------------------------

  // The card of a thing, made on first use; null beyond MAX_CARDS machines.
  function thingView(name) {
    let view = state.things.get(name);
    if (view) return view;
    if (state.things.size >= MAX_CARDS) {
      state.notShown.add(name);
      const note = document.getElementById("more-things");
      note.hidden = false;
      note.querySelector(".count").textContent = state.notShown.size.toLocaleString("en");
      return null;
    }
    const card = document.getElementById("thing-template").content.firstElementChild.cloneNode(true);
    card.dataset.thing = name;
    card.querySelector(".thing-name").textContent = name;
    // Into the page first: Chart.js measures its canvas when it is created.
    const others = [...document.querySelectorAll("#things > .thing")];
    const after = others.find((c) => c.dataset.thing > name);
    document.getElementById("things").insertBefore(card, after || null);
    document.getElementById("no-things").hidden = true;
    const row = card.querySelector(".series-row");
    view = { card, charts: new Map() };
    for (const spec of state.layout.charts) {
      const panel = document.createElement("figure");
      panel.className = "panel";
      panel.innerHTML = '<figcaption><span class="title"></span><span class="latest muted">–</span></figcaption><div class="plot"><canvas></canvas></div>';
      panel.querySelector(".title").textContent = spec.title;
      const canvas = panel.querySelector("canvas");
      canvas.dataset.thing = name;
      canvas.dataset.chart = spec.id;
      row.appendChild(panel);
      const latest = panel.querySelector(".latest");
      view.charts.set(spec.id, { chart: seriesChart(canvas), latest, latestValues: new Map() });
    }
    const levels = card.querySelector("canvas.levels");
    const duty = card.querySelector("canvas.duty");
    levels.dataset.thing = duty.dataset.thing = name;
    const limitNote = `– – limit ${(100 * state.layout.duty_cycle_limit).toFixed(0)} %`;
    card.querySelector(".limit-note").textContent = limitNote;
    view.levels = levelsChart(levels, state.layout.levels);
    view.duty = dutyChart(duty, state.layout.duty_cycle_limit);
    for (const label of card.querySelectorAll(".window-label, .duty-label")) {
      label.textContent = "no current window";
    }
    state.things.set(name, view);
    return view;
  }

  // A point goes where its event time puts it; a point for a time already shown replaces it.
  function insertPoint(data, x, y) {
    if (data.length === 0 || x > data[data.length - 1].x) {
      data.push({ x, y });
      return;
    }
    let lo = 0;
    let hi = data.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (data[mid].x < x) lo = mid + 1;
      else hi = mid;
    }
    if (lo < data.length && data[lo].x === x) data[lo].y = y;
    else data.splice(lo, 0, { x, y });
  }

  // On the page of one machine the history holds today's series (5-minute means before the
  // recent points): those stay, and the chart keeps chart_points live points beside them.
  function addSeries(message, fromHistory = false) {
    if (!wanted(message.thing)) return 0;
    const view = thingView(message.thing);
    const panel = view && view.charts.get(message.chart);
    if (!panel) return 0;
    const chart = panel.chart;
    let dataset = chart.data.datasets.find((d) => d.label === message.quantity);
    if (!dataset) {
      registerComponent(message.component);
      const color = colorOf(message.component);
      dataset = { label: message.quantity, component: message.component, data: [] };
      Object.assign(dataset, { borderColor: color, backgroundColor: color });
      chart.data.datasets.push(dataset);
      chart.data.datasets.sort((a, b) => a.label.localeCompare(b.label));
    }
    message.t.forEach((t, i) => insertPoint(dataset.data, t, message.v[i]));
    if (fromHistory && onlyThing) dataset.kept = (dataset.kept || 0) + message.t.length;
    const excess = dataset.data.length - state.layout.chart_points - (dataset.kept || 0);
    if (excess > 0) dataset.data.splice(dataset.kept || 0, excess); // the oldest live points
    // The values shown next to the title: each replaced only by one of the same or a newer time.
    const newest = message.t.length - 1;
    const shown = panel.latestValues.get(message.component);
    if (newest >= 0 && (shown === undefined || message.t[newest] >= shown.t)) {
      panel.latestValues.set(message.component, { t: message.t[newest], v: message.v[newest] });
      const values = [...panel.latestValues.entries()].sort(([a], [b]) => a.localeCompare(b));
      panel.latest.textContent = values.map(([c, p]) => `${c} ${number(p.v)}`).join(" · ");
      panel.latest.title = values.map(([c, p]) => `${c} at ${clock(p.t)}`).join(", ");
    }
    state.dirty.add(chart);
    return message.t.length;
  }

  // ---- window results -----------------------------------------------------------------------

  function showResult(result) {
    if (!wanted(result.thing)) return;
    registerComponent(result.component);
    state.results.set(result.key, result);
    redrawResults(result.thing);
  }

  function dropResult(key) {
    const result = state.results.get(key);
    if (!result) return;
    state.results.delete(key);
    redrawResults(result.thing);
  }

  function redrawResults(thing) {
    const view = thingView(thing);
    if (!view) return;
    const mine = [...state.results.values()]
      .filter((r) => r.thing === thing)
      .sort((a, b) => a.component.localeCompare(b.component));
    const levels = mine.filter((r) => r.kind === "levels");
    view.levels.data.datasets = levels.map((r) => ({
      label: r.component,
      data: state.layout.levels.map((l) => r.values[l] || 0),
      backgroundColor: colorOf(r.component),
    }));
    view.card.querySelector(".window-label").textContent = levels.length
      ? `window ${clock(levels[0].window_start)}–${clock(levels[0].window_end)}`
      : "no current window";
    const duty = mine.filter((r) => r.kind === "duty_cycle");
    const limit = state.layout.duty_cycle_limit;
    view.duty.data.labels = duty.map((r) => r.component);
    view.duty.data.datasets[0].data = duty.map((r) => 100 * r.values.duty_cycle);
    view.duty.data.datasets[0].backgroundColor = duty.map((r) =>
      r.values.duty_cycle > limit ? "#ef4444" : "#22c55e",
    );
    view.card.querySelector(".duty-label").textContent = duty.length
      ? duty.map((r) => `${r.component} ${percent(r.values.duty_cycle)}`).join(", ")
      : "no current window";
    view.card.querySelector(".alert-badge").hidden = !mine.some((r) => r.kind === "alert");
    state.dirty.add(view.levels);
    state.dirty.add(view.duty);
  }

  function addAlert(alert) {
    if (!wanted(alert.thing)) return;
    const id = `${alert.key}@${alert.window_start}`;
    if (state.seenAlerts.has(id)) return;
    state.seenAlerts.add(id);
    const view = thingView(alert.thing);
    if (!view) return;
    const list = view.card.querySelector(".alerts");
    list.querySelector(".none")?.remove();
    const item = document.createElement("li");
    const limit = alert.values.limit ?? state.layout.duty_cycle_limit;
    item.innerHTML = '<span class="when"></span> <b class="component"></b> duty cycle <span class="value"></span> &gt; <span class="limit"></span>';
    item.querySelector(".when").textContent = `${clock(alert.window_start)}–${clock(alert.window_end)}`;
    item.querySelector(".component").textContent = alert.component;
    item.querySelector(".value").textContent = percent(alert.values.duty_cycle);
    item.querySelector(".limit").textContent = percent(limit);
    item.dataset.start = alert.window_start;
    const later = [...list.children].find((li) => Number(li.dataset.start) < alert.window_start);
    list.insertBefore(item, later || null);
    while (list.children.length > MAX_ALERTS) list.lastElementChild.remove();
  }

  // ---- health -------------------------------------------------------------------------------

  function cell(row, text, numeric) {
    const td = row.insertCell();
    td.textContent = text;
    if (numeric) td.className = "num";
  }

  const count = (x) => (x === null || x === undefined ? "–" : Number(x).toLocaleString("en"));

  function renderHealth(health) {
    if (!health) return;
    const topics = document.querySelector("#topics tbody");
    topics.replaceChildren();
    for (const t of health.topics || []) {
      const row = topics.insertRow();
      if (!t.assigned) row.className = "missing";
      cell(row, t.topic);
      cell(row, t.assigned ? count(t.records_per_s) : "no such topic yet", true);
      cell(row, count(t.records), true);
      cell(row, count(t.end_offset), true);
      cell(row, count(t.lag), true);
      if (t.role === "late") setCounter("late-count", t.records);
      if (t.role === "dead_letter") setCounter("dead-count", t.records);
    }
    setCounter("pages-count", health.pages, true);
    const queries = document.querySelector("#queries tbody");
    queries.replaceChildren();
    for (const q of health.queries || []) {
      const row = queries.insertRow();
      cell(row, q.query);
      cell(row, q.state);
      cell(row, q.rows_per_s === null ? "–" : count(Math.round(q.rows_per_s)), true);
      cell(row, q.lag ? count(q.lag.total) : "–", true);
      if (q.lag) {
        row.cells[3].title = lagDetail(q.lag);
        row.cells[3].classList.add("has-detail");
      }
    }
    if (!(health.queries || []).length) {
      const row = queries.insertRow();
      row.className = "missing";
      cell(row, "no streaming query is running");
      row.cells[0].colSpan = 4;
    }
    renderLatency(health.latency);
    const notes = [];
    if (health.kafka_error) notes.push(health.kafka_error);
    if (health.dropped_messages) notes.push(`${count(health.dropped_messages)} messages dropped for slow pages`);
    document.getElementById("health-note").textContent = notes.join(" · ");
  }

  // A query's lag per topic and partition, for the tooltip of its total.
  function lagDetail(lag) {
    const partitions = (parts) => Object.entries(parts).map(([p, n]) => `${p}: ${count(n)}`);
    return Object.entries(lag.topics)
      .map(([topic, parts]) => `${topic} partitions ${partitions(parts).join(", ")}`)
      .join("\n");
  }

  // The live histogram of the pairs' end-to-end latency (buckets and counts from the server).
  function renderLatency(latency) {
    if (!latency) return;
    if (!state.latencyChart) state.latencyChart = latencyChart(document.getElementById("latency"));
    const chart = state.latencyChart;
    chart.data.labels = latency.labels;
    chart.data.datasets[0].data = latency.counts;
    state.dirty.add(chart);
    const span = `last ${latency.window_s} s`;
    const label = (bucket) => latency.labels[bucket];
    document.getElementById("latency-note").textContent = latency.count
      ? `${count(latency.count)} pairs, ${span} · median ${label(latency.p50)} · p99 ${label(latency.p99)}`
      : `no pair in the ${span}`;
  }

  function setCounter(id, value, neutral) {
    const element = document.getElementById(id);
    element.textContent = count(value);
    element.parentElement.classList.toggle("bad", !neutral && value > 0);
  }

  // ---- messages -----------------------------------------------------------------------------

  function apply(message) {
    for (const series of message.series || []) state.livePoints += addSeries(series);
    for (const result of message.results || []) showResult(result);
    for (const key of message.expired || []) dropResult(key);
    for (const alert of message.alerts || []) addAlert(alert);
    if (message.health) renderHealth(message.health);
  }

  function applyHistory(history) {
    state.layout = history.layout;
    for (const series of history.series) state.historyPoints += addSeries(series, true);
    for (const alert of history.alerts) addAlert(alert);
    for (const result of history.results) showResult(result);
    renderHealth(history.health);
    const status = document.getElementById("history-status");
    status.textContent = history.error
      ? `history unavailable: ${history.error}`
      : `history: ${state.historyPoints.toLocaleString("en")} points from InfluxDB`;
    state.historyLoaded = true;
    state.pending.splice(0).forEach(apply);
  }

  function connect() {
    window.connectLive(onlyThing ? `?thing=${encodeURIComponent(onlyThing)}` : "", state, (message) => {
      if (state.historyLoaded) apply(message);
      else state.pending.push(message);
    });
  }

  function render() {
    for (const chart of state.dirty) chart.update("none");
    state.dirty.clear();
    requestAnimationFrame(render);
  }

  async function start() {
    if (onlyThing) {
      document.getElementById("only-thing").textContent = `machine ${onlyThing}`;
      document.getElementById("no-things").textContent = `${onlyThing} has not reported yet.`;
    }
    connect();
    const only = onlyThing ? `?thing=${encodeURIComponent(onlyThing)}` : "";
    const response = await fetch(`api/history${only}`, { cache: "no-store" });
    if (!response.ok) {
      document.getElementById("history-status").textContent = `history refused: ${response.status}`;
      return;
    }
    applyHistory(await response.json());
    requestAnimationFrame(render);
  }

  window.statestreamDashboard = {
    state,
    pointCount(thing, chartId) {
      const view = state.things.get(thing);
      const panel = view && view.charts.get(chartId);
      if (!panel) return 0;
      return panel.chart.data.datasets.reduce((n, d) => n + d.data.length, 0);
    },
  };
  start();
})();
