// The dashboards' live feed: a WebSocket to ws<query> beside the page, its state in the
// #connection pill ("live" / "reconnecting…"), each message parsed and handed to `receive`, and
// a new connection 2 s after one closes. Shared by index.html, fleet.html and vehicles.html.
"use strict";

window.connectLive = function connectLive(query, state, receive) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const base = location.pathname.replace(/[^/]*$/, "");
  const socket = new WebSocket(`${scheme}://${location.host}${base}ws${query}`);
  const pill = document.getElementById("connection");
  socket.onopen = () => {
    state.connected = true;
    pill.textContent = "live";
    pill.className = "pill pill-on";
  };
  socket.onmessage = (event) => receive(JSON.parse(event.data));
  socket.onclose = () => {
    state.connected = false;
    pill.textContent = "reconnecting…";
    pill.className = "pill pill-off";
    setTimeout(() => connectLive(query, state, receive), 2000);
  };
};
