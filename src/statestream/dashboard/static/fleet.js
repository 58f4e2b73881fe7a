// The fleet overview: every machine's power, duty cycle and alert state, sortable and filterable.
// Rows come from /api/fleet, then the changed ones from /ws?view=fleet (at most once a second).
// Only one page of rows is in the DOM and it is redrawn at most once per animation frame, so the
// page stays usable with thousands of machines.
"use strict";

(() => {
  const PAGE_ROWS = 100;

  const state = {
    layout: null,
    rows: new Map(), // thing → row
    pending: [],
    loaded: false,
    connected: false,
    sortKey: "thing",
    descending: false,
    filter: "",
    alertsOnly: false,
    page: 0,
    dirty: false,
    matches: 0,
  };

  const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });
  const percent = (x) => `${(100 * x).toFixed(1)} %`;

  function compare(a, b) {
    const key = state.sortKey;
    const [x, y] = [a[key], b[key]];
    let order;
    if (x === y) order = 0;
    else if (x === null || x === undefined) return 1; // no value: last, whichever the direction
    else if (y === null || y === undefined) return -1;
    else if (typeof x === "string") order = x.localeCompare(y, "en", { numeric: true });
    else order = x < y ? -1 : 1;
    if (order === 0) order = a.thing.localeCompare(b.thing, "en", { numeric: true });
    return state.descending ? -order : order;
  }

  function matching() {
    const needle = state.filter.trim().toLowerCase();
    const rows = [];
    for (const row of state.rows.values()) {
      if (state.alertsOnly && !row.alert) continue;
      if (needle && !row.thing.toLowerCase().includes(needle)) continue;
      rows.push(row);
    }
    return rows.sort(compare);
  }

  function rowElement(row) {
    const tr = document.createElement("tr");
    tr.dataset.thing = row.thing;
    const link = document.createElement("a");
    link.href = `./?thing=${encodeURIComponent(row.thing)}`;
    link.textContent = row.thing;
    tr.insertCell().appendChild(link);
    const power = tr.insertCell();
    power.className = "num";
    power.textContent = row.power_kw === null ? "–" : row.power_kw.toFixed(2);
    const duty = tr.insertCell();
    duty.className = "num";
    duty.textContent = row.duty_cycle === null ? "–" : `${percent(row.duty_cycle)} ${row.duty_component}`;
    if (row.duty_cycle !== null && row.duty_cycle > state.layout.duty_cycle_limit) duty.className += " over";
    const alert = tr.insertCell();
    alert.textContent = row.alert ? `alert ${row.alert_components.join(", ")}` : "ok";
    if (row.alert) alert.className = "alert-on";
    const seen = tr.insertCell();
    seen.className = "num";
    seen.textContent = row.power_time === null ? "–" : clock(row.power_time);
    return tr;
  }

  function render() {
    if (state.dirty) {
      state.dirty = false;
      const rows = matching();
      state.matches = rows.length;
      const pages = Math.max(1, Math.ceil(rows.length / PAGE_ROWS));
      state.page = Math.min(state.page, pages - 1);
      const shown = rows.slice(state.page * PAGE_ROWS, (state.page + 1) * PAGE_ROWS);
      document.querySelector("#fleet tbody").replaceChildren(...shown.map(rowElement));
      let alerts = 0;
      for (const row of state.rows.values()) alerts += row.alert ? 1 : 0;
      document.getElementById("match-count").textContent = rows.length.toLocaleString("en");
      document.getElementById("machine-count").textContent = state.rows.size.toLocaleString("en");
      document.getElementById("alert-count").textContent = alerts.toLocaleString("en");
      document.getElementById("page-note").textContent = `page ${state.page + 1} of ${pages}`;
    }
    requestAnimationFrame(render);
  }

  function changed() {
    state.dirty = true;
  }

  function apply(message) {
    for (const row of message.rows || []) state.rows.set(row.thing, row);
    changed();
  }

  function bindControls() {
    document.getElementById("filter").addEventListener("input", (event) => {
      state.filter = event.target.value;
      state.page = 0;
      changed();
    });
    document.getElementById("alerts-only").addEventListener("change", (event) => {
      state.alertsOnly = event.target.checked;
      state.page = 0;
      changed();
    });
    for (const th of document.querySelectorAll("#fleet th[data-sort]")) {
      th.addEventListener("click", () => {
        const key = th.dataset.sort;
        // The first click on a figure puts the largest first; on a name, A first.
        state.descending = state.sortKey === key ? !state.descending : key !== "thing";
        state.sortKey = key;
        for (const other of document.querySelectorAll("#fleet th[data-sort]")) other.removeAttribute("aria-sort");
        th.setAttribute("aria-sort", state.descending ? "descending" : "ascending");
        changed();
      });
    }
    document.getElementById("previous").addEventListener("click", () => {
      state.page = Math.max(0, state.page - 1);
      changed();
    });
    document.getElementById("next").addEventListener("click", () => {
      state.page += 1;
      changed();
    });
    document.querySelector("#fleet tbody").addEventListener("click", (event) => {
      const tr = event.target.closest("tr");
      if (tr && event.target.tagName !== "A") location.href = `./?thing=${encodeURIComponent(tr.dataset.thing)}`;
    });
  }

  function connect() {
    window.connectLive("?view=fleet", state, (message) => {
      if (state.loaded) apply(message);
      else state.pending.push(message);
    });
  }

  async function start() {
    connect();
    bindControls();
    const response = await fetch("api/fleet", { cache: "no-store" });
    if (!response.ok) {
      document.getElementById("page-note").textContent = `refused: ${response.status}`;
      return;
    }
    const snapshot = await response.json();
    state.layout = snapshot.layout;
    apply(snapshot);
    state.loaded = true;
    state.pending.splice(0).forEach(apply);
    requestAnimationFrame(render);
  }

  window.statestreamFleet = {
    state,
    machineCount: () => state.rows.size,
    matchCount: () => state.matches,
    renderedRows: () => document.querySelectorAll("#fleet tbody tr").length,
  };
  start();
})();
