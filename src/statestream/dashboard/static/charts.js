// Chart.js charts of the statestream dashboard: series over event time, power levels, duty cycle,
// the latency histogram.
// Loaded before dashboard.js, which uses window.statestreamCharts.
"use strict";

(() => {
  const GRID = "rgba(148, 163, 184, 0.15)";
  const HOUR = 3600e3;

  Chart.defaults.color = "#94a3b8";
  Chart.defaults.font.family = getComputedStyle(document.documentElement).fontFamily;

  const pad = (n) => String(n).padStart(2, "0");
  const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });

  // Ticks of an event-time axis: with the date once the axis spans more than a day.
  function timeTick(value) {
    const d = new Date(value);
    const span = this.max - this.min;
    const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
    if (span > 36 * HOUR) return `${d.getMonth() + 1}/${d.getDate()} ${hm}`;
    return span > 0.5 * HOUR ? hm : `${hm}:${pad(d.getSeconds())}`;
  }

  function seriesChart(canvas) {
    return new Chart(canvas, {
      type: "line",
      data: { datasets: [] },
      options: {
        animation: false,
        parsing: false,
        normalized: true,
        responsive: true,
        maintainAspectRatio: false,
        elements: { point: { radius: 0 }, line: { borderWidth: 1.5, tension: 0 } },
        scales: {
          x: { type: "linear", grid: { color: GRID }, ticks: { maxTicksLimit: 5, callback: timeTick } },
          y: { grid: { color: GRID }, ticks: { maxTicksLimit: 5 } },
        },
        plugins: {
          legend: { labels: { boxWidth: 10, boxHeight: 2 } },
          tooltip: { callbacks: { title: (items) => new Date(items[0].parsed.x).toLocaleString() } },
        },
      },
    });
  }

  function levelsChart(canvas, levels) {
    return new Chart(canvas, {
      type: "bar",
      data: { labels: levels.map((l) => `${l} %`), datasets: [] },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: { grid: { color: GRID }, title: { display: true, text: "share of rated power" } },
          y: { grid: { color: GRID }, beginAtZero: true, title: { display: true, text: "seconds" } },
        },
        plugins: { legend: { labels: { boxWidth: 10 } } },
      },
    });
  }

  // Horizontal bars, one per component, 0–100 %, with a dashed line at the limit.
  function dutyChart(canvas, limitFraction) {
    const limit = 100 * limitFraction;
    return new Chart(canvas, {
      type: "bar",
      data: {
        labels: [],
        datasets: [{ label: "duty cycle %", data: [], backgroundColor: [], maxBarThickness: 26 }],
      },
      options: {
        indexAxis: "y",
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: {
            min: 0,
            max: 100,
            grid: { color: GRID },
            ticks: { stepSize: 20, maxRotation: 0, callback: (v) => `${v} %` },
          },
          y: { grid: { color: GRID } },
        },
        plugins: {
          legend: { display: false },
          annotation: {
            annotations: {
              limit: {
                type: "line",
                xMin: limit,
                xMax: limit,
                borderColor: "#ef4444",
                borderWidth: 2,
                borderDash: [6, 4],
              },
            },
          },
        },
      },
    });
  }

  // A histogram: one bar per latency bucket (labels from the server), counts over its window.
  function latencyChart(canvas) {
    return new Chart(canvas, {
      type: "bar",
      data: { labels: [], datasets: [{ label: "pairs", data: [], backgroundColor: "#38bdf8" }] },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: { grid: { color: GRID }, ticks: { maxRotation: 0, autoSkip: true } },
          y: { grid: { color: GRID }, beginAtZero: true, ticks: { precision: 0, maxTicksLimit: 4 } },
        },
        plugins: { legend: { display: false } },
      },
    });
  }

  window.statestreamCharts = { clock, seriesChart, levelsChart, dutyChart, latencyChart };
})();
