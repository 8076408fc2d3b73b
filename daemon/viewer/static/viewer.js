// memsync viewer: the Fleet page's live updates (server-sent events). The only script the viewer
// serves; its Content-Security-Policy allows no other, and no inline script.
"use strict";
(function () {
  const live = document.getElementById("fleet-live");
  if (!live || !window.EventSource) {
    return;
  }
  const source = new EventSource(live.dataset.events);
  source.addEventListener("fleet", function (event) {
    // Server-rendered HTML from the viewer itself, its every value escaped there.
    live.innerHTML = event.data;
    live.dataset.updated = String(Date.now());
  });
})();
