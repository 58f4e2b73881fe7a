// The base layer of the /vehicles map: the simulator's Helsinki network (places, routes, stops;
// GeoJSON from api/vehicles/base) under the cells, and map tiles when dashboard.tile_url is set.
// Leaflet draws all of it in the map's one projection (Web Mercator), the same as the hexagons and
// the tiles, so they line up. Without tile_url the page asks no other server for anything.
"use strict";

window.statestreamBaseLayer = (() => {
  const ROUTE_STYLE = {
    tram: { color: "#2dd4bf", weight: 2.5, opacity: 0.55 },
    bus: { color: "#60a5fa", weight: 2, opacity: 0.4 },
  };
  const STOP_STYLE = { radius: 1.8, stroke: false, fillColor: "#cbd5e1", fillOpacity: 0.6 };
  const PLACE_STYLE = { radius: 3.5, color: "#e2e8f0", weight: 1.5, fillColor: "#0b1222", fillOpacity: 1 };
  const LABEL_GAP_PX = 5; // between a place's dot and its name
  const STOPS_FROM_ZOOM = 12; // below it the stops would hide the lines they are on

  // Over the tiles (tilePane, z-index 200) and under the cells (overlayPane, 400); the place names
  // over the cells, where they never take the pointer from a cell (views.css).
  function addPanes(map) {
    map.createPane("base").style.zIndex = 350;
    map.createPane("labels").style.zIndex = 450;
  }

  function tileLayer(layout) {
    if (!layout.tile_url) return null;
    return L.tileLayer(layout.tile_url, { maxZoom: 19, attribution: layout.tile_attribution });
  }

  const ofKind = (network, kind) => network.features.filter((f) => f.properties.kind === kind);

  function routesLayer(network, renderer) {
    return L.geoJSON(ofKind(network, "route"), {
      pane: "base",
      renderer,
      style: (f) => ROUTE_STYLE[f.properties.mode] || ROUTE_STYLE.bus,
      onEachFeature: (f, layer) =>
        layer.bindTooltip(`${f.properties.mode} ${f.properties.desi}: ${f.properties.name}`, { sticky: true }),
    });
  }

  function stopsLayer(network, renderer) {
    return L.geoJSON(ofKind(network, "stop"), {
      pointToLayer: (f, latlng) => L.circleMarker(latlng, { ...STOP_STYLE, pane: "base", renderer }),
      onEachFeature: (f, layer) =>
        layer.bindTooltip(`stop ${f.properties.stop} · ${f.properties.desi}/${f.properties.direction}`),
    });
  }

  function placesLayer(network, renderer) {
    return L.geoJSON(ofKind(network, "place"), {
      pointToLayer: (f, latlng) => L.circleMarker(latlng, { ...PLACE_STYLE, pane: "base", renderer }),
      onEachFeature: (f, layer) =>
        layer.bindTooltip(f.properties.name, {
          permanent: true, direction: "right", offset: [LABEL_GAP_PX, 0], className: "place-label", pane: "labels",
        }),
    });
  }

  // Names that would overlap the name of a place more routes serve are hidden (the features come
  // ranked), so the map stays legible at any zoom. Boxes come from the map's projection and the
  // labels' sizes, not from where the page has them now (mid-zoom they are on their way).
  function declutter(map, places) {
    const kept = [];
    places.eachLayer((layer) => {
      const label = layer.getTooltip()?.getElement();
      if (!label) return;
      const at = map.latLngToContainerPoint(layer.getLatLng());
      const box = { left: at.x, right: at.x + label.offsetWidth + LABEL_GAP_PX, top: at.y - label.offsetHeight / 2 };
      box.bottom = box.top + label.offsetHeight;
      const free = !kept.some((k) => box.left < k.right && k.left < box.right && box.top < k.bottom && k.top < box.bottom);
      label.style.visibility = free ? "" : "hidden";
      if (free) kept.push(box);
    });
    return kept.length;
  }

  // Draw the base layer on `map` with a control to switch its parts; what was drawn, counted (the
  // labels shown kept up to date), and the network's bounds.
  async function draw(map, layout) {
    addPanes(map);
    const overlays = {};
    const tiles = tileLayer(layout);
    if (tiles) overlays["map tiles"] = tiles.addTo(map);
    const response = await fetch("api/vehicles/base");
    if (!response.ok) throw new Error(`base layer refused: ${response.status}`);
    const network = await response.json();
    const renderer = L.canvas({ pane: "base" });
    const routes = routesLayer(network, renderer).addTo(map);
    const stops = stopsLayer(network, renderer).addTo(map);
    const places = placesLayer(network, renderer).addTo(map);
    Object.assign(overlays, { "routes (simulator)": routes, stops, places });
    L.control.layers(null, overlays, { position: "topright" }).addTo(map);
    const drawn = {
      routes: routes.getLayers().length,
      stops: stops.getLayers().length,
      places: places.getLayers().length,
      labels: 0,
      tiles: Boolean(tiles),
    };
    const relabel = () => requestAnimationFrame(() => {
      drawn.labels = declutter(map, places);
      stops.setStyle({ fillOpacity: map.getZoom() >= STOPS_FROM_ZOOM ? STOP_STYLE.fillOpacity : 0 });
    });
    map.on("zoomend overlayadd", relabel);
    relabel();
    return { drawn, bounds: routes.getBounds() };
  }

  return { draw };
})();
