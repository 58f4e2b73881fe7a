// The /vehicles map: the cells of the latest windows as hexagons, bunching alerts listed and drawn.
// What is on display comes from /api/vehicles, then live from /ws?view=vehicles; the server applies
// the display policy (same-or-newer window replaces, expiry by event time) and computes each cell's
// corners with h3, so this page only draws. Under the cells: the base layer (base_layer.js).
"use strict";

(() => {
  const HELSINKI = [60.1699, 24.9384];
  const MAX_ALERTS = 50;
  // Colour scales: [low, high] of the value and a function of t in [0, 1].
  const ramp = (stops) => (t) => {
    const x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
    const i = Math.min(stops.length - 2, Math.floor(x));
    const [a, b] = [stops[i], stops[i + 1]];
    const mix = (j) => Math.round(a[j] + (b[j] - a[j]) * (x - i));
    return `rgb(${mix(0)}, ${mix(1)}, ${mix(2)})`;
  };
  const SCALES = {
    vehicles: {
      label: "distinct vehicles",
      value: (c) => c.vehicles,
      range: () => [1, Math.max(2, ...[...state.cells.values()].map((v) => v.result.vehicles))],
      colour: ramp([[254, 240, 138], [251, 146, 60], [220, 38, 38], [126, 34, 206]]),
      format: (x) => x.toFixed(0),
    },
    speed: {
      label: "mean speed km/h",
      value: (c) => (c.mean_speed === null ? null : c.mean_speed * 3.6),
      range: () => [0, 60],
      colour: ramp([[239, 68, 68], [250, 204, 21], [34, 197, 94], [56, 189, 248]]),
      format: (x) => x.toFixed(0),
    },
    delay: {
      label: "mean delay s (negative: late)",
      value: (c) => c.mean_delay,
      range: () => [-300, 300],
      colour: ramp([[220, 38, 38], [251, 146, 60], [226, 232, 240], [56, 189, 248], [37, 99, 235]]),
      format: (x) => x.toFixed(0),
    },
  };

  const state = {
    layout: null,
    map: null,
    cells: new Map(), // key (cell id) → { result, polygon }
    drawn: new Map(), // alert key → { alert, layer }
    listed: new Set(), // alert key@episode_start
    pending: [],
    loaded: false,
    connected: false,
    colourBy: "vehicles",
    fitted: false,
    eventTime: null,
    base: null, // what the base layer drew: { routes, stops, places, labels, tiles }
  };

  const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });
  const fixed = (x, digits) => (x === null || x === undefined ? "–" : x.toFixed(digits));

  function createMap(layout) {
    const map = L.map("map", { zoomControl: true, attributionControl: Boolean(layout.tile_url) });
    map.setView(HELSINKI, 12);
    L.control.scale({ imperial: false }).addTo(map);
    window.statestreamBaseLayer.draw(map, layout).then(
      ({ drawn, bounds }) => {
        state.base = drawn;
        if (!state.fitted) map.fitBounds(bounds, { padding: [20, 20] }); // until cells come
      },
      (error) => { document.getElementById("status").textContent = `no base layer: ${error.message}`; },
    );
    return map;
  }

  // ---- cells -------------------------------------------------------------------------------

  function colourOf(result) {
    const scale = SCALES[state.colourBy];
    const value = scale.value(result);
    if (value === null || value === undefined) return "#64748b";
    const [low, high] = scale.range();
    return scale.colour((value - low) / (high - low || 1));
  }

  function tooltipOf(r) {
    return (
      `<b>${r.cell}</b><br>${clock(r.window_start)}–${clock(r.window_end)}` +
      `${r.final ? " (final)" : " (early)"}<br>${r.vehicles} vehicles, ${r.positions} positions` +
      `<br>speed ${fixed(r.mean_speed === null ? null : r.mean_speed * 3.6, 1)} km/h` +
      ` · delay ${fixed(r.mean_delay, 0)} s`
    );
  }

  function showCell(result) {
    const shown = state.cells.get(result.key);
    if (shown) {
      shown.result = result;
      shown.polygon.setTooltipContent(tooltipOf(result));
    } else {
      const polygon = L.polygon(result.boundary, { className: "cell", weight: 1, fillOpacity: 0.55 });
      polygon.bindTooltip(tooltipOf(result), { sticky: true });
      polygon.addTo(state.map);
      polygon.getElement()?.setAttribute("data-cell", result.key);
      state.cells.set(result.key, { result, polygon });
    }
  }

  function restyle() {
    for (const { result, polygon } of state.cells.values()) {
      const colour = colourOf(result);
      polygon.setStyle({ color: colour, fillColor: colour });
    }
    renderLegend();
    document.getElementById("cell-count").textContent = state.cells.size.toLocaleString("en");
  }

  function renderLegend() {
    const scale = SCALES[state.colourBy];
    const [low, high] = scale.range();
    const steps = [0, 0.25, 0.5, 0.75, 1].map((t) => `${scale.colour(t)} ${t * 100}%`).join(", ");
    const legend = document.getElementById("legend");
    legend.innerHTML = '<span class="label"></span><div class="bar"></div><div class="ends"><span></span><span></span></div>';
    legend.querySelector(".label").textContent = scale.label;
    legend.querySelector(".bar").style.background = `linear-gradient(to right, ${steps})`;
    const ends = legend.querySelectorAll(".ends span");
    ends[0].textContent = scale.format(low);
    ends[1].textContent = scale.format(high);
  }

  function fitOnce() {
    if (state.fitted || state.cells.size === 0) return;
    const bounds = L.latLngBounds([...state.cells.values()].flatMap((c) => c.result.boundary));
    state.map.fitBounds(bounds, { padding: [30, 30], maxZoom: 14 });
    state.fitted = true;
  }

  // ---- bunching alerts ---------------------------------------------------------------------

  function drawAlert(alert) {
    state.drawn.get(alert.key)?.layer.remove();
    if (alert.lat === null || alert.long === null) return;
    const radius = Math.max(20, (alert.distance_m || 0) / 2);
    const layer = L.layerGroup([
      L.circle([alert.lat, alert.long], { radius, color: "#ef4444", weight: 2, fillOpacity: 0.15, className: "bunching" }),
      L.circleMarker([alert.lat, alert.long], { radius: 4, color: "#ef4444", fillOpacity: 1 }),
    ]);
    layer.eachLayer((l) => l.bindTooltip(alertText(alert)));
    layer.addTo(state.map);
    state.drawn.set(alert.key, { alert, layer });
  }

  function alertText(a) {
    const distance = a.distance_m === null ? "" : `, ${a.distance_m.toFixed(0)} m apart`;
    return `route ${a.route}/${a.direction} ${a.mode}: ${a.vehicles.join(" + ")}${distance} at ${clock(a.detected_at)}`;
  }

  function listAlert(alert) {
    const id = `${alert.key}@${alert.episode_start}`;
    if (state.listed.has(id)) return;
    state.listed.add(id);
    const list = document.getElementById("bunching");
    list.querySelector(".none")?.remove();
    const item = document.createElement("li");
    item.className = "bunching-alert";
    item.dataset.detected = alert.detected_at;
    item.innerHTML = '<span class="when"></span> route <b class="route"></b>: <span class="pair"></span> <span class="muted detail"></span>';
    item.querySelector(".when").textContent = clock(alert.detected_at);
    item.querySelector(".route").textContent = `${alert.route}/${alert.direction} ${alert.mode}`;
    item.querySelector(".pair").textContent = alert.vehicles.join(" + ");
    item.querySelector(".detail").textContent =
      alert.distance_m === null ? "" : `${alert.distance_m.toFixed(0)} m, since ${clock(alert.episode_start)}`;
    if (alert.lat !== null && alert.long !== null) {
      item.addEventListener("click", () => state.map.setView([alert.lat, alert.long], 15));
    }
    const later = [...list.children].find((li) => Number(li.dataset.detected) < alert.detected_at);
    list.insertBefore(item, later || null);
    while (list.children.length > MAX_ALERTS) list.lastElementChild.remove();
  }

  // ---- messages ----------------------------------------------------------------------------

  function drop(key) {
    const cell = state.cells.get(key);
    if (cell) {
      cell.polygon.remove();
      state.cells.delete(key);
    }
    const drawn = state.drawn.get(key);
    if (drawn) {
      drawn.layer.remove();
      state.drawn.delete(key);
    }
  }

  function apply(message) {
    for (const result of message.results || []) {
      if (result.kind === "cell") showCell(result);
      else drawAlert(result);
    }
    for (const alert of message.alerts || []) listAlert(alert);
    for (const key of message.expired || []) drop(key);
    if (message.event_time) {
      state.eventTime = message.event_time;
      document.getElementById("event-time").textContent = `event time ${clock(message.event_time)}`;
    }
    restyle();
    fitOnce();
  }

  function connect() {
    window.connectLive("?view=vehicles", state, (message) => {
      if (state.loaded) apply(message);
      else state.pending.push(message);
    });
  }

  async function start() {
    connect();
    const response = await fetch("api/vehicles", { cache: "no-store" });
    if (!response.ok) {
      document.getElementById("status").textContent = `refused: ${response.status}`;
      return;
    }
    const snapshot = await response.json();
    state.layout = snapshot.layout;
    state.map = createMap(snapshot.layout);
    const grace = snapshot.layout.expiry_grace_s;
    document.getElementById("window-note").textContent =
      `windows of ${snapshot.layout.window_s} s, shown until ${snapshot.layout.window_s + grace} s of event time pass without a newer one`;
    for (const alert of [...snapshot.alerts].reverse()) listAlert(alert);
    apply({ results: snapshot.results, event_time: snapshot.event_time });
    state.loaded = true;
    state.pending.splice(0).forEach(apply);
    document.getElementById("colour-by").addEventListener("change", (event) => {
      state.colourBy = event.target.value;
      restyle();
    });
  }

  window.statestreamVehicles = {
    state,
    cellCount: () => state.cells.size,
    baseFeatures: () => state.base,
    drawnAlerts: () => state.drawn.size,
    listedAlerts: () => document.querySelectorAll("#bunching li.bunching-alert").length,
  };
  start();
})();
